"""The *mode* axis of a cluster: ZooKeeper or KRaft.

A mode says which nodes exist besides the scenario's brokers, how each is configured, how
the cluster comes up, how the test topic is created, how the controller's decisions are read
and how the harness makes the controller act on a dead broker. It never starts a process
itself: it asks the cluster's runtime (:meth:`harness.db.Cluster.launch`,
:meth:`harness.db.Cluster.run_tool`), so every mode runs on every runtime.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.db.mode.base import Mode, await_state
from harness.db.mode.kraft import KRaftMode
from harness.db.mode.zookeeper import ZooKeeperMode

if TYPE_CHECKING:
    from harness.db.catalogue.versions import KafkaVersion

__all__ = ["KRaftMode", "Mode", "ZooKeeperMode", "await_state", "check_controllers", "make_mode"]


def make_mode(version: KafkaVersion, controllers: int = 1) -> Mode:
    if version.mode == "kraft":
        return KRaftMode(version, controllers=controllers, features=dict(version.features))
    return ZooKeeperMode(version)


def check_controllers(version: KafkaVersion, controllers: int) -> None:
    """ValueError (one line) when ``version``'s mode cannot run ``controllers`` controllers.

    Only a KRaft quorum takes a size; called before anything starts.
    """
    if controllers != 1 and version.mode != "kraft":
        raise ValueError(f"--controllers {controllers}: {version.name} is not a KRaft version")
