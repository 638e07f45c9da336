"""From facts to a scenario: the abstract ordering that leads to what the logs show.

Brokers log the controller's decisions and their own (start, truncation, leadership, ISR
changes, the LEO they recovered to) but never a produce or a fetch. The reconstruction
therefore walks the facts of all brokers in time order and, with the reference model
playing alongside, emits the scenario steps that make the model's state agree with each
fact:

- a broker's failure seen by the controller (``deleted brokers``, ``Fencing broker``) is a
  ``crash`` (or a ``power_loss`` when the LEO it recovers to on restart is below what it
  held: the unflushed tail was lost; a ``flush`` is placed where its LEO was that value)
  followed by ``detect``; a controlled shutdown is ``clean_shutdown``;
- a broker start after the first is a ``restart``; before 0.11 the offset it truncates to
  as a follower is its checkpointed HW, written as ``stale_checkpoint`` before the restart;
- acknowledged records (``--acked``) are produced to the model's leader when their offset
  is the leader's LEO (records whose offset does not fit wait for the next leader), and a
  live follower copies each record (two fetches: data, then the HW) unless a later fact
  about it (the offset it starts leading from, the LEO it recovers to) shows it never did;
  under acks=all an acknowledged record was copied by every in-sync follower;
- a follower's truncation after OffsetsForLeaderEpoch or its return to the ISR is a fetch;
- a follower is not assumed to catch up at the end: only logged evidence makes it fetch.

Every fact the model does not reproduce (another leader elected, another LEO) is recorded
as an ambiguity rather than forced.
"""

from __future__ import annotations

from collections.abc import Sequence

from harness.replay.factscan import order_facts
from harness.replay.parse import BrokerLogs
from harness.replay.play import Replay
from harness.replay.steps import MAX_SYNTH, Acked, Reconstruction
from harness.replay.versions import VersionInfo

__all__ = ["MAX_SYNTH", "Acked", "Reconstruction", "order_facts", "reconstruct"]


def reconstruct(
    brokers: Sequence[BrokerLogs],
    version: VersionInfo,
    acked: list[Acked] | None,
    acks: str | None,
    min_insync: int | None,
    name: str = "replay",
    power_loss_first: bool = False,
    append_unsure: bool = False,
    order: Sequence[str] | None = None,
    copy_unsure: frozenset[str] = frozenset(),
    split_at: int | None = None,
    copied_before: int = 0,
) -> Reconstruction:
    """One reconstruction. ``power_loss_first`` picks the other reading of a follower that
    comes back with fewer records than its leader wrote: it copied them and lost the
    unflushed tail to a power failure (instead of: it never copied them). ``append_unsure``
    reads a record the producer saw fail, that no later fact places, as appended by the
    leader of the first moment that could hold it (instead of: never appended)."""
    return Replay(
        brokers,
        version,
        acked,
        acks,
        min_insync,
        name,
        power_loss_first,
        append_unsure,
        order,
        copy_unsure,
        split_at,
        copied_before,
    ).run()
