"""Immutable state of one partition: replicas, controller, in-flight fetches, producer.

Everything is a ``NamedTuple`` of ints, strings, tuples and frozensets, so a state is
hashable (the explorer deduplicates on it), cheap to copy with ``_replace`` and easy to print.
Replicas are addressed by index into ``Config.brokers``; names appear only at the edges.

Why the broker's own view (``role``, ``leader``, ``epoch``, ``isr``) is kept apart from the
controller's: the anomalies live in the gap between them (a follower that has not yet heard of
a new epoch, a leader that no longer is one), so the model must be able to hold both.
"""

from __future__ import annotations

from typing import Final, NamedTuple

from reference_model.profiles import Generation

NO_LEADER: Final = -1
UNDEFINED: Final = -1

# Write statuses, as the producer sees them.
SENT: Final = "sent"  # acks=0: handed to the network, no acknowledgement ever comes
PENDING: Final = "pending"  # acks=all, appended, waiting for the HW to pass it
ACKED: Final = "acked"
REFUSED: Final = "refused"  # NotEnoughReplicas before append
FAILED: Final = "failed"  # NotLeader / timeout / NotEnoughReplicasAfterAppend


class LogEntry(NamedTuple):
    """One record in a replica's log; its offset is its index in the log tuple."""

    epoch: int  # leader epoch of the batch that wrote it (partitionLeaderEpoch)
    record: str  # record id


class Replica(NamedTuple):
    """One broker's replica of the partition, plus that broker's view of who leads."""

    log: tuple[LogEntry, ...] = ()
    hw: int = 0  # in-memory high watermark
    checkpoint_hw: int = 0  # replication-offset-checkpoint: what a restart reads back
    flushed: int = 0  # recovery point: the prefix that survives a power loss
    epochs: tuple[tuple[int, int], ...] = ()  # leader-epoch-checkpoint: (epoch, start_offset)
    alive: bool = True
    paused: bool = False  # SIGSTOP: alive but answers nothing
    halted: bool = False  # the broker stopped itself rather than truncate
    role: str = "follower"  # leader | follower | none (no LeaderAndIsr since start)
    leader: int = NO_LEADER  # leader according to the last LeaderAndIsr it processed
    epoch: int = 0  # leader epoch according to that LeaderAndIsr
    isr: frozenset[int] = frozenset()  # ISR as this broker knows it (used when leading)
    needs_truncation: bool = False  # follower must run OffsetsForLeaderEpoch before fetching
    remote_leo: tuple[int, ...] = ()  # leader only: fetch offset each follower last sent
    leader_start: int = 0  # leader only: LEO when it became leader (KAFKA-7128; else 0)
    unclean_stop: bool = False  # last stop was a crash/power loss (KIP-966; else False)

    @property
    def leo(self) -> int:
        """Log end offset: the offset the next record gets."""
        return len(self.log)

    @property
    def latest_epoch(self) -> int:
        return self.epochs[-1][0] if self.epochs else UNDEFINED


class QueuedLeaderAndIsr(NamedTuple):
    """A LeaderAndIsr waiting in the ZooKeeper controller's queue for one broker.

    ``ControllerChannelManager`` keeps one queue per live broker (see
    ``reference_model.controller_queue``): the decision as it was when it was made.
    """

    broker: int  # the broker it is for
    leader: int
    epoch: int
    isr: frozenset[int]


class Controller(NamedTuple):
    """The controller's view, i.e. what ZooKeeper (or KRaft) holds for the partition.

    In KRaft mode ``live`` is the set of registered, unfenced brokers (a clean shutdown
    leaves it too), and ``elr``/``last_known_elr`` are the PartitionRecord fields of KIP-966.
    """

    leader: int
    epoch: int
    isr: frozenset[int]
    live: frozenset[int]  # brokers the controller believes alive (registered sessions)
    pending: frozenset[int] = frozenset()  # LeaderAndIsr sent but not yet processed
    held: frozenset[int] = frozenset()  # brokers whose LeaderAndIsr is delayed in the network
    elr: frozenset[int] = frozenset()  # KIP-966 EligibleLeaderReplicas (KRaft + ELR only)
    last_known_elr: frozenset[int] = frozenset()  # KIP-966 LastKnownElr: the last leader
    # ZooKeeper mode: LeaderAndIsr requests waiting for a broker that cannot hear the
    # controller now, oldest first (rule ``controller_queue``).
    queued: tuple[QueuedLeaderAndIsr, ...] = ()


class FetchResponse(NamedTuple):
    """A fetch response on the wire: sent by ``leader`` but not yet processed."""

    leader: int
    leader_epoch: int
    fetch_offset: int
    entries: tuple[LogEntry, ...]
    hw: int


class Write(NamedTuple):
    """One produce request as the producer saw it."""

    record: str
    status: str
    offset: int = UNDEFINED
    leader: int = NO_LEADER
    epoch: int = UNDEFINED


class PartitionState(NamedTuple):
    replicas: tuple[Replica, ...]
    controller: Controller
    inflight: tuple[FetchResponse | None, ...]  # per follower: its outstanding response
    writes: tuple[Write, ...] = ()
    crashes: int = 0  # faults injected so far (the explorer bounds them)
    power_losses: int = 0
    # Network links currently cut, directed (src, dst); nodes are broker indices or the
    # *_NODE constants of reference_model.events (controller, zookeeper, client).
    cuts: frozenset[tuple[int, int]] = frozenset()


class Config(NamedTuple):
    """Static settings of a run: topic, producer and protocol generation."""

    brokers: tuple[str, ...]
    generation: Generation
    acks: str = "all"  # "0" | "1" | "all"
    min_insync: int = 1
    unclean: bool = False  # unclean.leader.election.enable


def initial_state(config: Config, leader: int = 0) -> PartitionState:
    """A freshly created partition: every replica in the ISR, empty logs, epoch 0."""
    n = len(config.brokers)
    everyone = frozenset(range(n))
    reps = []
    for i in range(n):
        is_leader = i == leader
        epochs: tuple[tuple[int, int], ...] = ()
        if is_leader and config.generation.assign_epoch_on_leader:
            epochs = ((0, 0),)
        reps.append(
            Replica(
                epochs=epochs,
                role="leader" if is_leader else "follower",
                leader=leader,
                epoch=0,
                isr=everyone,
                remote_leo=(0,) * n,
            )
        )
    return PartitionState(
        replicas=tuple(reps),
        controller=Controller(leader=leader, epoch=0, isr=everyone, live=everyone),
        inflight=(None,) * n,
    )


# ------------------------------------------------------------ rebuilding a state, readably
# Most steps change one replica, its in-flight fetch or the controller's view. These say so in
# one call; they are plain ``_replace`` (the explorer installs a faster ``_replace`` for the
# duration of a search, generated from these classes: ``explorer.fast_replace``).


def with_replica(st: PartitionState, i: int, rep: Replica) -> PartitionState:
    """``st`` with replica ``i`` replaced by ``rep``; ``st`` itself when it is the same."""
    if st.replicas[i] is rep:
        return st
    reps = list(st.replicas)
    reps[i] = rep
    return st._replace(replicas=tuple(reps))


def with_inflight(
    st: PartitionState, i: int, rep: Replica | None, f: int, resp: FetchResponse | None
) -> PartitionState:
    """``st`` with replica ``i`` replaced by ``rep`` (unless None) and follower ``f``'s
    in-flight fetch response by ``resp``; ``st`` itself when nothing changes."""
    replicas = st.replicas
    if rep is not None:
        reps = list(replicas)
        reps[i] = rep
        replicas = tuple(reps)
    if st.inflight[f] is resp:
        return st if rep is None else st._replace(replicas=replicas)
    inflight = list(st.inflight)
    inflight[f] = resp
    return st._replace(replicas=replicas, inflight=tuple(inflight))


def with_controller(st: PartitionState, ctrl: Controller) -> PartitionState:
    """``st`` with the controller's view replaced by ``ctrl``; ``st`` itself when it is the
    same (many steps pass the view on unchanged: no queue to drop, nothing decided)."""
    if st.controller is ctrl:
        return st
    return st._replace(controller=ctrl)
