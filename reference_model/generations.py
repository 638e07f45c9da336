"""Protocol generations: the only places where Kafka versions differ in the model.

Each flag names one rule of BACKGROUND.md ("Truncation on becoming follower / restart, by
generation"), so a reader can check a generation against the broker source of its era:

``hw`` (before 0.11)
    A follower truncates to its own HW whenever it becomes follower of a new leader (on
    restart: the checkpointed HW). Records carry no leader epoch (message format v0/v1).
``kip101`` (0.11 to 1.1)
    Records carry the leader epoch; the follower asks the leader OffsetsForLeaderEpoch(its
    latest epoch); the leader answers its LEO if that is its latest epoch, else the start
    offset of the next higher epoch; an unknown epoch falls back to HW truncation.
``kip279`` (2.0)
    The answer is (largest epoch <= requested, its end offset); a follower lacking that epoch
    steps back and asks again; a leader asked about an epoch newer than its own refuses.
``kip320`` (2.1 and later)
    Fetch and OffsetsForLeaderEpoch carry the current leader epoch: a replica with a stale
    epoch is fenced instead of served, and a response from a superseded epoch is dropped. A new
    leader writes its epoch into the cache on election (KAFKA-7395), and an epoch older than
    the cache's first entry is answered with that entry's start offset.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Generation:
    """Feature flags of one protocol generation (see module docstring)."""

    name: str
    kafka_versions: str
    epoch_in_log: bool  # message format v2: batches carry partitionLeaderEpoch
    epoch_truncation: bool  # KIP-101 OffsetsForLeaderEpoch on becoming follower
    epoch_walkback: bool  # KIP-279 (largest epoch <= requested, end offset) + step back
    fencing: bool  # KIP-320 current leader epoch in Fetch / OffsetsForLeaderEpoch
    assign_epoch_on_leader: bool  # KAFKA-7395: leader caches (epoch, LEO) on election


GENERATIONS: dict[str, Generation] = {
    g.name: g
    for g in (
        Generation("hw", "0.8 - 0.10.2", False, False, False, False, False),
        Generation("kip101", "0.11 - 1.1", True, True, False, False, False),
        Generation("kip279", "2.0", True, True, True, False, False),
        Generation("kip320", "2.1 and later", True, True, True, True, True),
    )
}


def generation(name: str) -> Generation:
    """Look a generation up by name, with an error that lists the valid names."""
    try:
        return GENERATIONS[name]
    except KeyError:
        valid = ", ".join(GENERATIONS)
        raise ValueError(f"unknown protocol generation {name!r} (valid: {valid})") from None
