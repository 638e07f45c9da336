"""Network steps realised on real brokers: partitions, ISR shrink, held-back LeaderAndIsr.

The scenario says *what* happens (``isr_shrink B``, ``detect: {broker: A, hold: [C]}``,
``produce: {to: A}``, ``partition: {from: A, to: [B, controller]}``); this module says *how*
the harness makes it happen on one version and backend, and writes that down in the step's
notes as ``realised: <how>`` (ISSUE9 "two ways to write a fault"):

- ``partition``/``heal``: one iptables DROP per directed link (harness.nemesis.network).
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

import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from harness.db import CONTROLLER, Cluster
from harness.nemesis.network import CLIENT
from reference_model.events import CLIENT_NODE, CONTROLLER_NODE, ZOOKEEPER_NODE, Event
from reference_model.scenario import Scenario

if TYPE_CHECKING:
    from harness.client.producer import Delivery
    from harness.db.versions import KafkaVersion
    from harness.metadata import PartitionView
    from reference_model.run import RunResult

ZOOKEEPER = "zookeeper"
SHORT_LAG_MS = 6000
"""``replica.lag.time.max.ms`` of runs with ``isr_shrink`` steps: the leader's ISR-expiry
task runs every half of it, so a cut follower is out within 1.5x."""
SHORT_SESSION_MS = 6000
"""``zookeeper.session.timeout.ms`` of brokers a scenario cuts from ZooKeeper while running."""
SOCKET_TIMEOUT_MS = 5000
"""``replica.socket.timeout.ms`` / ``controller.socket.timeout.ms`` of network runs: after a
heal, a fetcher or controller channel waiting on a dropped request reconnects within this."""
PRODUCE_TIMEOUT_MS = 30_000
"""The playbook producer's timeouts in runs with ``isr_shrink``: an acks=all write that only
an ISR shrink completes must outlive the lag."""

NETWORK_KINDS = ("partition", "heal", "isr_shrink", "leader_and_isr")


@dataclass(frozen=True)
class NetworkNeeds:
    """What a scenario needs from the run network, decided before the cluster starts."""

    why: tuple[str, ...] = ()  # the steps that need cuts ("" when none)
    short_lag: bool = False
    # brokers given the short replica.lag.time.max.ms: the leaders (model) at isr_shrink
    # steps; a shorter lag elsewhere would let paused followers go stale behind the script
    lag_on: frozenset[str] = frozenset()
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
    session: set[str] = set()
    names = scenario.brokers
    for k, ev in enumerate(scenario.steps, start=1):
        if ev.kind == "isr_shrink":
            lead = -1
            if prediction is not None and k - 1 < len(prediction.steps):
                lead = prediction.steps[k - 1].state.controller.leader
            lag_on |= {names[lead]} if 0 <= lead < len(names) else set(names)
        needed = (
            ev.kind in NETWORK_KINDS
            or (ev.kind == "detect" and bool(ev.hold))
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
    return NetworkNeeds(tuple(why), short_lag, frozenset(lag_on), frozenset(session))


def configure(cluster: Cluster, want: NetworkNeeds) -> list[str]:
    """Broker settings the scenario's network steps need; call before ``cluster.start()``.

    Returns one line per setting, for the run's progress output.
    """
    if not want.network:
        return []
    said: list[str] = []
    zk = cluster.mode.name == "zookeeper"
    for name, spec in cluster.brokers.items():
        spec.props["replica.socket.timeout.ms"] = str(SOCKET_TIMEOUT_MS)
        spec.props["controller.socket.timeout.ms"] = str(SOCKET_TIMEOUT_MS)
        if name in want.lag_on:
            spec.props["replica.lag.time.max.ms"] = str(SHORT_LAG_MS)
        if zk and name in want.short_session:
            spec.props["zookeeper.session.timeout.ms"] = str(SHORT_SESSION_MS)
    if want.short_lag:
        who = ",".join(sorted(want.lag_on))
        said.append(f"replica.lag.time.max.ms={SHORT_LAG_MS} on {who} (leader at isr_shrink)")
    if zk and want.short_session:
        who = ",".join(sorted(want.short_session))
        said.append(f"zookeeper.session.timeout.ms={SHORT_SESSION_MS} for {who} (cut from ZK)")
    return said


def network_unavailable(cluster: Cluster, want: NetworkNeeds) -> str | None:
    """One line saying why a started cluster cannot realise the scenario's cuts, else None."""
    if not want.network or cluster.network is not None:
        return None
    from harness.nemesis.network import network_available

    reason = network_available() or "this backend has no partition capability here"
    return f"needs network partitions ({'; '.join(want.why[:2])}): {reason}"


@dataclass
class Held:
    """A LeaderAndIsr held back from a broker: the links cut and the counters at the cut."""

    links: list[tuple[str, str]] = field(default_factory=list)
    sent: int = 0
    done: int = 0


class NetworkSteps:
    """The playbook's network steps (a mixin of :class:`harness.generator.playbook.Playbook`).

    The attributes and methods below are the playbook's; they are declared here so the
    mixin type-checks on its own.
    """

    cluster: Cluster
    scenario: Scenario
    version: KafkaVersion
    prediction: RunResult
    timeout: float
    names: list[str]
    ids: dict[str, int]
    by_id: dict[int, str]
    down: set[str]
    held: set[str]
    user_paused: set[str]
    kraft: bool
    producer: Any
    _model_step: int
    expiring: set[str]  # detected while running and cut: no session kept for them
    _lai_base: dict[str, tuple[int, int]]

    # -------------------------------------------------- the playbook's (declared here)

    def view(self) -> PartitionView:
        raise NotImplementedError

    def leader(self) -> str | None:
        raise NotImplementedError

    def leo(self, name: str) -> int:
        raise NotImplementedError

    def log(self, name: str) -> list[tuple[int, int, str]]:
        raise NotImplementedError

    def _seen(self) -> str:
        raise NotImplementedError

    def _hold(self, name: str) -> None:
        raise NotImplementedError

    def _release(self, name: str) -> None:
        raise NotImplementedError

    def _wake_leader(self) -> None:
        raise NotImplementedError

    def _parked_fetches_answered(self) -> None:
        raise NotImplementedError

    def poll_producers(self) -> None:
        raise NotImplementedError

    def _leader_ready(self, name: str) -> None:
        raise NotImplementedError

    def _sync_sessions(self) -> None:
        raise NotImplementedError

    def _lai_sent(self, name: str) -> int:
        raise NotImplementedError

    def _lai_done(self, name: str) -> int:
        raise NotImplementedError

    def _applied_or_none(self, name: str) -> bool:
        raise NotImplementedError

    def _await_controller(self, name: str) -> None:
        raise NotImplementedError

    # -------------------------------------------------- nodes and links

    def _controllers(self) -> list[str]:
        """The node(s) the model's ``controller`` stands for."""
        if self.kraft:
            return list(getattr(self.cluster.mode, "controllers", [CONTROLLER]))
        return [CONTROLLER]

    def _nodes(self, node: int) -> list[str]:
        """Network node names of one model node (broker index or *_NODE)."""
        if node >= 0:
            return [self.names[node]]
        if node == CONTROLLER_NODE:
            return self._controllers()
        if node == ZOOKEEPER_NODE:
            return self._controllers() if self.kraft else [ZOOKEEPER]
        if node == CLIENT_NODE:
            return [CLIENT]
        raise ValueError(f"unknown network node {node}")

    def _links(self, links: Iterable[tuple[int, int]]) -> list[tuple[str, str]]:
        out = []
        for a, b in links:
            out += [(s, d) for s in self._nodes(a) for d in self._nodes(b)]
        return sorted(set(out))

    def _net(self) -> Any:
        if self.cluster.network is None:
            from harness.generator.playbook import StepPrevented

            raise StepPrevented("this cluster was started without a run network")
        return self.cluster.network

    def _cut(self, links: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
        net = self._net()
        new: list[tuple[str, str]] = []
        for s, d in links:
            new += net.partition(s, d, "one-way")
        return new

    def _uncut(self, links: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
        net = self.cluster.network
        if net is None:
            return []
        healed: list[tuple[str, str]] = []
        for s, d in links:
            healed += net.heal(s, d, "one-way")
        return healed

    def cut_from_controller(self) -> set[str]:
        """Brokers with a cut link to or from a controller (their metadata is held back)."""
        net = self.cluster.network
        if net is None:
            return set()
        ctl = set(self._controllers())
        out = set()
        for s, d in net.cuts():
            if s in ctl and d in self.ids:
                out.add(d)
            if d in ctl and s in self.ids:
                out.add(s)
        return out

    def cut_from_sessions(self) -> set[str]:
        """Brokers whose session the cuts end: cut from ZooKeeper (KRaft: the controllers)."""
        net = self.cluster.network
        if net is None:
            return set()
        hub = set(self._controllers()) if self.kraft else {ZOOKEEPER}
        return {s for s, d in net.cuts() if d in hub and s in self.ids} | {
            d for s, d in net.cuts() if s in hub and d in self.ids
        }

    @staticmethod
    def _show(links: Iterable[tuple[str, str]]) -> str:
        links = sorted(links)
        out = []
        for s, d in links:
            if (d, s) in links:
                if (d, s) < (s, d):
                    continue
                out.append(f"{s}<->{d}")
            else:
                out.append(f"{s}->{d}")
        return ",".join(out) or "nothing"

    # -------------------------------------------------- partition / heal

    def _mark_held(self, names: Iterable[str]) -> None:
        """LeaderAndIsr counters of brokers about to be cut from the controller."""
        if self.kraft:
            return
        for n in names:
            if n not in self.cut_from_controller():
                self._lai_base[n] = (self._lai_sent(n), self._lai_done(n))

    def do_partition(self, k: int, ev: Event, _name: str) -> str:
        links = self._links(ev.links)
        ctl = set(self._controllers())
        to_ctl = {s for s, d in links if d in ctl} | {d for s, d in links if s in ctl}
        self._mark_held(n for n in to_ctl if n in self.ids)
        new = self._cut(links)
        self._sync_sessions()
        return f"realised: iptables DROP {self._show(new)}"

    def do_heal(self, k: int, ev: Event, name: str) -> str:
        net = self._net()
        before = set(net.cuts())
        held_before = self.cut_from_controller()
        if ev.links:
            self._uncut(self._links(ev.links))
        elif name:
            net.heal(name)
        else:
            net.heal()
        healed = before - set(net.cuts())
        notes = [f"realised: iptables rules removed for {self._show(healed)}"]
        for n in sorted(held_before - self.cut_from_controller()):
            notes.append(self._rejoin(k, n))
        self._sync_sessions()
        return "; ".join(x for x in notes if x)

    def _rejoin(self, k: int, name: str) -> str:
        """Fence after the controller's link to ``name`` heals.

        A broker whose session ended while cut registers again (ZooKeeper: a new session,
        KafkaHealthcheck/KafkaZkClient re-registration; KRaft: heartbeats, unfenced); then it
        processes what the controller sends it, with the leader held so it cannot fetch
        before the scenario's next fetch step.
        """
        from harness.generator.playbook import wait_until

        if name in self.down or not self.cluster.is_running(name):
            return ""
        t0 = time.perf_counter()
        bid = self.ids[name]
        lead = self.leader()
        if lead is not None and lead != name and lead not in self.down:
            self._hold(lead)
        try:
            self._release(name)
            expired = bid not in self.view().live
            if expired:
                wait_until(
                    lambda: bid in self.view().live,
                    f"{name} to register again after the heal",
                    self.timeout,
                    self._seen,
                )
            self._settle_after_cut(name, expired)
        finally:
            # like a restart: the leader stays held until a step needs it (_wake_leader)
            if self.leader() != name:
                self._hold(name)
            else:
                self._leader_ready(name)
            self.expiring.discard(name)
        again = "registered again, " if expired else ""
        took = time.perf_counter() - t0
        return f"{name} {again}processed the controller's requests {took:.1f}s after the heal"

    def _settle_after_cut(self, name: str, expired: bool) -> None:
        from harness.generator.playbook import wait_until

        if self.kraft:
            wait_until(
                lambda: self._applied_or_none(name),
                f"{name} to apply the controller's latest decision after the heal",
                self.timeout,
                self._seen,
            )
            return
        if expired:
            # The controller dropped its channel to the expired session (queued requests
            # with it) and sends the new registration a LeaderAndIsr of its own.
            done0 = self._lai_base.get(name, (0, self._lai_done(name)))[1]
            wait_until(
                lambda: self._lai_done(name) > done0,
                f"{name} to process a LeaderAndIsr after registering again",
                self.timeout,
                self._seen,
            )
            self._lai_base[name] = (self._lai_sent(name), self._lai_done(name))
            return
        sent0, done0 = self._lai_base.get(name, (self._lai_sent(name), self._lai_done(name)))
        wait_until(
            lambda: (self._lai_sent(name) - sent0) - (self._lai_done(name) - done0) <= 0,
            f"{name} to process the LeaderAndIsr requests held back from it",
            self.timeout,
            self._seen,
        )

    # -------------------------------------------------- held-back LeaderAndIsr

    def hold_from_controller(self, names: Iterable[str]) -> str:
        """Cut the controller(s) from each broker in ``names`` both ways, before it acts."""
        names = [n for n in names if n not in self.cut_from_controller()]
        if not names:
            return ""
        self._mark_held(names)
        links = [(c, n) for n in names for c in self._controllers()]
        links += [(n, c) for c, n in links]
        new = self._cut(links)
        self._sync_sessions()
        how = (
            "the harness's session keeper heartbeats for it"
            if self.kraft
            else "it keeps its ZooKeeper session"
        )
        return f"realised: hold {','.join(names)}: iptables DROP {self._show(new)} ({how})"

    def do_leader_and_isr(self, k: int, ev: Event, name: str) -> str:
        if name not in self.cut_from_controller():
            return f"no LeaderAndIsr held back from {name}"
        ctl = self._controllers()
        healed = self._uncut([(c, name) for c in ctl] + [(name, c) for c in ctl])
        note = self._rejoin(k, name) if name not in self.down else f"{name} is down"
        self._sync_sessions()
        return f"realised: heal {self._show(healed)}; {note}"

    # -------------------------------------------------- ISR shrink

    def do_isr_shrink(self, k: int, ev: Event, name: str) -> str:
        from harness.generator.playbook import FenceTimeout, wait_until

        before = self.prediction.steps[k - 1].state
        after = self.prediction.steps[k].state
        bid = self.ids[name]
        lead = self.leader()
        if lead is None or lead in self.down:
            return "no leader"
        if bid not in self.view().isr:
            return f"realised: {name} was already out of the controller's ISR"
        t0 = time.perf_counter()
        self._wake_leader()
        new = self._cut([(name, lead), (lead, name)])
        # Followers the model keeps in the ISR and whose fetch would change nothing run
        # meanwhile (a paused one goes stale by time alone before KAFKA-7152).
        lead_i = self.names.index(lead)
        lead_rep = before.replicas[lead_i]
        run_meanwhile = []
        for j, rep in enumerate(before.replicas):
            n = self.names[j]
            if n in (name, lead) or j not in after.controller.isr or n not in self.held:
                continue
            if (
                len(rep.log) == len(lead_rep.log)
                and rep.hw == lead_rep.hw
                and not rep.needs_truncation
                and before.inflight[j] is None
                and j not in before.controller.pending
            ):
                run_meanwhile.append(n)
        # A follower the controller cannot reach (held back) still follows its old leader:
        # running it would fetch from that one, a fetch the script never had; it stays paused.
        released = name in self.held and name not in self.cut_from_controller()
        try:
            if released:
                self._release(name)  # alive and heartbeating, only cut from the leader
            for n in run_meanwhile:
                self._release(n)
            limit = 3 * int(self.cluster.brokers[lead].props.get("replica.lag.time.max.ms", 0))
            wait_until(
                lambda: bid not in self.view().isr,
                f"the leader {lead} to shrink {name} out of the ISR",
                max(self.timeout, limit / 1000 + 15),
                self._seen,
            )
        except FenceTimeout as exc:
            raise FenceTimeout(
                f"step {k}: {exc} (cut {self._show(new)}; the leader kept {name}: "
                "a caught-up follower is never out of sync from KAFKA-7152, 2.1.0)"
            ) from None
        finally:
            for n in run_meanwhile:
                self._hold(n)
            if released:
                self._hold(name)
            self._uncut(new)
        self.await_acks(k)
        waited = time.perf_counter() - t0
        cut = (
            f"iptables cut {self._show(new)}"
            if new
            else f"{name}<->{lead} already cut by the scenario"
        )
        notes = [
            f"realised: {cut}; replica.lag.time.max.ms="
            f"{self.cluster.brokers[lead].props.get('replica.lag.time.max.ms', '?')}; "
            f"waited {waited:.1f} s for the ISR shrink{'; healed' if new else ''}"
        ]
        if run_meanwhile:
            notes.append(f"{','.join(run_meanwhile)} ran meanwhile (caught up)")
        isr = self.view().isr
        dropped = [
            self.names[j]
            for j in after.controller.isr
            if self.ids[self.names[j]] not in isr and self.names[j] != name
        ]
        if dropped:
            notes.append(
                f"{','.join(dropped)} dropped out of the ISR too (paused, lagging the leader)"
            )
        return "; ".join(notes)

    def await_acks(self, k: int) -> None:
        """Fence: writes the model acknowledges by step ``k`` have their delivery report.

        An ISR shrink completes pending acks=all writes (the HW passes them); the report
        must be in before a later step (a crash of the leader) can turn it into a
        transport error the model never had.
        """
        from harness.generator.playbook import wait_until

        acked = {w.record for w in self.prediction.steps[k].state.writes if w.status == "acked"}
        waiting = [
            d for r, d in self.producer.deliveries.items() if r in acked and d.status == "pending"
        ]
        if not waiting:
            return

        def reported() -> bool:
            self.poll_producers()
            return all(d.status != "pending" for d in waiting)

        wait_until(reported, "the leader's answer to writes the shrink completes", self.timeout)

    def check_prevented(self, k: int, ev: Event, reason: str) -> str:
        """The broker's side of a prevention the model predicts for step ``k``.

        ``isr_shrink F`` (KAFKA-7152: a caught-up follower is never out of sync): F is cut
        from the leader for one and a half lag times plus the ISR-expiry period, the
        window in which an older broker would shrink it, and the controller's ISR is read
        throughout. Other kinds are not checked here. Called by the runner instead of
        playing the step.
        """
        from harness.generator.playbook import FenceTimeout, wait_until

        if ev.kind != "isr_shrink" or ev.replica < 0:
            return f"not played: step {k} predicted prevented; the broker's refusal not checked"
        name = self.names[ev.replica]
        lead = self.leader()
        bid = self.ids[name]
        if lead is None or lead in self.down or bid not in self.view().isr:
            return f"not checked: {name} is not a follower in the controller's ISR here"
        lag = int(self.cluster.brokers[lead].props.get("replica.lag.time.max.ms", 0))
        if not lag or lag > 60_000:
            return f"not checked: {lead} runs without the short replica.lag.time.max.ms"
        self._wake_leader()
        new = self._cut([(name, lead), (lead, name)])
        released = name in self.held and name not in self.cut_from_controller()
        window = 2 * lag / 1000 + 3
        t0 = time.perf_counter()
        try:
            if released:
                self._release(name)
            wait_until(lambda: bid not in self.view().isr, f"{name} to leave the ISR", window)
        except FenceTimeout:
            return (
                f"refused as predicted: {lead} kept {name} in the ISR for "
                f"{time.perf_counter() - t0:.1f} s with {self._show(new)} cut "
                f"(replica.lag.time.max.ms={lag})"
            )
        finally:
            if released:
                self._hold(name)
            self._uncut(new)
        return (
            f"NOT refused: {lead} shrank {name} out of the ISR after "
            f"{time.perf_counter() - t0:.1f} s with {self._show(new)} cut, although the model "
            f"predicts the step prevented ({reason})"
        )

    # -------------------------------------------------- fetch of a held-back follower

    def _fenced_lines(self, name: str) -> int:
        """How often ``name``'s fetcher was fenced (KIP-320, AbstractFetcherThread)."""
        path = self.cluster.broker_log(name)
        if path is None or not path.exists():
            return 0
        return path.read_text(errors="replace").count("than the current leader. Will await")

    def fetch_while_cut(self, k: int, name: str) -> str:
        """``fetch F`` of a follower cut from the controller: it fetches from the leader it
        last heard of, with its stale leader epoch (the zombie follower of KIP-320).

        No LeaderAndIsr fence (it is held back); the fence is the model's outcome: F's log as
        predicted and, where the model has the fetch refused, F's fetcher fenced
        (FENCED_LEADER_EPOCH, logged by AbstractFetcherThread.onPartitionFenced); where the
        model has F back in the ISR, the controller's ISR too.
        """
        from harness.generator.playbook import wait_until

        after = self.prediction.steps[k]
        idx = self.names.index(name)
        want = [r for _e, r in after.state.replicas[idx].log]
        fenced = any("FENCED_LEADER_EPOCH" in n for n in after.notes)
        joins = idx in after.state.controller.isr
        fenced0 = self._fenced_lines(name)
        bid = self.ids[name]

        def done() -> bool:
            if [r for _o, _e, r in self.log(name)] != want:
                return False
            if fenced:
                return self._fenced_lines(name) > fenced0
            if joins:
                return bid in self.view().isr
            return True

        t0 = time.perf_counter()
        self._wake_leader()
        self._release(name)
        try:
            wait_until(done, f"{name}'s fetch as a held-back follower", self.timeout, self._seen)
        finally:
            self._hold(name)
        what = "fenced (FENCED_LEADER_EPOCH)" if fenced else "served"
        if joins and not fenced:
            what += ", back in the ISR"
        took = time.perf_counter() - t0
        return f"realised: {name} ran {took:.1f} s, still cut from the controller: {what}"

    # -------------------------------------------------- produce to a chosen broker

    def produce_to(self, k: int, ev: Event, name: str) -> str:
        """``produce: {to: X}``: a client that can reach X alone; its answer is the outcome."""
        from harness.client.producer import Producer
        from harness.generator.playbook import wait_until

        if name in self.down:
            for record in ev.record.split(","):
                self._failed(record, f"{name} is down")
            return f"realised: {name} is down: not sent"
        if name in self.held and self.leader() == name:
            self._wake_leader()
        self._parked_fetches_answered()
        others = [n for n in self.cluster.brokers if n != name]
        new = self._cut([(CLIENT, n) for n in others] + [(n, CLIENT) for n in others])
        host, port = self.cluster.broker_address(name)
        pinned = Producer(f"{host}:{port}", self.scenario.acks)
        out = []
        try:
            for record in ev.record.split(","):
                d = pinned.send(record)

                def answered(d: Delivery = d) -> bool:
                    pinned.poll(0.05)
                    return d.status != "pending"

                wait_until(answered, f"{name}'s answer to {record}", self.timeout, self._seen)
                self.producer.deliveries[record] = d
                out.append(f"{record}: {d.status}{' ' + d.error if d.error else ''}")
        finally:
            pinned.close(timeout=2.0)
            self._uncut(new)
        return (
            f"realised: producer bootstrapped from {name}, client cut from {','.join(others)}; "
            + "; ".join(out)
        )

    def client_cut_from_stale(self) -> tuple[list[tuple[str, str]], str]:
        """For a plain ``produce``: cut the client from brokers the controller cannot reach.

        The model's producer writes to the leader the controller elected. A broker cut from
        the controller answers Metadata from its stale view (a zombie leader names itself),
        and librdkafka may ask it (KRaft bootstraps from every broker), so while such a
        broker runs the harness's client is cut from it. Returns (cuts made, note).
        """
        v = self.view()
        lead = self.by_id.get(v.leader)
        stale = sorted(n for n in self.cut_from_controller() - self.down if n != lead)
        if not stale:
            return [], ""
        new = self._cut([(CLIENT, n) for n in stale] + [(n, CLIENT) for n in stale])
        return new, (
            f"realised: client cut from {','.join(stale)} (cut from the controller: stale "
            "metadata) for this produce"
        )

    def _failed(self, record: str, why: str) -> None:
        from harness.client.producer import Delivery

        d = Delivery(record)
        d.status, d.error = "failed", why
        self.producer.deliveries[record] = d

    # -------------------------------------------------- detect of a running broker

    def sessions_kept_by_cuts(self, live: Iterable[int]) -> set[str]:
        """KRaft: brokers the model counts live whose own heartbeats a cut drops."""
        alive = {self.names[i] for i in live if 0 <= i < len(self.names)}
        return (self.cut_from_sessions() & alive) - self.expiring - self.down

    def detect_running(self, k: int, ev: Event, name: str) -> str | None:
        """``detect A`` of a broker that runs but is cut from its session keeper; None if
        A is not cut (the caller's rule applies)."""
        if name not in self.cut_from_sessions():
            return None
        t0 = time.perf_counter()
        if self.kraft:
            self.expiring.add(name)
            self._sync_sessions()
            self.cluster.declare_dead(name)
            how = "stopped keeping its session, BrokerHeartbeat(WantFence) sent for it"
        else:
            timeout = self.cluster.brokers[name].props.get("zookeeper.session.timeout.ms", "?")
            how = f"its ZooKeeper session expired (zookeeper.session.timeout.ms={timeout})"
        self._await_controller(name)
        hub = "the controllers" if self.kraft else "ZooKeeper"
        took = time.perf_counter() - t0
        return f"realised: {name} cut from {hub}; {how}; controller acted after {took:.1f} s"
