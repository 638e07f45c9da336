"""The leader-epoch cache (``leader-epoch-checkpoint``) and OffsetsForLeaderEpoch answers.

Mirrors ``kafka.server.epoch.LeaderEpochFileCache``: a list of (epoch, start_offset) entries
with increasing epochs and start offsets. ``end_offset_for`` differs by generation, which is
exactly what KIP-279 and KAFKA-7395 changed.
"""

from __future__ import annotations

from reference_model.profiles import Generation
from reference_model.state import UNDEFINED

Epochs = tuple[tuple[int, int], ...]


def assign(epochs: Epochs, epoch: int, start_offset: int) -> Epochs:
    """Record that ``epoch`` starts at ``start_offset`` (on append, or on election).

    Like ``LeaderEpochFileCache.assign``: only a newer epoch adds an entry; entries that
    would break monotonic start offsets are dropped first.
    """
    if epochs and epoch <= epochs[-1][0]:
        return epochs
    kept = tuple(e for e in epochs if e[1] < start_offset) if epochs else ()
    return (*kept, (epoch, start_offset))


def assign_or_replace(epochs: Epochs, epoch: int, start_offset: int) -> Epochs:
    """``LeaderEpochFileCache.assign`` from 2.1 (KAFKA-7415, rule ``assign_epoch_on_leader``).

    An entry is added unless it repeats the latest epoch at or after its start; the entries
    it conflicts with (an epoch not below it, or a start not before it) are dropped first
    (``truncateAndAppend``: "assume that the latest append is always accurate"). Before
    2.1 an older epoch was ignored (:func:`assign`), so a follower that had led an epoch
    with an empty log and then fetched an older epoch's batches kept a cache naming the
    newer epoch for them.
    """
    if epochs and epochs[-1][0] == epoch and start_offset >= epochs[-1][1]:
        return epochs
    kept = tuple(e for e in epochs if e[0] < epoch and e[1] < start_offset)
    return (*kept, (epoch, start_offset))


def truncate_from_end(epochs: Epochs, end_offset: int) -> Epochs:
    """Drop entries starting at or after ``end_offset`` (log truncated to that LEO)."""
    if not epochs or epochs[-1][1] < end_offset:
        return epochs
    return tuple(e for e in epochs if e[1] < end_offset)


def end_offset_for(gen: Generation, epochs: Epochs, leo: int, requested: int) -> tuple[int, int]:
    """Answer OffsetsForLeaderEpoch(requested) from this cache: (epoch, end_offset).

    kip101: (requested, LEO) if requested is the latest epoch, else (requested, start of the
    first higher epoch); UNDEFINED when the cache cannot say.
    kip279+: (largest epoch <= requested, start of the next higher epoch).
    kip320 (KAFKA-7395): an epoch older than every entry gets the first entry's start.
    """
    if requested == UNDEFINED or not epochs:
        return (UNDEFINED, UNDEFINED)
    latest = epochs[-1][0]
    if requested == latest:
        return (latest, leo)
    if requested > latest:
        return (UNDEFINED, UNDEFINED)
    nxt = next(i for i, e in enumerate(epochs) if e[0] > requested)
    if not gen.epoch_walkback:
        if requested < epochs[0][0]:
            return (UNDEFINED, UNDEFINED)
        return (requested, epochs[nxt][1])
    if nxt == 0:
        if gen.assign_epoch_on_leader:
            return (requested, epochs[0][1])
        return (UNDEFINED, UNDEFINED)
    return (epochs[nxt - 1][0], epochs[nxt][1])
