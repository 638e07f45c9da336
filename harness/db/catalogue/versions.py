"""The version catalogue: Kafka version -> model generation, message format, how to start it.

One table so that the local backend, the Docker backend, the matrix and the report agree on
what "0.10.2.1" means. A modern ZooKeeper-mode broker pinned to an inter-broker protocol
below 0.11 replicates with HW truncation, so it is offered as an ``hw`` variant
(``3.3.1-ibp0.10``). KRaft versions run a controller quorum instead of ZooKeeper
(``3.3.1-kraft`` from the 3.3.1 tree; ``4.0.0``, which has no ZooKeeper mode); ``4.0.0-elr``
formats its storage with KIP-966's ``eligible.leader.replicas.version=1``.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class KafkaVersion:
    """How to run one Kafka version and what the model should predict for it."""

    name: str  # what users type: 0.10.2.1, 3.3.1, 3.3.1-ibp0.10
    release: str  # the Apache release it runs
    scala: str
    generation: str  # reference-model profile (reference_model.profiles.generation)
    message_format: str  # v1 (no leader epoch on disk) or v2
    broker_props: dict[str, str] = field(default_factory=dict)
    # Java 17 needs these for brokers of every era (sun.nio.ch access from the network layer).
    jvm_flags: tuple[str, ...] = (
        "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED",
        "--add-opens=java.base/java.nio=ALL-UNNAMED",
        "--add-exports=java.base/sun.nio.ch=ALL-UNNAMED",
        "--add-opens=java.base/java.lang=ALL-UNNAMED",
        "--add-opens=java.base/java.util=ALL-UNNAMED",
        "--add-opens=java.base/java.util.concurrent=ALL-UNNAMED",
        "--add-opens=java.rmi/sun.rmi.transport=ALL-UNNAMED",
    )
    zk_client_broken_on_java14: bool = False  # ZooKeeper 3.4.13/3.4.14 clients
    mode: str = "zookeeper"  # zookeeper | kraft
    # KRaft features set at `kafka-storage format --feature NAME=LEVEL` (e.g. ELR).
    features: tuple[tuple[str, int], ...] = ()

    @property
    def dist_name(self) -> str:
        """The official release-tree name, e.g. ``kafka_2.11-0.10.2.1``."""
        return f"kafka_{self.scala}-{self.release}"

    @property
    def docker_image(self) -> str:
        """Image built by docker/Dockerfile.kafka from the official release tarball."""
        return f"hwchaos/kafka:{self.release}"

    @property
    def epoch_on_disk(self) -> bool:
        return self.message_format == "v2"

    @property
    def release_tuple(self) -> tuple[int, ...]:
        return tuple(int(x) for x in self.release.split("."))

    @property
    def log4j2(self) -> bool:
        """4.0 moved to log4j2 (``config/log4j2.yaml``, KIP-653)."""
        return self.release_tuple >= (4, 0)


CATALOGUE: dict[str, KafkaVersion] = {
    v.name: v
    for v in (
        KafkaVersion("0.10.2.1", "0.10.2.1", "2.11", "0.10.2.1", "v1"),
        KafkaVersion("0.11.0.3", "0.11.0.3", "2.11", "0.11.0.3", "v2"),
        KafkaVersion("1.1.1", "1.1.1", "2.11", "1.1.1", "v2"),
        KafkaVersion("2.0.1", "2.0.1", "2.11", "2.0.1", "v2"),
        KafkaVersion(
            "2.1.1",
            "2.1.1",
            "2.11",
            "2.1.1",
            "v2",
            zk_client_broken_on_java14=True,
        ),
        KafkaVersion("3.3.1", "3.3.1", "2.13", "3.3.1", "v2"),
        KafkaVersion("3.3.1-kraft", "3.3.1", "2.13", "3.3.1-kraft", "v2", mode="kraft"),
        KafkaVersion("4.0.0", "4.0.0", "2.13", "4.0.0", "v2", mode="kraft"),
        KafkaVersion(
            "4.0.0-elr",
            "4.0.0",
            "2.13",
            "4.0.0-elr",
            "v2",
            mode="kraft",
            features=(("eligible.leader.replicas.version", 1),),
        ),
        # Later releases beside 4.0.0 (release trees built locally from the source tags:
        # no official sha512 applies, like the other locally provided trees). 4.1 turns
        # KIP-966 ELR on by default (``4.1.0``); ``4.0.1-elr`` opts in as ``4.0.0-elr``.
        KafkaVersion("4.0.1", "4.0.1", "2.13", "4.0.1", "v2", mode="kraft"),
        KafkaVersion(
            "4.0.1-elr",
            "4.0.1",
            "2.13",
            "4.0.1-elr",
            "v2",
            mode="kraft",
            features=(("eligible.leader.replicas.version", 1),),
        ),
        KafkaVersion(
            "4.1.0",
            "4.1.0",
            "2.13",
            "4.1.0",
            "v2",
            mode="kraft",
            features=(("eligible.leader.replicas.version", 1),),
        ),
        KafkaVersion(
            "3.3.1-ibp0.10",
            "3.3.1",
            "2.13",
            "3.3.1-ibp0.10",
            "v1",
            broker_props={
                "inter.broker.protocol.version": "0.10.2",
                "log.message.format.version": "0.10.2",
            },
        ),
    )
}


def resolve_version(name: str) -> KafkaVersion:
    """Look a version up, with a one-line error listing what is known."""
    try:
        return CATALOGUE[name]
    except KeyError:
        known = ", ".join(CATALOGUE)
        raise ValueError(f"unknown Kafka version {name!r} (known: {known})") from None
