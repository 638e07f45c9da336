"""Network steps realised on real brokers: partitions, ISR shrink, held-back LeaderAndIsr.

The scenario says *what* happens (``isr_shrink B``, ``detect: {broker: A, hold: [C]}``,
``produce: {to: A}``, ``partition: {from: A, to: [B, controller]}``); the playbook's step
families (harness.generator.playbook: ``cuts``, ``partition``, ``held``, ``isr``,
``produce``, ``detect``) say *how* the harness makes it happen on one version and backend,
and write that down in the step's notes as ``realised: <how>`` (ISSUE9 "two ways to write
a fault"). This module decides, before the cluster starts, what those steps need from the
run (:func:`needs`, :func:`configure`, :func:`network_unavailable`):

- ``partition``/``heal``: one iptables DROP per directed link (harness.db.runtime.netns).
  ``controller`` is the controller broker in ZooKeeper mode and every controller of the
  quorum in KRaft; ``zookeeper`` is ZooKeeper (KRaft: the quorum again, which holds the
  sessions); ``client`` is the harness's own clients.
- ``isr_shrink F``: F is cut from the leader (and left running, so its session lives) until
  the controller's ISR lost F. That needs a short ``replica.lag.time.max.ms`` for the run
  (the default is 600 s because followers are paused between their fetch steps). Other
  paused followers the model keeps in the ISR would fall out too on versions where a
  caught-up follower goes stale by time alone (before KAFKA-7152, 2.1.0:
  ``Replica.lastCaughtUpTimeMs``); those whose fetch would change nothing run meanwhile, and
  any other follower that drops anyway is named in the step's notes.
- held-back LeaderAndIsr (``detect: {hold: [C]}``, ``leader_and_isr C``): the controller is
  cut from C before it acts (ZooKeeper: the controller broker's channel; C keeps its
  ZooKeeper session; KRaft: C from every controller, with the harness's session keeper
  heartbeating for C so it is not fenced), healed at ``leader_and_isr C``.
- ``produce: {to: X}``: a producer bootstrapped from X alone while the harness's clients are
  cut from every other broker, so it can only ever talk to X, whatever X's metadata says.
- ``detect A`` of a running broker cut from ZooKeeper (ZooKeeper mode): its session really
  expires (the run gives such brokers a short ``zookeeper.session.timeout.ms``); KRaft: the
  harness stops keeping A's session and sends ``BrokerHeartbeat(WantFence)`` for it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from harness.db import Cluster
from harness.db.runtime.linkcuts import network_available
from reference_model.events import ZOOKEEPER_NODE
from reference_model.kinds import kinds_where
from reference_model.scenario import Scenario

if TYPE_CHECKING:
    from reference_model.run import RunResult

SHORT_LAG_MS = 6000
"""``replica.lag.time.max.ms`` of runs with ``isr_shrink`` steps: the leader's ISR-expiry
task runs every half of it, so a cut follower is out within 1.5x."""
ELECTED_LAG_MS = 20_000
"""``replica.lag.time.max.ms`` of a leader elected during the run before its ``isr_shrink``.

Its election resets every ISR follower's ``lastCaughtUpTimeMs`` to the election time, and a
follower the script keeps silent (held back from the controller, so it still follows the
old leader; or paused) never fetches from it: with :data:`SHORT_LAG_MS` it would fall out
of the ISR a few steps after the election (a restart and the HW readings take longer than
6 s), long before the scripted shrink (kip320-zombie-follower lost C at step 12 of 14). The
shrink step then waits up to 1.5x this."""
SHORT_SESSION_MS = 6000
"""``zookeeper.session.timeout.ms`` of brokers a scenario cuts from ZooKeeper while running."""
SOCKET_TIMEOUT_MS = 5000
"""``replica.socket.timeout.ms`` / ``controller.socket.timeout.ms`` of network runs: after a
heal, a fetcher or controller channel waiting on a dropped request reconnects within this."""
PRODUCE_TIMEOUT_MS = 60_000
"""The playbook producer's timeouts in runs with ``isr_shrink``: an acks=all write that only
an ISR shrink completes must outlive the lag (up to 1.5x :data:`ELECTED_LAG_MS` after the
election, plus the steps between)."""

NETWORK_KINDS = kinds_where(needs_network=True)
"""Step kinds played with iptables cuts (``StepKind.needs_network``): partition, heal,
isr_shrink (the follower is cut from its leader), leader_and_isr (held back by a cut)."""


@dataclass(frozen=True)
class NetworkNeeds:
    """What a scenario needs from the run network, decided before the cluster starts."""

    why: tuple[str, ...] = ()  # the steps that need cuts ("" when none)
    short_lag: bool = False
    # brokers given the short replica.lag.time.max.ms: the leaders (model) at isr_shrink
    # steps; a shorter lag elsewhere would let paused followers go stale behind the script
    lag_on: frozenset[str] = frozenset()
    # of those, the leaders elected during the run before the shrink: ELECTED_LAG_MS
    elected_lag_on: frozenset[str] = frozenset()
    short_session: frozenset[str] = frozenset()  # ZooKeeper mode: brokers cut from ZooKeeper

    @property
    def network(self) -> bool:
        return bool(self.why)


def needs(scenario: Scenario, prediction: RunResult | None = None) -> NetworkNeeds:
    """Which steps of ``scenario`` need a cut link, and the settings those cuts need.

    ``prediction`` (the model's run) names the leader at each ``isr_shrink``: only that
    broker's ``replica.lag.time.max.ms`` is shortened (the leader's setting is the one that
    shrinks); without it every broker's is.
    """
    why: list[str] = []
    short_lag = False
    lag_on: set[str] = set()
    elected: set[str] = set()
    session: set[str] = set()
    names = scenario.brokers
    for k, ev in enumerate(scenario.steps, start=1):
        if ev.kind == "isr_shrink":
            lead = -1
            if prediction is not None and k - 1 < len(prediction.steps):
                lead = prediction.steps[k - 1].state.controller.leader
            lag_on |= {names[lead]} if 0 <= lead < len(names) else set(names)
            if prediction and 0 <= lead < len(names) and _elected_during_run(prediction, k - 1):
                elected.add(names[lead])
        needed = (
            ev.kind in NETWORK_KINDS
            or bool(ev.hold)  # detect/elect/restart with hold: the controller link is cut
            or (ev.kind == "produce" and ev.replica >= 0)
        )
        if needed:
            why.append(f"step {k} {ev.describe(names)}")
        short_lag = short_lag or ev.kind == "isr_shrink"
        if ev.kind == "partition":
            for a, b in ev.links:
                if ZOOKEEPER_NODE in (a, b):
                    other = b if a == ZOOKEEPER_NODE else a
                    if other >= 0:
                        session.add(names[other])
    return NetworkNeeds(
        why=tuple(why),
        short_lag=short_lag,
        lag_on=frozenset(lag_on),
        elected_lag_on=frozenset(elected),
        short_session=frozenset(session),
    )


def _elected_during_run(prediction: RunResult, k: int) -> bool:
    """Whether the leader of the model's state after step ``k`` took up its leadership
    during the run (a leader change at a step <= ``k``), rather than leading from the start.

    Such a leader reset its followers' ``lastCaughtUpTimeMs`` at its election
    (``Partition.makeLeader``); the ones the script keeps silent go stale from then on.
    """
    lead = prediction.steps[k].state.controller.leader
    return any(prediction.steps[j].state.controller.leader != lead for j in range(k))


def configure(cluster: Cluster, want: NetworkNeeds) -> list[str]:
    """Broker settings the scenario's network steps need; call before ``cluster.start()``.

    Returns one line per setting, for the run's progress output.
    """
    if not want.network:
        return []
    said: list[str] = []
    for name, spec in cluster.brokers.items():
        spec.props["replica.socket.timeout.ms"] = str(SOCKET_TIMEOUT_MS)
        spec.props["controller.socket.timeout.ms"] = str(SOCKET_TIMEOUT_MS)
        if name in want.lag_on:
            lag = ELECTED_LAG_MS if name in want.elected_lag_on else SHORT_LAG_MS
            spec.props["replica.lag.time.max.ms"] = str(lag)
        if name in want.short_session:
            spec.props.update(cluster.mode.short_session_props(SHORT_SESSION_MS))
    if want.short_lag:
        who = ",".join(sorted(want.lag_on))
        said.append(f"replica.lag.time.max.ms={SHORT_LAG_MS} on {who} (leader at isr_shrink)")
        if want.elected_lag_on:
            who = ",".join(sorted(want.elected_lag_on))
            said[-1] += f"; {ELECTED_LAG_MS} on {who} (elected during the run)"
    short = cluster.mode.short_session_props(SHORT_SESSION_MS)
    if short and want.short_session:
        who = ",".join(sorted(want.short_session))
        props = ", ".join(f"{k}={v}" for k, v in short.items())
        said.append(f"{props} for {who} (cut from {cluster.mode.hub_name})")
    return said


def network_unavailable(cluster: Cluster, want: NetworkNeeds) -> str | None:
    """One line saying why a started cluster cannot realise the scenario's cuts, else None."""
    if not want.network or cluster.network is not None:
        return None

    reason = network_available() or "this backend has no partition capability here"
    return f"needs network partitions ({'; '.join(want.why[:2])}): {reason}"
