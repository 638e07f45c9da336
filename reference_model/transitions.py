"""The transition function: ``apply(config, state, event) -> (state, note)``.

Pure: no I/O, clocks or randomness. An event that cannot take effect (a fetch to a dead
leader, a produce to a broker that is no longer leader) returns the state unchanged, or with
the producer's failure recorded, plus a note naming the Kafka error, so a scenario reads
like a broker log and the explorer can prune no-op steps.

Where the rules are (each docstring names the Kafka method, KIP or JIRA it mirrors):

- ``reference_model.broker``: what one broker does (append, fetch, HW, truncation,
  OffsetsForLeaderEpoch, makeLeader/makeFollower, crash, power loss, restart);
- ``reference_model.controller.zk`` / ``.kraft``: what the controller decides, as
  :class:`~reference_model.controller.Decision` values, the way ``PartitionChangeBuilder.build``
  returns a record;
- ``reference_model.disk``: named faults on a stopped broker's files;
- here: the handlers that ask the controller, the resolved table of step kinds (``HANDLERS``,
  from each rule's ``@handles`` registration), the controller chosen once per config
  (:func:`controller_of`), and the delivery of decisions to the brokers (the
  ``ControllerChannelManager`` in ZooKeeper mode, replay of the metadata log in KRaft), which
  network cuts and held-back requests can delay.

Rules follow docs/background.md.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from reference_model import broker
from reference_model import controller_queue as cq
from reference_model import disk as _disk  # noqa: F401 (imported for its @handles rules)
from reference_model.broker import OK, Outcome, complete_writes, reachable
from reference_model.controller import EVERY_LIVE, JOINED, NOBODY, ControllerRules, Decisions
from reference_model.controller import kraft as kraft_controller
from reference_model.controller import zk as zk_controller
from reference_model.cuts import controller_cut, session_cut, session_node
from reference_model.events import CONTROLLER_NODE, NODE_NAMES, Event
from reference_model.kinds import handles, model_rules
from reference_model.state import NO_LEADER, Config, PartitionState, with_controller, with_replica


def controller_of(cfg: Config) -> ControllerRules:
    """The controller of this config's profile: KRaft (rule ``kraft``, KIP-500/631) or
    ZooKeeper mode. The one place the model asks which controller runs."""
    return kraft_controller.CONTROLLER if cfg.generation.kraft else zk_controller.CONTROLLER


# ---------------------------------------------------------------- delivering decisions


def deliver(cfg: Config, st: PartitionState) -> PartitionState:
    """Every pending LeaderAndIsr that can be processed now is processed, leader first."""
    ctrl = st.controller
    if not ctrl.pending:
        return st
    order = sorted(ctrl.pending, key=lambda j: (j != ctrl.leader, j))
    still: set[int] = set()
    cut: set[int] = set()
    for j in order:
        rep = st.replicas[j]
        if not rep.alive:
            continue  # a dead broker hears the current state when it restarts
        if st.cuts and controller_cut(st.cuts, j):
            # ControllerChannelManager's send to j fails and is retried (KRaft: j cannot
            # fetch the metadata log): held back until the cut heals (``_heal``).
            cut.add(j)
        if rep.paused or j in ctrl.held or j in cut:
            still.add(j)
            # ZooKeeper mode: queued behind what j has not heard yet (controller_queue).
            st = with_controller(st, cq.enqueue(cfg, st.controller, j))
            continue
        st = cq.drain(cfg, st, j, broker.become_leader_or_follower)
    out = st.controller._replace(pending=frozenset(still))
    if cut:
        out = out._replace(held=out.held | cut)
    return with_controller(st, out)


def record(cfg: Config, st: PartitionState, decisions: Decisions, hold: frozenset[int]) -> Outcome:
    """Apply a controller's decisions in order and send each to whom it names.

    ``hold``: brokers whose LeaderAndIsr the step delays in the network (``Controller.held``).
    The decision's view replaces the controller's; the channel (``pending``, ``held``) is kept
    here: a broadcast goes to every live broker, a join to that broker alone.
    """
    note = ""
    for d in decisions:
        cur = st.controller
        if d.send == EVERY_LIVE:
            live = d.controller.live
            ctrl = d.controller._replace(pending=live, held=cur.held | (hold & live))
        elif d.send == JOINED:
            joined = frozenset({d.to})
            ctrl = d.controller._replace(
                pending=cur.pending | joined, held=cur.held | (hold & joined)
            )
        elif d.controller is cur:
            ctrl = cur  # a refusal: nothing decided, nothing sent
        else:
            ctrl = d.controller._replace(pending=cur.pending, held=cur.held)
        if ctrl != cur:
            st = with_controller(st, ctrl)
        if d.send != NOBODY:
            st = complete_writes(cfg, deliver(cfg, st))
        if d.note:
            note = f"{note}; {d.note}" if note else d.note
    return st, note


# ------------------------------------------------------------------ the fetch family


@handles("fetch")
def _fetch(cfg: Config, st: PartitionState, ev: Event) -> Outcome:
    return broker.fetch(cfg, st, ev, controller_of(cfg).isr_expanded)


@handles("fetch_request")
def _fetch_request(cfg: Config, st: PartitionState, ev: Event) -> Outcome:
    return broker.fetch_request(cfg, st, ev, controller_of(cfg).isr_expanded)


@handles("leader_epoch_request")
def _leader_epoch_request(cfg: Config, st: PartitionState, ev: Event) -> Outcome:
    return broker.leader_epoch_request(cfg, st, ev, controller_of(cfg).isr_expanded)


# ------------------------------------------------- the process, as the controller sees it


@handles("restart")
def _restart(cfg: Config, st: PartitionState, ev: Event) -> Outcome:
    """The process starts (``broker.start``), then registers with the controller."""
    i = ev.replica
    if st.replicas[i].alive:
        return st, f"{cfg.brokers[i]} is already running"
    st = broker.start(cfg, st, i)
    # The old process's connection is gone: the harness plays a restart the controller did
    # not notice by failing the controller over, which drops every queue (controller_queue).
    if st.controller.queued:
        st = with_controller(st, cq.drop(st.controller, frozenset({i})))
    if st.cuts and session_cut(cfg, st.cuts, i):
        # The process runs but cannot register (no ZooKeeper session / no
        # BrokerRegistration reaches the quorum): it registers when the cut heals.
        where = NODE_NAMES[session_node(cfg)]
        return st, f"{cfg.brokers[i]} cut from {where}: registration waits"
    return _register(cfg, st, i, ev.hold)


def _register(cfg: Config, st: PartitionState, i: int, hold: frozenset[int]) -> Outcome:
    """Broker ``i`` registers (a new incarnation): the controller's answer is delivered, and
    the clean-shutdown marker it reported has been consumed (KIP-966)."""
    rep = st.replicas[i]
    decisions = controller_of(cfg).broker_registered(cfg, st.controller, i, rep.unclean_stop)
    st, note = record(cfg, st, decisions, hold)
    if st.replicas[i].unclean_stop:
        st = with_replica(st, i, st.replicas[i]._replace(unclean_stop=False))
    return st, note


@handles("resume")
def _resume(cfg: Config, st: PartitionState, ev: Event) -> Outcome:
    """SIGCONT: the broker answers again; if its session expired meanwhile it registers again
    (ZooKeeper: a new session; KRaft: it heartbeats and is unfenced)."""
    i = ev.replica
    rep = st.replicas[i]
    if not rep.paused:
        return st, f"{cfg.brokers[i]} is not paused"
    st = with_replica(st, i, rep._replace(paused=False))
    if i not in st.controller.live:
        if st.cuts and session_cut(cfg, st.cuts, i):
            return deliver(cfg, st), f"{cfg.brokers[i]} cut: registers again at the heal"
        decisions = controller_of(cfg).broker_unfenced(cfg, st.controller, i)
        return record(cfg, st, decisions, ev.hold)
    return deliver(cfg, st), OK


@handles("clean_shutdown")
def _clean_shutdown(cfg: Config, st: PartitionState, ev: Event) -> Outcome:
    """Controlled shutdown: leadership moves, the broker flushes and checkpoints, then stops."""
    i = ev.replica
    if not reachable(st.replicas[i]):
        return st, f"{cfg.brokers[i]} is not running"
    st = broker.shut_down_cleanly(cfg, st, i)
    st, note = _broker_failed(cfg, st, i, ev.hold)
    return st._replace(crashes=st.crashes + 1), note


def _broker_failed(cfg: Config, st: PartitionState, i: int, hold: frozenset[int]) -> Outcome:
    # removeBroker: the controller's channel to i, and its queue, end with the session.
    if st.controller.queued:
        st = with_controller(st, cq.drop(st.controller, frozenset({i})))
    return record(cfg, st, controller_of(cfg).broker_failed(cfg, st.controller, i), hold)


@handles("detect")
def _detect(cfg: Config, st: PartitionState, ev: Event) -> Outcome:
    """The controller's failure handling of broker ``i`` (its session expired).

    A dead or paused broker's session expires by itself. A running broker's session expires
    only while it is cut from its session node (ZooKeeper: ``KafkaController.onBrokerFailure``
    after the ``/brokers/ids`` znode is gone; KRaft: ``BrokerHeartbeatManager`` session
    timeout -> ``ReplicationControlManager.handleBrokerFenced``); the broker itself does not
    hear of it and keeps its old role (a zombie leader, if it led).
    """
    i = ev.replica
    if i not in st.controller.live:
        return st, f"controller already considers {cfg.brokers[i]} dead"
    if reachable(st.replicas[i]):
        if not (st.cuts and session_cut(cfg, st.cuts, i)):
            return st, f"{cfg.brokers[i]} is alive: its session does not expire"
        st, note = _broker_failed(cfg, st, i, ev.hold)
        where = NODE_NAMES[session_node(cfg)]
        return st, f"{cfg.brokers[i]} cut from {where}: session expired; {note}"
    return _broker_failed(cfg, st, i, ev.hold)


# ------------------------------------------------------------ leadership and the ISR


@handles("elect")
def _elect(cfg: Config, st: PartitionState, ev: Event) -> Outcome:
    """An operator's election (``elect``): the controller decides."""
    decisions = controller_of(cfg).elect(cfg, st.controller, ev.replica, ev.unclean)
    return record(cfg, st, decisions, ev.hold)


@handles("isr_shrink")
def _isr_shrink(cfg: Config, st: PartitionState, ev: Event) -> Outcome:
    """The leader drops follower ``ev.replica`` from the ISR (``Partition.maybeShrinkIsr``
    after replica.lag.time.max.ms): it writes the ISR itself in ZooKeeper mode, asks the
    controller (AlterPartition) in KRaft."""
    f = ev.replica
    ctrl = st.controller
    if ctrl.leader == NO_LEADER:
        return st, "no leader"
    lead = st.replicas[ctrl.leader]
    if not reachable(lead) or lead.role != "leader" or lead.epoch != ctrl.epoch:
        return st, "the leader cannot update the ISR"
    if st.cuts and session_cut(cfg, st.cuts, ctrl.leader):
        # Partition.maybeShrinkIsr writes the ISR to ZooKeeper (KRaft: AlterPartition to the
        # controller); cut from it, the update fails and the ISR stays.
        return st, f"leader {cfg.brokers[ctrl.leader]} cut: it cannot update the ISR"
    if f == ctrl.leader or f not in lead.isr:
        return st, f"{cfg.brokers[f]} is not a follower in the ISR"
    rules = controller_of(cfg)
    if rules.leader_writes_isr:
        st = broker.shrink_isr(cfg, st, f)
    decisions = rules.isr_shrink(cfg, ctrl, st.replicas[ctrl.leader].isr, f)
    st, note = record(cfg, st, decisions, ev.hold)
    return complete_writes(cfg, st), note


@handles("leader_and_isr")
def _leader_and_isr(cfg: Config, st: PartitionState, ev: Event) -> Outcome:
    """A LeaderAndIsr held back from broker ``ev.replica`` reaches it now."""
    i = ev.replica
    ctrl = st.controller
    if i not in ctrl.held:
        return st, f"no LeaderAndIsr held back from {cfg.brokers[i]}"
    if st.cuts and controller_cut(st.cuts, i):
        return st, f"{cfg.brokers[i]} is still cut from the controller: LeaderAndIsr waits"
    st = with_controller(st, ctrl._replace(held=ctrl.held - {i}))
    return deliver(cfg, st), OK


@handles("controller_failover")
def _controller_failover(cfg: Config, st: PartitionState, ev: Event) -> Outcome:
    """Controllership moves (ZooKeeper mode): what the old controller queued is lost.

    ``onControllerResignation`` shuts the old ``ControllerChannelManager`` down with its
    queues; the new controller's ``onControllerFailover`` reads the partition state from
    ZooKeeper and sends every live broker the current LeaderAndIsr
    (``ReplicaStateMachine.startup``). The controller node is another broker from then on,
    so cuts of the old one no longer hold anything back. KRaft: the quorum's metadata log
    survives a failover and brokers fetch it from where they stopped; nothing is missed.
    """
    name = cfg.brokers[ev.replica]
    if cfg.generation.kraft:
        return st, "KRaft: the metadata log survives a controller failover; nothing missed"
    ctrl = st.controller
    missed = len(cq.queued_for(ctrl, ev.replica))
    st = st._replace(cuts=frozenset(c for c in st.cuts if CONTROLLER_NODE not in c))
    ctrl = cq.drop(ctrl)._replace(held=frozenset(), pending=ctrl.live)
    st = deliver(cfg, with_controller(st, ctrl))
    return complete_writes(cfg, st), (
        f"controller failed over: {name} missed {missed} queued LeaderAndIsr; "
        "the new controller sent the current state"
    )


# ---------------------------------------------------------------------- the network


@handles("partition")
def _partition(cfg: Config, st: PartitionState, ev: Event) -> Outcome:
    """iptables DROP on the given directed links (what each cut means: see the rules)."""
    return st._replace(cuts=st.cuts | ev.links), OK


@handles("heal")
def _heal(cfg: Config, st: PartitionState, ev: Event) -> Outcome:
    """Restore links, then what they held back happens (see :mod:`reference_model.cuts`).

    - LeaderAndIsr held back from a broker cut from the controller is delivered (as
      ``leader_and_isr``).
    - A running broker whose session link is back: if the controller had given it up
      (``detect`` while cut) or it was restarted while cut, it registers again: ZooKeeper
      mode ``KafkaZkClient.registerBroker`` on a new session -> ``onBrokerStartup`` (the
      controller sends it LeaderAndIsr: a zombie leader learns the new leader and truncates);
      KRaft ``handleBrokerUnfenced`` after its next heartbeat (a restart: ``registerBroker``).
    """
    if ev.links:
        healed = st.cuts & ev.links
    elif ev.replica >= 0:
        healed = frozenset(c for c in st.cuts if ev.replica in c)
    else:
        healed = st.cuts
    if not healed:
        return st, "no cut link to heal"
    before = st.cuts
    st = st._replace(cuts=st.cuts - healed)
    ctrl = st.controller
    released = frozenset(
        j for j in ctrl.held if controller_cut(before, j) and not controller_cut(st.cuts, j)
    )
    if released:
        st = with_controller(st, ctrl._replace(held=ctrl.held - released))
    rules = controller_of(cfg)
    notes = []
    for i, rep in enumerate(st.replicas):  # the replicas as the heal found them
        if not reachable(rep):
            continue
        if not session_cut(cfg, before, i) or session_cut(cfg, st.cuts, i):
            continue
        back = rules.session_back(
            cfg, st.controller, i, rep.role == "none", st.replicas[i].unclean_stop
        )
        if back is None:
            continue
        label, sep, decisions = back
        st, note = record(cfg, st, decisions, frozenset())
        if rep.role == "none" and st.replicas[i].unclean_stop:  # it registered (see _register)
            st = with_replica(st, i, st.replicas[i]._replace(unclean_stop=False))
        notes.append(f"{cfg.brokers[i]} {label}" + (f"{sep}{note}" if note else ""))
    st = deliver(cfg, st)
    return complete_writes(cfg, st), "; ".join(notes)


HANDLERS: Final[dict[str, Callable[[Config, PartitionState, Event], Outcome]]] = model_rules()
"""Step kind -> its rule, resolved once from the ``@handles`` registrations (``reference_model.
kinds``): here, in ``broker`` and in ``disk``. A plain dict, so ``apply`` costs one lookup."""


def apply(cfg: Config, st: PartitionState, ev: Event) -> Outcome:
    """Apply one event. Returns the new state and a note (empty when nothing went wrong)."""
    return HANDLERS[ev.kind](cfg, st, ev)
