"""What the controller has decided about the test partition: the one interface fences read.

Two implementations, one per mode: :class:`harness.db.mode.zk_view.ZkView` reads ZooKeeper (the
source of truth in ZooKeeper mode), :class:`harness.db.mode.kraft_view.KRaftView` replays the
controller's ``__cluster_metadata`` log. The generator only sees :class:`MetadataView`, so
a fence is written once and holds in both modes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from harness.db.names import PARTITION


@dataclass(frozen=True)
class PartitionView:
    """The controller's view of one partition (and of broker liveness)."""

    leader: int  # -1 when offline
    leader_epoch: int
    isr: tuple[int, ...]
    live: tuple[int, ...]  # registered and not fenced
    controller: int
    elr: tuple[int, ...] = ()  # KIP-966 eligible leader replicas (KRaft, 4.0+)
    last_known_elr: tuple[int, ...] = ()
    fenced: tuple[int, ...] = ()  # registered but fenced (KRaft)
    extra: dict[str, str] = field(default_factory=dict, compare=False)

    def describe(self) -> str:
        parts = [
            f"leader={self.leader}",
            f"epoch={self.leader_epoch}",
            f"isr={list(self.isr)}",
            f"live={list(self.live)}",
        ]
        if self.elr or self.last_known_elr:
            parts.append(f"elr={list(self.elr)} last_known_elr={list(self.last_known_elr)}")
        if self.fenced:
            parts.append(f"fenced={list(self.fenced)}")
        return " ".join(parts)


class MetadataView(Protocol):
    """Who leads, at which epoch, the ISR/ELR, which brokers are live or fenced."""

    def partition(
        self, topic: str | None = None, partition: int = PARTITION
    ) -> PartitionView | None:
        """The partition's state (``topic``: default the run's), or None before it exists."""
        ...

    def live_brokers(self) -> tuple[int, ...]:
        """Broker ids the controller considers alive (registered, unfenced)."""
        ...

    def pending_deletions(self) -> tuple[str, ...]:
        """Topics whose deletion was asked for and is not complete (ZooKeeper mode's
        ``/admin/delete_topics``, an asynchronous deletion; KRaft deletes in one record)."""
        ...

    def close(self) -> None:
        """Release connections; idempotent."""
        ...
