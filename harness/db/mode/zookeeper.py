"""ZooKeeper mode: a ZooKeeper node, a controller broker that hosts no replica, the brokers."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from harness.db import BrokerSpec, Cluster, TopicSpec
from harness.db.catalogue.kafka_config import (
    broker_properties,
    offsets_topic_znodes,
    topic_config,
    zookeeper_properties,
)
from harness.db.mode.base import SPARE_CONTROLLER, SPARE_CONTROLLER_ID, ZOOKEEPER, Mode, await_state
from harness.db.mode.zk_view import ZkView
from harness.db.names import CONTROLLER

if TYPE_CHECKING:
    from harness.db.mode.view import MetadataView


# ---------------------------------------------------------------------------- ZooKeeper


class ZooKeeperMode(Mode):
    """ZooKeeper + a controller broker that hosts no replica + the scenario's brokers.

    ``detect`` deletes the dead broker's ephemeral registration, which is what the expiry of
    its ZooKeeper session does; the session timeout (60 s) is longer than any run's pauses.

    A run that fails the controller over (:mod:`harness.nemesis.failover`) also gets a
    *spare*: a second broker that hosts no replica (``controller2``, id 92), started after
    the controller broker won its election, so controllership can move to a broker no
    scenario fault touches. Clients then bootstrap from both.
    """

    name = "zookeeper"
    spare: str | None = None

    def add_spare(self, cluster: Cluster, port: int) -> str:
        """Add the spare controller-eligible broker to ``cluster`` (before it starts)."""
        if self.spare is None:
            spec = BrokerSpec(
                SPARE_CONTROLLER,
                SPARE_CONTROLLER_ID,
                port,
                cluster.workdir / SPARE_CONTROLLER / "data",
            )
            cluster.nodes[SPARE_CONTROLLER] = spec
            cluster.brokers[SPARE_CONTROLLER] = spec
            self.spare = SPARE_CONTROLLER
        return SPARE_CONTROLLER

    def controller_brokers(self) -> list[str]:
        """The brokers that may be controller: never a scenario broker."""
        return [CONTROLLER] + ([self.spare] if self.spare else [])

    def make_nodes(
        self, broker_names: list[str], workdir: Path, free_port: Callable[[], int]
    ) -> dict[str, BrokerSpec]:
        nodes = {ZOOKEEPER: BrokerSpec(ZOOKEEPER, -1, free_port(), workdir / ZOOKEEPER / "data",
                                       role="zookeeper")}  # fmt: skip
        for i, name in enumerate([CONTROLLER, *broker_names]):
            nodes[name] = BrokerSpec(name, i, free_port(), workdir / name / "data")
        return nodes

    def zk_connect(self, cluster: Cluster) -> str:
        return "{}:{}".format(*cluster.node_address(ZOOKEEPER))

    def _peer_zk_connect(self, cluster: Cluster) -> str:
        return f"{cluster.peer_host(ZOOKEEPER)}:{cluster.peer_port(ZOOKEEPER)}"

    def start(self, cluster: Cluster) -> None:

        zk = cluster.nodes[ZOOKEEPER]
        zk.data_dir.mkdir(parents=True, exist_ok=True)
        host = "0.0.0.0" if cluster.peer_host(ZOOKEEPER) != "127.0.0.1" else "127.0.0.1"
        cluster.launch(
            ZOOKEEPER,
            "org.apache.zookeeper.server.quorum.QuorumPeerMain",
            zookeeper_properties(
                cluster.node_path(ZOOKEEPER, "data"), cluster.peer_port(ZOOKEEPER), host=host
            ),
        )

        def zk_up() -> bool:
            with ZkView(self.zk_connect(cluster), timeout=2.0):
                return True

        await_state(cluster, zk_up, "ZooKeeper to listen", ZOOKEEPER, self.startup_timeout)
        cluster.start_broker(CONTROLLER)
        with ZkView(self.zk_connect(cluster)) as view:
            await_state(
                cluster,
                lambda: view.controller() == 0,
                "the controller broker to be elected",
                CONTROLLER,
                self.startup_timeout,
            )

            for path, doc in offsets_topic_znodes(0).items():
                import json

                view.create(path, json.dumps(doc).encode())
            for name in cluster.brokers:
                if name != CONTROLLER:
                    cluster.start_broker(name)
            ids = tuple(sorted(b.broker_id for b in cluster.brokers.values()))
            await_state(
                cluster,
                lambda: view.live_brokers() == ids,
                f"brokers {ids} to register",
                None,
                self.startup_timeout,
            )

    def broker_config(self, cluster: Cluster, name: str) -> tuple[str, dict[str, str]]:
        spec = cluster.brokers[name]
        props = broker_properties(
            self.version,
            spec.broker_id,
            cluster.peer_host(name),
            cluster.peer_port(name),
            cluster.node_path(name, "data"),
            self._peer_zk_connect(cluster),
        )
        return "kafka.Kafka", props

    def bootstrap(self, cluster: Cluster) -> str:
        """Clients bootstrap from the controller broker(s), which no scenario fault touches.

        With a spare both are listed: a failover kills one of them for a while.
        """
        return ",".join(
            "{}:{}".format(*cluster.broker_address(n)) for n in self.controller_brokers()
        )

    def create_topic(self, cluster: Cluster, spec: TopicSpec) -> None:
        """Write the assignment and config znodes (milliseconds, every ZK-mode version)."""

        with ZkView(self.zk_connect(cluster)) as zk:
            zk.create_topic(spec.name, self.replica_ids(cluster, spec.replicas), topic_config(spec))

    def view(self, cluster: Cluster) -> MetadataView:

        return ZkView(self.zk_connect(cluster))

    def declare_dead(self, cluster: Cluster, name: str) -> bool:

        with ZkView(self.zk_connect(cluster)) as zk:
            return zk.expire_registration(cluster.brokers[name].broker_id)
