"""The transition function: ``apply(config, state, event) -> (state, note)``.

Pure: no I/O, clocks or randomness. An event that cannot take effect (a fetch to a dead
leader, a produce to a broker that is no longer leader) returns the state unchanged, or with
the producer's failure recorded, plus a note naming the Kafka error, so a scenario reads
like a broker log and the explorer can prune no-op steps.

Rules follow BACKGROUND.md; the ZooKeeper-mode controller behaviour follows
``KafkaController`` of 0.10-2.x: it bumps the leader epoch on every election and whenever it
removes a dead broker from the ISR; the leader's own ISR shrink/expand does not bump it.
The KRaft controller (profiles with the ``kraft`` rule) follows ``ReplicationControlManager``
and ``PartitionChangeBuilder`` instead: see :func:`_kraft_change`. Every rule that differs
between releases is a flag of ``cfg.generation`` named after ``profiles.RULES``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from reference_model import controller_queue as cq
from reference_model import epochs as ec
from reference_model.cuts import (
    client_cut,
    controller_cut,
    session_cut,
    session_node,
    severed,
)
from reference_model.events import CONTROLLER_NODE, NODE_NAMES, Event
from reference_model.state import (
    ACKED,
    FAILED,
    NO_LEADER,
    PENDING,
    REFUSED,
    SENT,
    UNDEFINED,
    Config,
    Controller,
    FetchResponse,
    LogEntry,
    PartitionState,
    Replica,
    Write,
)

Outcome = tuple[PartitionState, str]
OK: Final = ""

# ----------------------------------------------------------------------------- helpers


# Most steps change one replica (and its in-flight fetch), so the helpers below build the new
# state straight from the old one's fields with ``tuple.__new__`` rather than through
# ``_replace`` (keyword parsing and a method call per step: a fifth of the compiled
# explorer's time went to ``_replace``). They spell out every field, in this order:
_new: Final = tuple.__new__
_PS_FIELDS: Final = (
    "replicas",
    "controller",
    "inflight",
    "writes",
    "crashes",
    "power_losses",
    "cuts",
)
if PartitionState._fields != _PS_FIELDS:
    raise ImportError(
        "reference_model.transitions: PartitionState fields changed; update _PS_FIELDS and "
        "the helpers that build states (_with, _with_inflight, _with_controller): "
        f"{PartitionState._fields}"
    )


def _with(st: PartitionState, i: int, rep: Replica) -> PartitionState:
    """``st`` with replica ``i`` replaced (``st._replace(replicas=...)``)."""
    reps = list(st.replicas)
    reps[i] = rep
    out: PartitionState = _new(
        PartitionState, (tuple(reps), st[1], st[2], st[3], st[4], st[5], st[6])
    )
    return out


def _with_inflight(
    st: PartitionState, i: int, rep: Replica | None, f: int, resp: FetchResponse | None
) -> PartitionState:
    """``st`` with replica ``i`` replaced by ``rep`` (unless None) and follower ``f``'s
    in-flight fetch by ``resp`` (``_set_inflight(_with(st, i, rep), f, resp)``)."""
    reps: tuple[Replica, ...] = st[0]
    if rep is not None:
        rl = list(reps)
        rl[i] = rep
        reps = tuple(rl)
    inf: tuple[FetchResponse | None, ...] = st[2]
    if inf[f] is not resp:
        fl = list(inf)
        fl[f] = resp
        inf = tuple(fl)
    elif rep is None:
        return st
    out: PartitionState = _new(PartitionState, (reps, st[1], inf, st[3], st[4], st[5], st[6]))
    return out


def _with_controller(st: PartitionState, ctrl: Controller) -> PartitionState:
    """``st`` with the controller's view replaced (``st._replace(controller=...)``)."""
    out: PartitionState = _new(PartitionState, (st[0], ctrl, st[2], st[3], st[4], st[5], st[6]))
    return out


def _set_inflight(st: PartitionState, i: int, resp: FetchResponse | None) -> PartitionState:
    return _with_inflight(st, i, None, i, resp)


def _reachable(rep: Replica) -> bool:
    return rep.alive and not rep.paused


def truncate(rep: Replica, offset: int) -> Replica:
    """Log.truncateTo: cut the log, HW, recovery point and epoch cache back to ``offset``."""
    if offset >= len(rep.log):
        return rep
    return rep._replace(
        log=rep.log[:offset],
        hw=min(rep.hw, offset),
        flushed=min(rep.flushed, offset),
        epochs=ec.truncate_from_end(rep.epochs, offset),
    )


def _append(cfg: Config, rep: Replica, entries: tuple[LogEntry, ...], hw: int = -1) -> Replica:
    """Append entries; v2 batches also extend the leader-epoch cache (assign on append).

    ``hw`` >= 0: a follower also takes the HW of the fetch response (capped at its new LEO).
    """
    epochs = rep.epochs
    if cfg.generation.epoch_in_log:
        offset = len(rep.log)
        for e in entries:
            if not epochs or e.epoch > epochs[-1][0]:
                epochs = ec.assign(epochs, e.epoch, offset)
            offset += 1
    log = rep.log + entries
    if hw >= 0:
        return rep._replace(log=log, epochs=epochs, hw=min(hw, len(log)))
    return rep._replace(log=log, epochs=epochs)


def _leader_hw(cfg: Config, rep: Replica, me: int) -> Replica:
    """Leader HW = max(HW, min(LEO of every ISR member, its own included)).

    ``hw_needs_min_isr`` (KAFKA-15583, 3.7, ``Partition.maybeIncrementLeaderHW``): no advance
    while the ISR is smaller than min.insync.replicas.
    """
    if cfg.generation.hw_needs_min_isr and len(rep.isr) < cfg.min_insync:
        return rep
    low = len(rep.log)
    for j in rep.isr:
        if j != me:
            rl = rep.remote_leo[j]
            if rl < low:
                low = rl
    return rep._replace(hw=low) if low > rep.hw else rep


def _complete_writes(cfg: Config, st: PartitionState) -> PartitionState:
    """Answer acks=all produce requests whose offset the leader's HW has passed.

    Like ``Partition.checkEnoughReplicasReachOffset``: acknowledged only if the ISR still
    has min.insync.replicas members, else NotEnoughReplicasAfterAppend. The check needs the
    broker to be leader still, not the same leader epoch: a LeaderAndIsr that keeps it
    leader with a bumped epoch (the ZooKeeper controller dropping a dead follower, a KRaft
    ISR shrink before 3.6) raises the HW in ``Partition.makeLeader`` and completes the
    delayed produce (``tryCompleteDelayedRequests``). A leader that stepped down or died in
    between already failed its pending writes (``_fail_pending``).
    """
    for w in st.writes:
        if w.status == PENDING:
            break
    else:
        return st
    writes = list(st.writes)
    changed = False
    for k, w in enumerate(writes):
        if w.status != PENDING:
            continue
        rep = st.replicas[w.leader]
        if rep.role == "leader" and rep.hw > w.offset:
            ok = len(rep.isr) >= cfg.min_insync
            writes[k] = w._replace(status=ACKED if ok else FAILED)
            changed = True
    return st._replace(writes=tuple(writes)) if changed else st


def _fail_pending(st: PartitionState, leader: int) -> PartitionState:
    """A leader that dies or steps down fails its delayed produce requests."""
    if not any(w.status == PENDING and w.leader == leader for w in st.writes):
        return st
    return st._replace(
        writes=tuple(
            w._replace(status=FAILED) if w.status == PENDING and w.leader == leader else w
            for w in st.writes
        )
    )


# ---------------------------------------------------------------- LeaderAndIsr handling


def _process_leader_and_isr(cfg: Config, st: PartitionState, i: int) -> PartitionState:
    """Broker ``i`` applies the controller's current LeaderAndIsr (becomeLeaderOrFollower)."""
    ctrl = st.controller
    rep = st.replicas[i]
    n = len(st.replicas)
    if ctrl.leader == i:
        epochs = rep.epochs
        if cfg.generation.assign_epoch_on_leader:
            epochs = ec.assign(epochs, ctrl.epoch, len(rep.log))
        if rep.role != "leader":  # a new leader
            rep = rep._replace(
                role="leader",
                leader=i,
                epoch=ctrl.epoch,
                isr=ctrl.isr,
                needs_truncation=False,
                remote_leo=(0,) * n,
                epochs=epochs,
                # leaderEpochStartOffsetOpt
                leader_start=len(rep.log)
                if cfg.generation.isr_join_epoch_start
                else rep.leader_start,
            )
        else:
            rep = rep._replace(
                role="leader",
                leader=i,
                epoch=ctrl.epoch,
                isr=ctrl.isr,
                needs_truncation=False,
                epochs=epochs,
            )
        st = _with(st, i, _leader_hw(cfg, rep, i))
        return _complete_writes(cfg, st)
    # Partition.makeFollower: nothing to do if the leader is the same; from KAFKA-7164
    # (2.0.1) only if the epoch moved by at most one, else an update was missed and the
    # leader's log may have been truncated meanwhile: become follower again (truncate).
    leader_changed = not (
        rep.role == "follower"
        and rep.leader == ctrl.leader
        and (not cfg.generation.truncate_on_missed_epoch or ctrl.epoch - rep.epoch in (0, 1))
    )
    if rep.role == "leader":
        st = _fail_pending(st, i)
    if leader_changed and ctrl.leader != NO_LEADER and cfg.generation.epoch_truncation:
        rep = rep._replace(
            role="follower",
            leader=ctrl.leader,
            epoch=ctrl.epoch,
            isr=ctrl.isr,
            needs_truncation=True,
        )
    else:
        rep = rep._replace(role="follower", leader=ctrl.leader, epoch=ctrl.epoch, isr=ctrl.isr)
        if leader_changed and ctrl.leader != NO_LEADER:
            rep = truncate(rep, rep.hw)  # pre-0.11: makeFollowers truncates to the HW
    return _with(st, i, rep)


def _deliver(cfg: Config, st: PartitionState) -> PartitionState:
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
            st = _with_controller(st, cq.enqueue(cfg, st.controller, j))
            continue
        st = cq.drain(cfg, st, j, _process_leader_and_isr)
    out = st.controller._replace(pending=frozenset(still))
    if cut:
        out = out._replace(held=out.held | cut)
    return _with_controller(st, out)


def _broadcast(st: PartitionState, ctrl: Controller, hold: frozenset[int]) -> PartitionState:
    """The controller sends its new decision to every broker it believes alive."""
    return _with_controller(
        st, ctrl._replace(pending=ctrl.live, held=ctrl.held | (hold & ctrl.live))
    )


def _elect(cfg: Config, ctrl: Controller, live: frozenset[int]) -> Controller | None:
    """OfflinePartitionLeaderSelector: first live ISR member; else, if allowed, any live one."""
    n = len(cfg.brokers)
    for j in range(n):
        if j in live and j in ctrl.isr:
            return ctrl._replace(leader=j, epoch=ctrl.epoch + 1, isr=ctrl.isr & live, live=live)
    if cfg.unclean:
        for j in range(n):
            if j in live:
                return ctrl._replace(leader=j, epoch=ctrl.epoch + 1, isr=frozenset({j}), live=live)
    return None


# -------------------------------------------------------------------------- producer


def _produce(cfg: Config, st: PartitionState, ev: Event) -> Outcome:
    target = ev.replica if ev.replica >= 0 else st.controller.leader
    records = ev.record.split(",")

    def fail(status: str, note: str) -> Outcome:
        ws = tuple(Write(r, status) for r in records)
        return st._replace(writes=st.writes + ws), note

    if target == NO_LEADER:
        return fail(FAILED, "no leader: partition offline (LEADER_NOT_AVAILABLE)")
    rep = st.replicas[target]
    name = cfg.brokers[target]
    if not _reachable(rep):
        return fail(FAILED, f"{name} unreachable (request timed out)")
    if st.cuts and client_cut(st.cuts, target):
        return fail(FAILED, f"client cut from {name} (request timed out)")
    if rep.role != "leader":
        # ReplicaManager.appendRecords: a broker accepts a write only while it believes it
        # leads; a zombie leader (its LeaderAndIsr held back by a cut) still does.
        return fail(FAILED, f"{name} is not leader (NOT_LEADER_FOR_PARTITION)")
    if cfg.acks == "all" and len(rep.isr) < cfg.min_insync:
        return fail(REFUSED, f"ISR {len(rep.isr)} < min.insync.replicas (NOT_ENOUGH_REPLICAS)")
    base = len(rep.log)
    entries = tuple(LogEntry(rep.epoch, r) for r in records)
    rep = _leader_hw(cfg, _append(cfg, rep, entries), target)
    status = {"0": SENT, "1": ACKED}.get(cfg.acks, PENDING)
    ws = tuple(Write(r, status, base + k, target, rep.epoch) for k, r in enumerate(records))
    st = _with(st, target, rep)._replace(writes=st.writes + ws)
    return _complete_writes(cfg, st), OK


# ---------------------------------------------------------------------------- fetching


def _offsets_for_leader_epoch(cfg: Config, st: PartitionState, f: int) -> Outcome:
    """Follower ``f`` truncates by asking its leader OffsetsForLeaderEpoch (KIP-101/279)."""
    gen = cfg.generation
    rep = st.replicas[f]
    lead = st.replicas[rep.leader]
    lname = cfg.brokers[rep.leader]
    if not _reachable(lead):
        return st, f"leader {lname} unreachable: truncation waits"
    if st.cuts and severed(st.cuts, f, rep.leader):
        return st, f"cut from leader {lname}: OffsetsForLeaderEpoch fails, truncation waits"
    if lead.role != "leader":
        return st, f"{lname} is not leader (NOT_LEADER_FOR_PARTITION): truncation waits"
    if gen.fencing and rep.epoch != lead.epoch:
        err = "FENCED_LEADER_EPOCH" if rep.epoch < lead.epoch else "UNKNOWN_LEADER_EPOCH"
        return st, f"OffsetsForLeaderEpoch {err}: truncation waits"
    if not rep.epochs:
        target = rep.hw
        note = f"no epoch in cache: truncate to HW {target}"
    else:
        requested = rep.latest_epoch
        if gen.epoch_walkback and requested > lead.epoch:
            return st, f"leader {lname} does not know epoch {requested} yet: truncation waits"
        target = -1
        note = ""
        for _ in range(len(rep.epochs) + 1):
            l_epoch, l_end = ec.end_offset_for(gen, lead.epochs, len(lead.log), requested)
            if l_epoch == UNDEFINED:
                target, note = rep.hw, f"epoch {requested} unknown to leader: truncate to HW"
                break
            if not gen.epoch_walkback:
                target = min(l_end, len(rep.log))
                note = f"leader: epoch {requested} ends at {l_end}"
                break
            f_epoch, f_end = ec.end_offset_for(gen, rep.epochs, len(rep.log), l_epoch)
            if f_epoch in (l_epoch, UNDEFINED):
                target = min(l_end, len(rep.log) if f_epoch == UNDEFINED else f_end)
                note = f"leader: epoch {l_epoch} ends at {l_end}"
                break
            rep = truncate(rep, f_end)  # KIP-279: step back to our own older epoch, ask again
            requested = f_epoch
        note = f"OffsetsForLeaderEpoch: {note}; truncate to {target}"
    rep = truncate(rep, target)._replace(needs_truncation=False)
    return _with(st, f, rep), note


def _fetch_request(cfg: Config, st: PartitionState, ev: Event) -> Outcome:
    f = ev.replica
    rep = st.replicas[f]
    name = cfg.brokers[f]
    if not _reachable(rep):
        return st, f"{name} is down"
    if rep.role != "follower" or rep.leader == NO_LEADER:
        return st, f"{name} is not following anyone"
    if st.inflight[f] is not None:
        return st, f"{name} already has a fetch outstanding"
    l_idx = rep.leader
    lead = st.replicas[l_idx]
    lname = cfg.brokers[l_idx]
    if not _reachable(lead):
        return st, f"leader {lname} unreachable"
    if st.cuts and severed(st.cuts, f, l_idx):
        # AbstractFetcherThread: the Fetch times out and is retried after a back-off.
        return st, f"cut from leader {lname}: fetch fails"
    note = OK
    if rep.needs_truncation:
        st, note = _offsets_for_leader_epoch(cfg, st, f)
        rep = st.replicas[f]
        if rep.needs_truncation:
            return st, note
    if lead.role != "leader":
        return st, f"{lname} is not leader (NOT_LEADER_FOR_PARTITION)"
    if cfg.generation.fencing and rep.epoch != lead.epoch:
        err = "FENCED_LEADER_EPOCH" if rep.epoch < lead.epoch else "UNKNOWN_LEADER_EPOCH"
        return st, f"fetch refused: {err}"
    fetch_offset = len(rep.log)
    if fetch_offset > len(lead.log):
        # ReplicaFetcherThread.handleOffsetOutOfRange: the follower is ahead of the leader.
        # Before KAFKA-7414 (2.1) the broker halts unless unclean election is enabled; from
        # 2.1 (AbstractFetcherThread.fetchOffsetAndTruncate) it always truncates to the
        # leader's LEO and goes on.
        if not cfg.unclean and not cfg.generation.out_of_range_truncates:
            rep = rep._replace(alive=False, halted=True, role="none")
            st = _with(st, f, rep)
            return st, f"{name} halted: log truncation is not allowed (unclean election off)"
        st = _with(st, f, truncate(rep, len(lead.log)))
        return st, f"OffsetOutOfRange: {name} truncates to leader LEO {len(lead.log)}"
    remote = list(lead.remote_leo)
    remote[f] = fetch_offset
    lead = lead._replace(remote_leo=tuple(remote))
    ctrl = st.controller
    if (
        f not in lead.isr
        and fetch_offset >= lead.hw
        and ctrl.leader == l_idx
        and ctrl.epoch == lead.epoch
        and (not cfg.generation.isr_join_epoch_start or fetch_offset >= lead.leader_start)
    ):
        # Partition.maybeExpandIsr: the follower caught up to the HW (and, from KAFKA-7128,
        # to the start of the leader's epoch); the leader writes the new ISR to ZooKeeper or
        # sends AlterPartition (a stale leader's conditional update would fail).
        lead = lead._replace(isr=lead.isr | {f})
        st = _with_controller(st, _expand_elr(cfg, ctrl)._replace(isr=lead.isr))
    lead = _leader_hw(cfg, lead, l_idx)
    resp = FetchResponse(l_idx, lead.epoch, fetch_offset, lead.log[fetch_offset:], lead.hw)
    st = _with_inflight(st, l_idx, lead, f, resp)
    return _complete_writes(cfg, st), note


def _fetch_response(cfg: Config, st: PartitionState, ev: Event) -> Outcome:
    f = ev.replica
    resp = st.inflight[f]
    rep = st.replicas[f]
    name = cfg.brokers[f]
    if resp is None:
        return st, f"{name} has no fetch outstanding"
    if not _reachable(rep):
        return st, f"{name} is down"
    if st.cuts and severed(st.cuts, f, resp.leader):
        return st, f"cut from {cfg.brokers[resp.leader]}: the response waits for the heal"
    if rep.role != "follower" or rep.leader != resp.leader:
        st = _set_inflight(st, f, None)
        return st, f"response from {cfg.brokers[resp.leader]} dropped: no longer its follower"
    if cfg.generation.fencing and rep.epoch != resp.leader_epoch:
        st = _set_inflight(st, f, None)
        return st, f"response from epoch {resp.leader_epoch} dropped (now {rep.epoch})"
    if resp.fetch_offset != len(rep.log):
        return _set_inflight(st, f, None), "response dropped: fetch offset moved"
    rep = _append(cfg, rep, resp.entries, resp.hw)
    return _with_inflight(st, f, rep, f, None), OK


def _fetch(cfg: Config, st: PartitionState, ev: Event) -> Outcome:
    st, note = _fetch_request(cfg, st, ev)
    if st.inflight[ev.replica] is None:
        return st, note
    st, note2 = _fetch_response(cfg, st, ev)
    return st, "; ".join(n for n in (note, note2) if n)


def _leader_epoch_request(cfg: Config, st: PartitionState, ev: Event) -> Outcome:
    rep = st.replicas[ev.replica]
    name = cfg.brokers[ev.replica]
    if not cfg.generation.epoch_truncation:
        return st, "no OffsetsForLeaderEpoch before 0.11 (truncated to HW on becoming follower)"
    if not _reachable(rep) or not rep.needs_truncation:
        return st, f"{name} has no truncation pending"
    st, note = _offsets_for_leader_epoch(cfg, st, ev.replica)
    if cfg.generation.truncate_in_fetch and not st.replicas[ev.replica].needs_truncation:
        # KAFKA-10554 (2.8): no separate OffsetsForLeaderEpoch round; the truncation is
        # decided from the first Fetch, which is a fetch like any other (ISR join included)
        st, fetched = _fetch(cfg, st, ev)
        note = "; ".join(n for n in (note, "truncated on the first Fetch", fetched) if n)
    return st, note


# ------------------------------------------------------------------- disk and process


def _checkpoint(cfg: Config, st: PartitionState, ev: Event) -> Outcome:
    rep = st.replicas[ev.replica]
    if not rep.alive:
        return st, f"{cfg.brokers[ev.replica]} is down"
    return _with(st, ev.replica, rep._replace(checkpoint_hw=rep.hw)), OK


def _flush(cfg: Config, st: PartitionState, ev: Event) -> Outcome:
    rep = st.replicas[ev.replica]
    if not rep.alive:
        return st, f"{cfg.brokers[ev.replica]} is down"
    return _with(st, ev.replica, rep._replace(flushed=len(rep.log))), OK


def _stale_checkpoint(cfg: Config, st: PartitionState, ev: Event) -> Outcome:
    rep = st.replicas[ev.replica]
    return _with(st, ev.replica, rep._replace(checkpoint_hw=ev.value)), OK


def _kill(
    cfg: Config, st: PartitionState, i: int, rep: Replica, clean: bool = False
) -> PartitionState:
    """The process is gone: its outstanding fetch and delayed produce requests with it.

    With ``unclean_shutdown_detection`` (KIP-966) the broker also remembers whether it left
    its clean-shutdown marker (``.kafka_cleanshutdown``): only a controlled shutdown does.
    """
    if cfg.generation.unclean_shutdown_detection:
        rep = rep._replace(alive=False, paused=False, role="none", unclean_stop=not clean)
    else:
        rep = rep._replace(alive=False, paused=False, role="none")
    return _fail_pending(_with_inflight(st, i, rep, i, None), i)


def _crash(cfg: Config, st: PartitionState, ev: Event) -> Outcome:
    rep = st.replicas[ev.replica]
    if not rep.alive:
        return st, f"{cfg.brokers[ev.replica]} is already down"
    st = _kill(cfg, st, ev.replica, rep)
    return st._replace(crashes=st.crashes + 1), OK


def _power_loss(cfg: Config, st: PartitionState, ev: Event) -> Outcome:
    rep = st.replicas[ev.replica]
    lost = len(rep.log) - rep.flushed
    rep = truncate(rep, rep.flushed)
    if rep.alive:
        st = _kill(cfg, st, ev.replica, rep)
    else:
        if cfg.generation.unclean_shutdown_detection:
            rep = rep._replace(unclean_stop=True)  # the harness removes .kafka_cleanshutdown
        st = _with(st, ev.replica, rep)
    return st._replace(power_losses=st.power_losses + 1), f"unflushed tail lost: {lost} records"


def _restart(cfg: Config, st: PartitionState, ev: Event) -> Outcome:
    i = ev.replica
    rep = st.replicas[i]
    if rep.alive:
        return st, f"{cfg.brokers[i]} is already running"
    n = len(st.replicas)
    leo = len(rep.log)
    rep = rep._replace(
        alive=True,
        paused=False,
        halted=False,
        hw=min(rep.checkpoint_hw, leo),
        epochs=ec.truncate_from_end(rep.epochs, leo),
        role="none",
        leader=NO_LEADER,
        needs_truncation=False,
        remote_leo=(0,) * n,
    )
    # The old process's connection is gone: the harness plays a restart the controller did
    # not notice by failing the controller over, which drops every queue (controller_queue).
    st = _with_controller(st, cq.drop(st.controller, frozenset({i})))
    if st.cuts and session_cut(cfg, st.cuts, i):
        # The process runs but cannot register (no ZooKeeper session / no
        # BrokerRegistration reaches the quorum): it registers when the cut heals.
        where = NODE_NAMES[session_node(cfg)]
        return _with(st, i, rep), f"{cfg.brokers[i]} cut from {where}: registration waits"
    if cfg.generation.kraft:
        return _kraft_register(cfg, _with(st, i, rep), i, ev.hold)
    return _register(cfg, _with(st, i, rep), i, ev.hold)


def _register(cfg: Config, st: PartitionState, i: int, hold: frozenset[int]) -> Outcome:
    """onBrokerStartup: the controller hears the broker; an offline partition may elect it."""
    if cfg.generation.kraft:
        return _kraft_unfence(cfg, st, i, hold)
    ctrl = st.controller
    live = ctrl.live | {i}
    ctrl = ctrl._replace(live=live)
    if ctrl.leader == NO_LEADER:
        elected = _elect(cfg, ctrl, live)
        if elected is not None:
            st = _broadcast(st, elected, hold)
            return _deliver(cfg, st), f"controller elects {cfg.brokers[elected.leader]}"
    held = ctrl.held | ({i} if i in hold else frozenset())
    st = _with_controller(st, ctrl._replace(pending=ctrl.pending | {i}, held=held))
    return _deliver(cfg, st), OK


def _pause(cfg: Config, st: PartitionState, ev: Event) -> Outcome:
    rep = st.replicas[ev.replica]
    if not _reachable(rep):
        return st, f"{cfg.brokers[ev.replica]} is not running"
    return _with(st, ev.replica, rep._replace(paused=True)), OK


def _resume(cfg: Config, st: PartitionState, ev: Event) -> Outcome:
    i = ev.replica
    rep = st.replicas[i]
    if not rep.paused:
        return st, f"{cfg.brokers[i]} is not paused"
    st = _with(st, i, rep._replace(paused=False))
    if i not in st.controller.live:
        if st.cuts and session_cut(cfg, st.cuts, i):
            return _deliver(cfg, st), f"{cfg.brokers[i]} cut: registers again at the heal"
        return _register(cfg, st, i, ev.hold)  # its session expired: it registers again
    return _deliver(cfg, st), OK


def _clean_shutdown(cfg: Config, st: PartitionState, ev: Event) -> Outcome:
    """Controlled shutdown: leadership moves, the broker flushes and checkpoints, then stops."""
    i = ev.replica
    rep = st.replicas[i]
    if not _reachable(rep):
        return st, f"{cfg.brokers[i]} is not running"
    rep = rep._replace(flushed=len(rep.log), checkpoint_hw=rep.hw)
    st = _kill(cfg, st, i, rep, clean=True)
    st, note = _controller_failure(cfg, st, i, ev.hold)
    return st._replace(crashes=st.crashes + 1), note


# ------------------------------------------------------------------------- controller


def _controller_failure(cfg: Config, st: PartitionState, i: int, hold: frozenset[int]) -> Outcome:
    """onBrokerFailure: elect a new leader if ``i`` led, else drop ``i`` from the ISR."""
    if cfg.generation.kraft:
        return _kraft_fence(cfg, st, i, hold)
    # removeBroker: the controller's channel to i, and its queue, end with the session.
    ctrl = cq.drop(st.controller, frozenset({i}))
    live = ctrl.live - {i}
    ctrl = ctrl._replace(live=live)
    name = cfg.brokers[i]
    if ctrl.leader == i:
        elected = _elect(cfg, ctrl._replace(isr=ctrl.isr - {i}), live)
        if elected is not None:
            kind = "unclean " if elected.leader not in ctrl.isr else ""
            note = f"controller: {name} failed, {kind}elects {cfg.brokers[elected.leader]}"
            return _deliver(cfg, _broadcast(st, elected, hold)), note
        isr = ctrl.isr - {i}
        if not isr and not cfg.unclean:
            isr = ctrl.isr  # the last ISR member is kept so it can come back
        ctrl = ctrl._replace(leader=NO_LEADER, epoch=ctrl.epoch + 1, isr=isr)
        note = f"controller: {name} failed, no eligible leader: partition offline"
        return _deliver(cfg, _broadcast(st, ctrl, hold)), note
    if i in ctrl.isr and len(ctrl.isr) > 1:
        ctrl = ctrl._replace(isr=ctrl.isr - {i}, epoch=ctrl.epoch + 1)
        st = _broadcast(st, ctrl, hold)
        return _deliver(cfg, st), f"controller: {name} failed, removed from ISR"
    return _with_controller(st, ctrl), f"controller: {name} failed"


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
    if _reachable(st.replicas[i]):
        if not (st.cuts and session_cut(cfg, st.cuts, i)):
            return st, f"{cfg.brokers[i]} is alive: its session does not expire"
        st, note = _controller_failure(cfg, st, i, ev.hold)
        where = NODE_NAMES[session_node(cfg)]
        return st, f"{cfg.brokers[i]} cut from {where}: session expired; {note}"
    return _controller_failure(cfg, st, i, ev.hold)


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
    st = _deliver(cfg, _with_controller(st, ctrl))
    return st, (
        f"controller failed over: {name} missed {missed} queued LeaderAndIsr; "
        "the new controller sent the current state"
    )


def _elect_event(cfg: Config, st: PartitionState, ev: Event) -> Outcome:
    i = ev.replica
    ctrl = st.controller
    name = cfg.brokers[i]
    if cfg.generation.kraft:
        return _kraft_elect(cfg, st, ev)
    if ctrl.leader == i:
        return st, f"{name} already leads"
    if i not in ctrl.live:
        return st, f"controller considers {name} dead: cannot elect it"
    if i not in ctrl.isr and not ev.unclean:
        return st, f"{name} is not in the ISR: clean election refused"
    isr = ctrl.isr & ctrl.live | {i} if i in ctrl.isr else frozenset({i})
    ctrl = ctrl._replace(leader=i, epoch=ctrl.epoch + 1, isr=isr)
    return _deliver(cfg, _broadcast(st, ctrl, ev.hold)), f"controller elects {name}"


def _isr_shrink(cfg: Config, st: PartitionState, ev: Event) -> Outcome:
    f = ev.replica
    ctrl = st.controller
    if ctrl.leader == NO_LEADER:
        return st, "no leader"
    lead = st.replicas[ctrl.leader]
    if not _reachable(lead) or lead.role != "leader" or lead.epoch != ctrl.epoch:
        return st, "the leader cannot update the ISR"
    if st.cuts and session_cut(cfg, st.cuts, ctrl.leader):
        # Partition.maybeShrinkIsr writes the ISR to ZooKeeper (KRaft: AlterPartition to the
        # controller); cut from it, the update fails and the ISR stays.
        return st, f"leader {cfg.brokers[ctrl.leader]} cut: it cannot update the ISR"
    if f == ctrl.leader or f not in lead.isr:
        return st, f"{cfg.brokers[f]} is not a follower in the ISR"
    if cfg.generation.kraft:
        # AlterPartition through the quorum controller: the ELR and the epoch rules apply.
        return _kraft_change(cfg, st, ctrl.isr - {f}, ev.hold, what="AlterPartition shrink")
    lead = _leader_hw(cfg, lead._replace(isr=lead.isr - {f}), ctrl.leader)
    st = _with(st, ctrl.leader, lead)._replace(controller=ctrl._replace(isr=lead.isr))
    return _complete_writes(cfg, st), OK


def _leader_and_isr(cfg: Config, st: PartitionState, ev: Event) -> Outcome:
    i = ev.replica
    ctrl = st.controller
    if i not in ctrl.held:
        return st, f"no LeaderAndIsr held back from {cfg.brokers[i]}"
    if st.cuts and controller_cut(st.cuts, i):
        return st, f"{cfg.brokers[i]} is still cut from the controller: LeaderAndIsr waits"
    st = _with_controller(st, ctrl._replace(held=ctrl.held - {i}))
    return _deliver(cfg, st), OK


# ------------------------------------------------------------------ KRaft controller


def _expand_elr(cfg: Config, ctrl: Controller) -> Controller:
    """ELR bookkeeping of an ISR expansion (AlterPartition adding one follower).

    ``PartitionChangeBuilder.maybePopulateTargetElr``: at or above min ISR the ELR is
    cleared, below it the joining replica leaves the ELR; the partition keeps a leader, so
    ``maybeUpdateLastKnownLeader`` clears LastKnownElr. A no-op outside KRaft + ELR.
    """
    if not cfg.generation.elr or not (ctrl.elr or ctrl.last_known_elr):
        return ctrl
    return ctrl._replace(elr=frozenset(), last_known_elr=frozenset())


def _kraft_change(
    cfg: Config,
    st: PartitionState,
    target_isr: frozenset[int],
    hold: frozenset[int],
    *,
    fenced: int = -1,
    unclean_shutdown: int = -1,
    add: int = -1,
    unclean: bool = False,
    prefer: int = -1,
    what: str = "",
) -> Outcome:
    """One PartitionChangeRecord of the quorum controller, replayed by every broker.

    Mirrors ``ReplicationControlManager.generateLeaderAndIsrUpdates`` +
    ``PartitionChangeBuilder.build`` (4.0): ``fenced`` (brokerToRemove) and
    ``unclean_shutdown`` (brokerWithUncleanShutdown) are never acceptable leaders, ``add``
    (brokerToAdd) is acceptable while still fenced. Then:

    - ELR (rule ``elr``, KIP-966): at or above min ISR the ELR is empty; below it
      ELR = (ELR + old ISR) - new ISR - unclean-shutdown replica. A valid leader is an
      acceptable ISR member, or an acceptable ELR member when the ISR is empty; with ISR
      and ELR empty the single LastKnownElr member (the last leader) may be elected
      uncleanly ("balanced recovery"). Leading from the ELR makes the new leader the sole
      ISR member. Any unclean election clears the ELR.
    - Unclean election when nothing is valid: ``unclean`` (ElectLeaders UNCLEAN), or the
      topic config from 3.9 (rule ``kraft_unclean_from_config``, KAFKA-12670); before 3.9
      ``ConfigurationControlManager.uncleanLeaderElectionEnabledForTopic`` returns false.
    - Without ELR the ISR is never emptied: the last member stays (like ZooKeeper mode).
    - The record carries no epoch: replay adds 1 when the leader field is set, i.e. on a
      leader change, and on an ISR shrink while metadata.version < 3.6 (rule
      ``no_epoch_bump_on_isr_shrink``, KAFKA-15021, turns that off).
    - LastKnownElr = [old leader] the first time the ISR empties; cleared once the
      partition has a leader again (``maybeUpdateLastKnownLeader``).
    """
    gen = cfg.generation
    ctrl = st.controller
    n = len(cfg.brokers)
    old_isr, leader = ctrl.isr, ctrl.leader
    live = ctrl.live

    def acceptable(r: int) -> bool:
        return r != fenced and r != unclean_shutdown and (r == add or r in live)

    elr, lke = ctrl.elr, ctrl.last_known_elr
    if gen.elr:
        if len(target_isr) >= cfg.min_insync:
            elr = frozenset()
        else:
            elr = (elr | old_isr) - target_isr - {unclean_shutdown}

    def valid(r: int) -> bool:
        return (r in target_isr or (not target_isr and r in elr)) and acceptable(r)

    new, was_unclean, how = leader, False, ""
    if prefer >= 0 and valid(prefer):
        new = prefer
    elif not (leader != NO_LEADER and valid(leader)):
        new = next((r for r in range(n) if valid(r)), NO_LEADER)
        if new == NO_LEADER and gen.elr and not elr and not target_isr and len(lke) == 1:
            (last,) = tuple(lke)
            if acceptable(last):
                new, was_unclean, how = last, True, " (last known leader, unclean)"
        if new == NO_LEADER and (unclean or (cfg.unclean and gen.kraft_unclean_from_config)):
            new = next((r for r in range(n) if acceptable(r)), NO_LEADER)
            was_unclean, how = new != NO_LEADER, " (unclean)"
    new_isr: frozenset[int] | None = None
    if new != leader:
        if new in elr:
            target_isr = frozenset({new})
            elr = elr - {new}
            how = " from ELR"
        if was_unclean:
            new_isr = frozenset({new})
    if was_unclean or not gen.elr:
        elr = frozenset()
    if new_isr is None and (target_isr or gen.elr) and target_isr != old_isr:
        new_isr = target_isr
    bump = new != leader
    if (
        not bump
        and new_isr is not None
        and not old_isr <= new_isr
        and not gen.no_epoch_bump_on_isr_shrink
    ):
        bump = True  # metadata.version < 3.6: record.setLeader(partition.leader)
    isr = old_isr if new_isr is None else new_isr
    if gen.elr:
        if new_isr is not None and not new_isr and leader != NO_LEADER and lke != {leader}:
            lke = frozenset({leader})
        elif new != NO_LEADER and lke:
            lke = frozenset()
    out = ctrl._replace(
        leader=new, epoch=ctrl.epoch + (1 if bump else 0), isr=isr, elr=elr, last_known_elr=lke
    )
    if out == ctrl:
        return st, ""
    names = cfg.brokers
    if new != leader:
        note = f"elects {names[new]}{how}" if new != NO_LEADER else "no eligible leader: offline"
    else:
        note = "ISR {" + ",".join(names[j] for j in sorted(isr)) + "}"
        if not bump:
            note += " (no epoch bump)"
    if gen.elr:
        note += f"; ELR {{{','.join(names[j] for j in sorted(elr))}}}"
        if lke:
            note += f" LastKnownElr {{{','.join(names[j] for j in sorted(lke))}}}"
    st = _broadcast(st, out, hold)
    st = _deliver(cfg, st)
    return _complete_writes(cfg, st), f"controller{': ' + what if what else ''}: {note}"


def _kraft_fence(cfg: Config, st: PartitionState, i: int, hold: frozenset[int]) -> Outcome:
    """handleBrokerFenced / handleBrokerInControlledShutdown: ``i`` leaves the ISR.

    Only partitions with ``i`` in the ISR change (``partitionsWithBrokerInIsr``): a fenced
    ELR member stays in the ELR.
    """
    ctrl = st.controller
    st = _with_controller(st, ctrl._replace(live=ctrl.live - {i}))
    name = cfg.brokers[i]
    if i not in ctrl.isr:
        return st, f"controller: {name} fenced"
    return _kraft_change(cfg, st, ctrl.isr - {i}, hold, fenced=i, what=f"{name} fenced")


def _kraft_register(cfg: Config, st: PartitionState, i: int, hold: frozenset[int]) -> Outcome:
    """A restarted broker registers a new incarnation, then is unfenced.

    ``ClusterControlManager.registerBroker``: a new incarnation ends the previous one
    (``handleBrokerShutdown``, 3.8+), even if the controller never noticed it die; in 3.3
    to 3.7 the registration is refused (DuplicateBrokerRegistrationException) until the old
    session expires and the controller fences it, which has the same effect. With
    ``unclean_shutdown_detection`` (KIP-966) a broker without its clean-shutdown marker is
    removed from the ISR *and* the ELR; otherwise it is handled as fenced (ISR only).
    """
    ctrl = st.controller
    rep = st.replicas[i]
    name = cfg.brokers[i]
    notes = []
    st = _with_controller(st, ctrl._replace(live=ctrl.live - {i}))
    if cfg.generation.unclean_shutdown_detection and rep.unclean_stop:
        if i in ctrl.isr or i in ctrl.elr:
            st, note = _kraft_change(
                cfg,
                st,
                ctrl.isr - {i},
                hold,
                unclean_shutdown=i,
                what=f"{name} re-registers after an unclean shutdown",
            )
            notes.append(note)
    elif i in ctrl.isr:
        st, note = _kraft_change(
            cfg, st, ctrl.isr - {i}, hold, fenced=i, what=f"{name} re-registers"
        )
        notes.append(note)
    st = _with(st, i, st.replicas[i]._replace(unclean_stop=False))
    st, note = _kraft_unfence(cfg, st, i, hold)
    notes.append(note)
    return st, "; ".join(n for n in notes if n)


def _kraft_unfence(cfg: Config, st: PartitionState, i: int, hold: frozenset[int]) -> Outcome:
    """handleBrokerUnfenced: ``i`` is active again; leaderless partitions try an election."""
    ctrl = st.controller
    st = _with_controller(st, ctrl._replace(live=ctrl.live | {i}))
    if ctrl.leader == NO_LEADER:
        st, note = _kraft_change(cfg, st, ctrl.isr, hold, add=i, what=f"{cfg.brokers[i]} unfenced")
        if st.controller.leader != NO_LEADER:
            return st, note
    ctrl = st.controller
    held = ctrl.held | ({i} if i in hold else frozenset())
    st = _with_controller(st, ctrl._replace(pending=ctrl.pending | {i}, held=held))
    return _deliver(cfg, st), OK


def _kraft_elect(cfg: Config, st: PartitionState, ev: Event) -> Outcome:
    """ElectLeaders: PREFERRED elects the named broker if it is a valid leader; UNCLEAN
    (``kafka-leader-election.sh --election-type unclean``, KIP-704) only for a partition
    without a leader (else ELECTION_NOT_NEEDED), picking the first acceptable replica."""
    ctrl = st.controller
    i = ev.replica
    name = cfg.brokers[i]
    if ev.unclean and ctrl.leader != NO_LEADER:
        return st, "ElectLeaders UNCLEAN: ELECTION_NOT_NEEDED (the partition has a leader)"
    if not ev.unclean:
        if ctrl.leader == i:
            return st, f"ElectLeaders PREFERRED: ELECTION_NOT_NEEDED ({name} already leads)"
        if i not in ctrl.live:
            return st, f"{name} is fenced or not registered: it cannot be elected"
        if not (i in ctrl.isr or (not ctrl.isr and i in ctrl.elr)):
            return st, f"{name} is not in the ISR: preferred election refused"
    st2, note = _kraft_change(
        cfg, st, ctrl.isr, ev.hold, unclean=ev.unclean, prefer=i, what="ElectLeaders"
    )
    if st2.controller.leader == ctrl.leader:
        return st, f"ElectLeaders: {name} not elected"
    return st2, note


def _partition(cfg: Config, st: PartitionState, ev: Event) -> Outcome:
    """iptables DROP on the given directed links (what each cut means: see the rules)."""
    return st._replace(cuts=st.cuts | ev.links), OK


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
        st = _with_controller(st, ctrl._replace(held=ctrl.held - released))
    notes = []
    for i, rep in enumerate(st.replicas):
        if not _reachable(rep):
            continue
        if not session_cut(cfg, before, i) or session_cut(cfg, st.cuts, i):
            continue
        name = cfg.brokers[i]
        live = i in st.controller.live
        if cfg.generation.kraft:
            if rep.role == "none":
                st, note = _kraft_register(cfg, st, i, frozenset())
                notes.append(f"{name} registers" + (f": {note}" if note else ""))
            elif not live:
                st, note = _kraft_unfence(cfg, st, i, frozenset())
                notes.append(f"{name} heartbeats again: unfenced" + (f"; {note}" if note else ""))
        elif rep.role == "none" or not live:
            st, note = _register(cfg, st, i, frozenset())
            what = "registers again (new session)" if not live else "registers"
            notes.append(f"{name} {what}" + (f": {note}" if note else ""))
    st = _deliver(cfg, st)
    return _complete_writes(cfg, st), "; ".join(notes)


HANDLERS: Final[dict[str, Callable[[Config, PartitionState, Event], Outcome]]] = {
    "produce": _produce,
    "fetch": _fetch,
    "fetch_request": _fetch_request,
    "fetch_response": _fetch_response,
    "leader_epoch_request": _leader_epoch_request,
    "checkpoint": _checkpoint,
    "flush": _flush,
    "crash": _crash,
    "power_loss": _power_loss,
    "clean_shutdown": _clean_shutdown,
    "restart": _restart,
    "pause": _pause,
    "resume": _resume,
    "detect": _detect,
    "elect": _elect_event,
    "isr_shrink": _isr_shrink,
    "leader_and_isr": _leader_and_isr,
    "controller_failover": _controller_failover,
    "stale_checkpoint": _stale_checkpoint,
    "partition": _partition,
    "heal": _heal,
}


def apply(cfg: Config, st: PartitionState, ev: Event) -> Outcome:
    """Apply one event. Returns the new state and a note (empty when nothing went wrong)."""
    return HANDLERS[ev.kind](cfg, st, ev)
