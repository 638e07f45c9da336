"""The KRaft controller's decisions, replayed from its ``__cluster_metadata`` log.

The metadata log *is* the controller's state: every decision (a broker registered, fenced,
a leader elected, the ISR or ELR changed) is a record, and replaying the records in order
rebuilds the image the brokers build (``MetadataDelta``/``PartitionRegistration.merge``).
Reading the controller's own log dir needs no client, works on every KRaft version (3.3 has
no DescribeTopicPartitions) and sees ELR and fencing, which the Metadata API does not show.

Replay rules mirrored from the broker source:
- ``PartitionRecord`` sets the whole registration (``PartitionRegistration(record)``).
- ``PartitionChangeRecord`` carries no leader epoch: ``PartitionRegistration.merge`` adds 1
  whenever ``Leader != -2`` (no change), a change to -1 (offline) included. Null ISR / ELR /
  LastKnownElr fields mean "unchanged".
- ``RegisterBrokerRecord`` (re)registers a broker, fenced unless the record says otherwise;
  ``BrokerRegistrationChangeRecord.Fenced`` is 1 (fence), -1 (unfence), 0 (unchanged);
  ``FenceBrokerRecord``/``UnfenceBrokerRecord`` do the same before metadata.version 3.3-IV2;
  ``UnregisterBrokerRecord`` removes the broker (``ClusterControlManager.replay``).
- ``ClearElrRecord`` (4.0) empties ELR and LastKnownElr of one topic, or of all.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.db.mode.view import PartitionView
from harness.db.names import PARTITION, TOPIC
from harness.readback.metadata_records import MetadataRecord, Schema, read_metadata_log

NO_LEADER_CHANGE = -2


@dataclass
class BrokerState:
    broker_id: int
    epoch: int
    fenced: bool = True
    in_controlled_shutdown: bool = False


@dataclass
class PartitionState:
    topic_id: str
    partition: int
    replicas: list[int]
    isr: list[int]
    leader: int
    leader_epoch: int
    elr: list[int] = field(default_factory=list)
    last_known_elr: list[int] = field(default_factory=list)
    recovery_state: int = 0


@dataclass
class MetadataImage:
    """What replaying the metadata log up to ``offset`` gives."""

    offset: int = -1
    raft_epoch: int = -1
    topics: dict[str, str] = field(default_factory=dict)  # name -> topic id
    partitions: dict[tuple[str, int], PartitionState] = field(default_factory=dict)
    brokers: dict[int, BrokerState] = field(default_factory=dict)
    features: dict[str, int] = field(default_factory=dict)

    def apply(self, rec: MetadataRecord) -> None:
        d = rec.data
        self.offset = rec.offset
        self.raft_epoch = rec.raft_epoch
        handler = getattr(self, f"_on_{rec.name}", None)
        if handler is not None:
            handler(d)

    def _on_TopicRecord(self, d: dict[str, Any]) -> None:
        self.topics[d["Name"]] = d["TopicId"]

    def _on_RemoveTopicRecord(self, d: dict[str, Any]) -> None:
        tid = d["TopicId"]
        self.topics = {n: t for n, t in self.topics.items() if t != tid}
        self.partitions = {k: v for k, v in self.partitions.items() if k[0] != tid}

    def _on_PartitionRecord(self, d: dict[str, Any]) -> None:
        self.partitions[(d["TopicId"], d["PartitionId"])] = PartitionState(
            topic_id=d["TopicId"],
            partition=d["PartitionId"],
            replicas=list(d.get("Replicas") or []),
            isr=list(d.get("Isr") or []),
            leader=d["Leader"],
            leader_epoch=d["LeaderEpoch"],
            elr=list(d.get("EligibleLeaderReplicas") or []),
            last_known_elr=list(d.get("LastKnownElr") or []),
            recovery_state=d.get("LeaderRecoveryState", 0),
        )

    def _on_PartitionChangeRecord(self, d: dict[str, Any]) -> None:
        p = self.partitions.get((d["TopicId"], d["PartitionId"]))
        if p is None:
            return
        if d.get("Isr") is not None:
            p.isr = list(d["Isr"])
        if d.get("Replicas") is not None:
            p.replicas = list(d["Replicas"])
        if d.get("Leader", NO_LEADER_CHANGE) != NO_LEADER_CHANGE:
            p.leader = d["Leader"]
            p.leader_epoch += 1
        if d.get("EligibleLeaderReplicas") is not None:
            p.elr = list(d["EligibleLeaderReplicas"])
        if d.get("LastKnownElr") is not None:
            p.last_known_elr = list(d["LastKnownElr"])
        if d.get("LeaderRecoveryState", -1) != -1:
            p.recovery_state = d["LeaderRecoveryState"]

    def _on_ClearElrRecord(self, d: dict[str, Any]) -> None:
        name = d.get("TopicName") or ""
        tid = self.topics.get(name) if name else None
        for (t, _), p in self.partitions.items():
            if tid is None or t == tid:
                p.elr, p.last_known_elr = [], []

    def _on_RegisterBrokerRecord(self, d: dict[str, Any]) -> None:
        self.brokers[d["BrokerId"]] = BrokerState(
            d["BrokerId"],
            d["BrokerEpoch"],
            fenced=bool(d.get("Fenced", True)),
            in_controlled_shutdown=bool(d.get("InControlledShutdown", False)),
        )

    def _on_UnregisterBrokerRecord(self, d: dict[str, Any]) -> None:
        b = self.brokers.get(d["BrokerId"])
        if b is not None and b.epoch == d["BrokerEpoch"]:
            del self.brokers[d["BrokerId"]]

    def _on_FenceBrokerRecord(self, d: dict[str, Any]) -> None:
        if (b := self.brokers.get(d["Id"])) is not None:
            b.fenced = True

    def _on_UnfenceBrokerRecord(self, d: dict[str, Any]) -> None:
        if (b := self.brokers.get(d["Id"])) is not None:
            b.fenced = False

    def _on_BrokerRegistrationChangeRecord(self, d: dict[str, Any]) -> None:
        b = self.brokers.get(d["BrokerId"])
        if b is None:
            return
        fenced = d.get("Fenced", 0)
        if fenced == 1:
            b.fenced = True
        elif fenced == -1:
            b.fenced = False
        if d.get("InControlledShutdown", 0) == 1:
            b.in_controlled_shutdown = True

    def _on_FeatureLevelRecord(self, d: dict[str, Any]) -> None:
        self.features[d["Name"]] = d["FeatureLevel"]

    def partition(self, topic: str, index: int) -> PartitionState | None:
        tid = self.topics.get(topic)
        return None if tid is None else self.partitions.get((tid, index))

    def live(self) -> tuple[int, ...]:
        return tuple(sorted(b for b, s in self.brokers.items() if not s.fenced))

    def fenced(self) -> tuple[int, ...]:
        return tuple(sorted(b for b, s in self.brokers.items() if s.fenced))


def replay(records: list[MetadataRecord]) -> MetadataImage:
    image = MetadataImage()
    for rec in records:
        image.apply(rec)
    return image


class KRaftView:
    """:class:`harness.db.mode.view.MetadataView` over one controller's metadata log dir.

    Re-reads the log on every call: during a run it is a few hundred small batches, and a
    fresh read cannot go stale. ``controller`` is the active controller's node id (the
    single-controller quorum's, or the one whose log is read).
    """

    def __init__(
        self, log_dir: Path, schemas: dict[int, Schema], controller: int, topic: str = TOPIC
    ) -> None:
        self.topic = topic  # the run's test topic, what ``topic=None`` below means
        self.log_dir = log_dir
        self.schemas = schemas
        self.controller = controller

    def image(self) -> MetadataImage:
        return replay(read_metadata_log(self.log_dir, self.schemas))

    def partition(
        self, topic: str | None = None, partition: int = PARTITION
    ) -> PartitionView | None:
        img = self.image()
        p = img.partition(topic or self.topic, partition)
        if p is None:
            return None
        return PartitionView(
            leader=p.leader,
            leader_epoch=p.leader_epoch,
            isr=tuple(sorted(p.isr)),
            live=img.live(),
            controller=self.controller,
            elr=tuple(sorted(p.elr)),
            last_known_elr=tuple(sorted(p.last_known_elr)),
            fenced=img.fenced(),
            extra={"metadata_offset": str(img.offset)},
        )

    def live_brokers(self) -> tuple[int, ...]:
        return self.image().live()

    def pending_deletions(self) -> tuple[str, ...]:
        return ()  # a TopicRecord's removal is one record: no deletion in progress to see

    def broker_epoch(self, broker_id: int) -> int | None:
        b = self.image().brokers.get(broker_id)
        return None if b is None else b.epoch

    def close(self) -> None:
        pass
