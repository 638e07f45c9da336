"""``detect`` steps: the controller notices that a broker is gone, as a session expiry makes it.

Of a broker that is down, the harness makes the controller act now (ZooKeeper mode: it
deletes the registration, what the expiry of its session does; KRaft: it stops keeping the
session and sends ``BrokerHeartbeat(WantFence)``) and waits until the controller's decision
is in the metadata and the leader has taken it up. Of a running
broker cut from its session keeper (``partition`` from ``zookeeper``): ZooKeeper mode lets
its session really expire (the run gives it a short ``zookeeper.session.timeout.ms``);
KRaft stops keeping its session and sends ``BrokerHeartbeat(WantFence)`` for it. A running
broker that is not cut keeps its session: the step cannot happen (StepPrevented).
``hold: [C]`` first cuts C from the controller (held.py).
"""

from __future__ import annotations

import time

from harness.generator.playbook.dispatch import plays
from harness.generator.playbook.fences import StepPrevented
from harness.generator.playbook.held import HeldSteps
from reference_model.events import Event


class DetectSteps(HeldSteps):
    """``detect`` of a dead broker, or of a running one cut from its session keeper."""

    @plays("detect")
    def do_detect(self, k: int, ev: Event, name: str) -> str:
        note = self.hold_from_controller(self.names[i] for i in sorted(ev.hold)) if ev.hold else ""
        if name not in self.down:
            running = self.detect_running(k, ev, name)
            if running is None:
                raise StepPrevented(
                    f"step {k}: detect {name}: a live broker's session does not expire"
                )
            return "; ".join(n for n in (note, running) if n)
        # Before the fence: a sync later in this step follows the model state from before it,
        # where the broker is live, and must not give it back to the session keeper (seen
        # in CI on 4.0.1 and 4.0.0-elr: the keeper, reading an image from before the
        # fence, heartbeat for the dead broker and the controller unfenced it 60 ms after
        # its WantFence; the liveness check said "A still live to the controller").
        self.detected_in_step.add(name)
        self.cluster.declare_dead(name)
        self._await_controller(name)
        return note

    def detect_running(self, k: int, ev: Event, name: str) -> str | None:
        """``detect A`` of a broker that runs but is cut from its session keeper; None if
        A is not cut (the caller's rule applies)."""
        if name not in self.cut_from_sessions():
            return None
        t0 = time.perf_counter()

        def stop_keeping() -> None:
            self.expiring.add(name)
            self._sync_sessions()

        how = self.cluster.mode.end_cut_session(self.cluster, name, stop_keeping)
        self._await_controller(name)
        hub = self.cluster.mode.hub_name
        took = time.perf_counter() - t0
        return f"realised: {name} cut from {hub}; {how}; controller acted after {took:.1f} s"
