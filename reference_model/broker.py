"""The broker's rules: one partition's ``Partition``, ``Log`` and replica fetcher.

Each function is one broker action, named after the Kafka method it mirrors: append and
truncate (``Log``), the leader's high watermark and delayed produce (``Partition``), fetch and
OffsetsForLeaderEpoch (``ReplicaFetcherThread``/``AbstractFetcherThread``), becoming leader
or follower (``Partition.makeLeader``/``makeFollower``), and the process and its disk (crash,
power loss, controlled shutdown, restart). Every rule that differs between releases reads a
flag of ``cfg.generation`` named after ``rules.RULES`` (KIP/JIRA and first release there).

Nothing here decides leadership: that is the controller's (``reference_model.controller``).
The one place a broker asks the controller something while it acts, the leader adding a
caught-up follower to the ISR, takes the controller's answer as an argument
(``isr_expanded``), as ``Partition`` holds an ``AlterPartitionManager`` (or a ZooKeeper
client) rather than knowing which controller runs. Pure: no I/O, clocks or randomness; a step
that cannot take effect returns the state unchanged plus a note naming the Kafka error.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from reference_model import epochs as ec
from reference_model.cuts import client_cut, severed
from reference_model.events import Event
from reference_model.kinds import handles
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
    with_controller,
    with_inflight,
    with_replica,
)

Outcome = tuple[PartitionState, str]
OK: Final = ""
# The controller's answer to "the ISR is now ``isr``" (AlterPartition / the ZooKeeper write).
IsrExpanded = Callable[[Config, Controller, frozenset[int]], Controller]


def reachable(rep: Replica) -> bool:
    """The broker's process runs and answers (not crashed, not SIGSTOPped)."""
    return rep.alive and not rep.paused


# ---------------------------------------------------------------------------- the log


def truncate(rep: Replica, offset: int) -> Replica:
    """``Log.truncateTo``: cut the log, HW, recovery point and epoch cache back to ``offset``."""
    if offset >= len(rep.log):
        return rep
    return rep._replace(
        log=rep.log[:offset],
        hw=min(rep.hw, offset),
        flushed=min(rep.flushed, offset),
        epochs=ec.truncate_from_end(rep.epochs, offset),
    )


def follower_truncate(cfg: Config, rep: Replica, offset: int) -> Replica:
    """A follower's ``ReplicaFetcherThread.truncate`` (epoch or out-of-range truncation).

    Rule ``truncate_cleans_epoch_cache`` (KAFKA-10706): a truncation at or past the LEO
    changes no record but drops cache entries starting at the LEO.

    Rule ``hw_in_log`` (2.4): ``Log.truncateTo`` -> ``updateLogEndOffset`` lowers the HW to
    the new LEO. Before, the HW lives in ``Replica.highWatermark``, which the truncation
    leaves alone (2.1.1 ``ReplicaFetcherThread.truncate`` only warns); the broker keeps
    checkpointing it above its LEO until the next Fetch answer sets min(LEO, leader's HW).
    """
    if offset >= len(rep.log):
        # KAFKA-10706 (rule truncate_cleans_epoch_cache): "Truncating to N has no effect",
        # but the cache is still cut at the LEO: an epoch this broker led without appending
        # (KAFKA-7415 cached it on election) must not outlive the truncation.
        if cfg.generation.truncate_cleans_epoch_cache:
            return rep._replace(epochs=ec.truncate_from_end(rep.epochs, len(rep.log)))
        return rep
    cut = truncate(rep, offset)
    return cut if cfg.generation.hw_in_log else cut._replace(hw=rep.hw)


def append(cfg: Config, rep: Replica, entries: tuple[LogEntry, ...], hw: int = -1) -> Replica:
    """``Log.appendAsLeader``/``appendAsFollower``; v2 batches (rule ``epoch_in_log``, KIP-101)
    also extend the leader-epoch cache (``LeaderEpochFileCache.assign`` on append): before
    KAFKA-7415 only a newer epoch is recorded; with rule ``epoch_cache_replaces`` an older
    one replaces the entries it conflicts with.

    ``hw`` >= 0: a follower also takes the HW of the fetch response (capped at its new LEO).
    """
    epochs = rep.epochs
    if cfg.generation.epoch_in_log:
        offset = len(rep.log)
        replace = cfg.generation.epoch_cache_replaces
        for e in entries:
            if replace:
                epochs = ec.assign_or_replace(epochs, e.epoch, offset)
            elif not epochs or e.epoch > epochs[-1][0]:
                epochs = ec.assign(epochs, e.epoch, offset)
            offset += 1
    log = rep.log + entries
    if hw >= 0:
        return rep._replace(log=log, epochs=epochs, hw=min(hw, len(log)))
    return rep._replace(log=log, epochs=epochs)


# ------------------------------------------------------- leader HW and delayed produce


def leader_hw(cfg: Config, rep: Replica, me: int) -> Replica:
    """``Partition.maybeIncrementLeaderHW``: HW = max(HW, min(LEO of every ISR member, its
    own included)).

    ``hw_needs_min_isr`` (KAFKA-15583, 3.7): no advance while the ISR is smaller than
    min.insync.replicas.
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


def complete_writes(cfg: Config, st: PartitionState) -> PartitionState:
    """Answer acks=all produce requests whose offset the leader's HW has passed.

    Like ``Partition.checkEnoughReplicasReachOffset``: acknowledged only if the ISR still
    has min.insync.replicas members, else NotEnoughReplicasAfterAppend. The check needs the
    broker to be leader still, not the same leader epoch: a LeaderAndIsr that keeps it
    leader with a bumped epoch (the ZooKeeper controller dropping a dead follower, a KRaft
    ISR shrink before 3.6) raises the HW in ``Partition.makeLeader`` and completes the
    delayed produce (``tryCompleteDelayedRequests``). A leader that stepped down or died in
    between already failed its pending writes (``fail_pending``).
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


def fail_pending(st: PartitionState, leader: int) -> PartitionState:
    """A leader that dies or steps down fails its delayed produce requests
    (``DelayedProduce`` completes with NOT_LEADER_OR_FOLLOWER)."""
    if not any(w.status == PENDING and w.leader == leader for w in st.writes):
        return st
    return st._replace(
        writes=tuple(
            w._replace(status=FAILED) if w.status == PENDING and w.leader == leader else w
            for w in st.writes
        )
    )


# ------------------------------------------------------- LeaderAndIsr: leader or follower


def become_leader_or_follower(cfg: Config, st: PartitionState, i: int) -> PartitionState:
    """Broker ``i`` applies the controller's current decision (``ReplicaManager.
    becomeLeaderOrFollower``; KRaft: ``applyDelta`` of the replayed PartitionChangeRecord):
    ``Partition.makeLeader`` or ``Partition.makeFollower``."""
    ctrl = st.controller
    rep = st.replicas[i]
    n = len(st.replicas)
    if ctrl.leader == i:
        epochs = rep.epochs
        if cfg.generation.assign_epoch_on_leader:
            # KAFKA-7415: the new leader caches (its epoch, LEO) on election
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
                # leaderEpochStartOffsetOpt (KAFKA-7128)
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
        st = with_replica(st, i, leader_hw(cfg, rep, i))
        return complete_writes(cfg, st)
    # Partition.makeFollower: nothing to do if the leader is the same; from KAFKA-7164
    # (2.0.1) only if the epoch moved by at most one, else an update was missed and the
    # leader's log may have been truncated meanwhile: become follower again (truncate).
    leader_changed = not (
        rep.role == "follower"
        and rep.leader == ctrl.leader
        and (not cfg.generation.truncate_on_missed_epoch or ctrl.epoch - rep.epoch in (0, 1))
    )
    if rep.role == "leader":
        st = fail_pending(st, i)
    if leader_changed and ctrl.leader != NO_LEADER and cfg.generation.epoch_truncation:
        # KIP-101: truncation waits for OffsetsForLeaderEpoch (``offsets_for_leader_epoch``)
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
    return with_replica(st, i, rep)


# -------------------------------------------------------------------------- producer


@handles("produce")
def produce(cfg: Config, st: PartitionState, ev: Event) -> Outcome:
    """``ReplicaManager.appendRecords`` on the broker the client sends to (the leader as the
    controller knows it, unless the step names a broker)."""
    target = ev.replica if ev.replica >= 0 else st.controller.leader
    records = ev.record.split(",")

    def fail(status: str, note: str) -> Outcome:
        ws = tuple(Write(r, status) for r in records)
        return st._replace(writes=st.writes + ws), note

    if target == NO_LEADER:
        return fail(FAILED, "no leader: partition offline (LEADER_NOT_AVAILABLE)")
    rep = st.replicas[target]
    name = cfg.brokers[target]
    if not reachable(rep):
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
    rep = leader_hw(cfg, append(cfg, rep, entries), target)
    status = {"0": SENT, "1": ACKED}.get(cfg.acks, PENDING)
    ws = tuple(Write(r, status, base + k, target, rep.epoch) for k, r in enumerate(records))
    st = with_replica(st, target, rep)._replace(writes=st.writes + ws)
    return complete_writes(cfg, st), OK


# ---------------------------------------------------------------------------- fetching


def offsets_for_leader_epoch(cfg: Config, st: PartitionState, f: int) -> Outcome:
    """Follower ``f`` truncates by asking its leader OffsetsForLeaderEpoch (KIP-101, KIP-279
    walk-back; KIP-320 fencing): ``AbstractFetcherThread.truncateToEpochEndOffsets``, the
    leader answering with ``LeaderEpochFileCache.endOffsetFor``."""
    gen = cfg.generation
    rep = st.replicas[f]
    lead = st.replicas[rep.leader]
    lname = cfg.brokers[rep.leader]
    if not reachable(lead):
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
            # KIP-279: step back to our own older epoch, ask again
            rep = follower_truncate(cfg, rep, f_end)
            requested = f_epoch
        note = f"OffsetsForLeaderEpoch: {note}; truncate to {target}"
    note += _kafka_14704(cfg, st.replicas[f], lead, target, cfg.brokers[f])
    rep = follower_truncate(cfg, rep, target)._replace(needs_truncation=False)
    return with_replica(st, f, rep), note


def _kafka_14704(cfg: Config, rep: Replica, lead: Replica, target: int, name: str) -> str:
    """KAFKA-14704 (2.8 until 3.4.1/3.5.0): the window before a diverging-epoch truncation.

    With truncation riding on the Fetch (KAFKA-10554), the answer that carries the diverging
    epoch also carries the leader's HW, and ``ReplicaFetcherThread.processPartitionData``
    applied it (HW = min(leader's HW, own LEO)) before ``truncateOnFetchResponse`` cut the
    tail: for that instant the follower's HW covers records that are about to go. The
    state after the event is the same either way (truncated, HW below the cut); the note
    names the records a follower-fetching consumer could have read meanwhile.
    """
    gen = cfg.generation
    if not gen.truncate_in_fetch or gen.follower_truncates_before_hw:
        return ""
    exposed_hw = min(lead.hw, len(rep.log))
    if exposed_hw <= max(target, rep.hw):
        return ""
    recs = [e.record for e in rep.log[max(target, rep.hw) : exposed_hw]]
    return (
        f"; KAFKA-14704: {name} applies the leader's HW {exposed_hw} before truncating to "
        f"{target}: {recs} readable from {name} until the truncation"
    )


def fetch_request(cfg: Config, st: PartitionState, ev: Event, isr_expanded: IsrExpanded) -> Outcome:
    """Follower ``ev.replica`` sends Fetch and its leader answers (``ReplicaManager.
    fetchMessages`` -> ``Partition.updateFollowerFetchState``); the answer is in flight until
    ``fetch_response``. ``isr_expanded`` is the controller's side of an ISR expansion."""
    f = ev.replica
    rep = st.replicas[f]
    name = cfg.brokers[f]
    if not reachable(rep):
        return st, f"{name} is down"
    if rep.role != "follower" or rep.leader == NO_LEADER:
        return st, f"{name} is not following anyone"
    if st.inflight[f] is not None:
        return st, f"{name} already has a fetch outstanding"
    l_idx = rep.leader
    lead = st.replicas[l_idx]
    lname = cfg.brokers[l_idx]
    if not reachable(lead):
        return st, f"leader {lname} unreachable"
    if st.cuts and severed(st.cuts, f, l_idx):
        # AbstractFetcherThread: the Fetch times out and is retried after a back-off.
        return st, f"cut from leader {lname}: fetch fails"
    note = OK
    if rep.needs_truncation:
        st, note = offsets_for_leader_epoch(cfg, st, f)
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
            st = with_replica(st, f, rep)
            return st, f"{name} halted: log truncation is not allowed (unclean election off)"
        st = with_replica(st, f, follower_truncate(cfg, rep, len(lead.log)))
        return st, f"OffsetOutOfRange: {name} truncates to leader LEO {len(lead.log)}"
    # ``readFromLocalLog`` reads the log, and the HW the answer carries, *before* the fetch
    # offset is counted (``initialHighWatermark``: 0.10.2.1 and 2.1.1 ``ReplicaManager.
    # readFromLocalLog`` ahead of ``updateFollowerLogReadResults``; 3.3.1 and 4.0
    # ``Partition.readRecords`` ahead of ``updateFollowerFetchState``).
    hw_read = lead.hw
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
        st = with_controller(st, isr_expanded(cfg, ctrl, lead.isr))
    lead = leader_hw(cfg, lead, l_idx)
    entries = lead.log[fetch_offset:]
    # An answer carrying records goes out at once (replica.fetch.min.bytes=1) with the HW
    # read before this fetch moved it; an empty one is parked (``DelayedFetch``) and its
    # ``onComplete`` reads the log again, after the move.
    resp = FetchResponse(l_idx, lead.epoch, fetch_offset, entries, hw_read if entries else lead.hw)
    st = with_inflight(st, l_idx, lead, f, resp)
    return complete_writes(cfg, st), note


@handles("fetch_response")
def fetch_response(cfg: Config, st: PartitionState, ev: Event) -> Outcome:
    """The follower processes its in-flight Fetch response (``AbstractFetcherThread.
    processFetchRequest`` -> ``ReplicaFetcherThread.processPartitionData``)."""
    f = ev.replica
    resp = st.inflight[f]
    rep = st.replicas[f]
    name = cfg.brokers[f]
    if resp is None:
        return st, f"{name} has no fetch outstanding"
    if not reachable(rep):
        return st, f"{name} is down"
    if st.cuts and severed(st.cuts, f, resp.leader):
        return st, f"cut from {cfg.brokers[resp.leader]}: the response waits for the heal"
    if rep.role != "follower" or rep.leader != resp.leader:
        st = with_inflight(st, f, None, f, None)
        return st, f"response from {cfg.brokers[resp.leader]} dropped: no longer its follower"
    if cfg.generation.fencing and rep.epoch != resp.leader_epoch:
        # KIP-320: a response from a superseded epoch is dropped
        st = with_inflight(st, f, None, f, None)
        return st, f"response from epoch {resp.leader_epoch} dropped (now {rep.epoch})"
    if resp.fetch_offset != len(rep.log):
        return with_inflight(st, f, None, f, None), "response dropped: fetch offset moved"
    rep = append(cfg, rep, resp.entries, resp.hw)
    return with_inflight(st, f, rep, f, None), OK


def fetch(cfg: Config, st: PartitionState, ev: Event, isr_expanded: IsrExpanded) -> Outcome:
    """A whole Fetch round: request, then response."""
    st, note = fetch_request(cfg, st, ev, isr_expanded)
    if st.inflight[ev.replica] is None:
        return st, note
    st, note2 = fetch_response(cfg, st, ev)
    return st, "; ".join(n for n in (note, note2) if n)


def leader_epoch_request(
    cfg: Config, st: PartitionState, ev: Event, isr_expanded: IsrExpanded
) -> Outcome:
    """A follower's pending truncation (KIP-101); from KAFKA-10554 (2.8) it rides on the
    first Fetch."""
    rep = st.replicas[ev.replica]
    name = cfg.brokers[ev.replica]
    if not cfg.generation.epoch_truncation:
        return st, "no OffsetsForLeaderEpoch before 0.11 (truncated to HW on becoming follower)"
    if not reachable(rep) or not rep.needs_truncation:
        return st, f"{name} has no truncation pending"
    st, note = offsets_for_leader_epoch(cfg, st, ev.replica)
    if cfg.generation.truncate_in_fetch and not st.replicas[ev.replica].needs_truncation:
        # KAFKA-10554 (2.8): no separate OffsetsForLeaderEpoch round; the truncation is
        # decided from the first Fetch, which is a fetch like any other (ISR join included)
        st, fetched = fetch(cfg, st, ev, isr_expanded)
        note = "; ".join(n for n in (note, "truncated on the first Fetch", fetched) if n)
    return st, note


# ------------------------------------------------------------------- disk and process


@handles("checkpoint")
def checkpoint(cfg: Config, st: PartitionState, ev: Event) -> Outcome:
    """``ReplicaManager.checkpointHighWatermarks``: the HW reaches
    replication-offset-checkpoint."""
    rep = st.replicas[ev.replica]
    if not rep.alive:
        return st, f"{cfg.brokers[ev.replica]} is down"
    return with_replica(st, ev.replica, rep._replace(checkpoint_hw=rep.hw)), OK


@handles("flush")
def flush(cfg: Config, st: PartitionState, ev: Event) -> Outcome:
    """``Log.flush``: the recovery point moves to the LEO (what survives a power loss)."""
    rep = st.replicas[ev.replica]
    if not rep.alive:
        return st, f"{cfg.brokers[ev.replica]} is down"
    return with_replica(st, ev.replica, rep._replace(flushed=len(rep.log))), OK


def kill(
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
    return fail_pending(with_inflight(st, i, rep, i, None), i)


@handles("crash")
def crash(cfg: Config, st: PartitionState, ev: Event) -> Outcome:
    """SIGKILL: the process dies; the page cache (and so the unflushed tail) survives."""
    rep = st.replicas[ev.replica]
    if not rep.alive:
        return st, f"{cfg.brokers[ev.replica]} is already down"
    st = kill(cfg, st, ev.replica, rep)
    return st._replace(crashes=st.crashes + 1), OK


@handles("power_loss")
def power_loss(cfg: Config, st: PartitionState, ev: Event) -> Outcome:
    """The machine loses power: the log keeps only what was flushed (the recovery point)."""
    rep = st.replicas[ev.replica]
    lost = len(rep.log) - rep.flushed
    rep = truncate(rep, rep.flushed)
    if rep.alive:
        st = kill(cfg, st, ev.replica, rep)
    else:
        if cfg.generation.unclean_shutdown_detection:
            rep = rep._replace(unclean_stop=True)  # the harness removes .kafka_cleanshutdown
        st = with_replica(st, ev.replica, rep)
    return st._replace(power_losses=st.power_losses + 1), f"unflushed tail lost: {lost} records"


def shut_down_cleanly(cfg: Config, st: PartitionState, i: int) -> PartitionState:
    """The broker's half of a controlled shutdown (``KafkaServer.shutdown``): it flushes
    (``LogManager.shutdown``), checkpoints its HW, leaves its clean-shutdown marker and
    stops. The controller's half (leadership moves) is the caller's."""
    rep = st.replicas[i]
    rep = rep._replace(flushed=len(rep.log), checkpoint_hw=rep.hw)
    return kill(cfg, st, i, rep, clean=True)


def start(cfg: Config, st: PartitionState, i: int) -> PartitionState:
    """The process starts again (``KafkaServer.startup``): log recovery keeps the log, the HW
    comes back from replication-offset-checkpoint (capped at the LEO), the epoch cache is
    cut to the LEO, and the broker has no role until it hears from the controller."""
    rep = st.replicas[i]
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
        remote_leo=(0,) * len(st.replicas),
    )
    return with_replica(st, i, rep)


@handles("pause")
def pause(cfg: Config, st: PartitionState, ev: Event) -> Outcome:
    """SIGSTOP: the process is alive but answers nothing."""
    rep = st.replicas[ev.replica]
    if not reachable(rep):
        return st, f"{cfg.brokers[ev.replica]} is not running"
    return with_replica(st, ev.replica, rep._replace(paused=True)), OK


def shrink_isr(cfg: Config, st: PartitionState, f: int) -> PartitionState:
    """``Partition.maybeShrinkIsr`` in ZooKeeper mode: the leader drops follower ``f`` from
    its own ISR (and writes it to ZooKeeper, the caller's part); its HW may advance."""
    leader = st.controller.leader
    lead = st.replicas[leader]
    lead = leader_hw(cfg, lead._replace(isr=lead.isr - {f}), leader)
    return with_replica(st, leader, lead)
