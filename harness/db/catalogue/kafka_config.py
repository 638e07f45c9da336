"""Broker and ZooKeeper settings shared by every backend.

Why each setting: the harness, not Kafka's timers, decides when things happen.

- ``replica.high.watermark.checkpoint.interval.ms`` is short (10 ms): every broker writes its
  own in-memory HW to ``replication-offset-checkpoint`` continuously, which is how the harness
  observes each replica's HW after every step and what a crashed broker restarts with
  (harness.readback.hw). The harness never writes a model-predicted HW into it; only the
  explicit ``stale_checkpoint`` fault rewrites it.
- ``replica.fetch.wait.max.ms`` (1 s): see :data:`FETCH_WAIT_MAX_MS`.
- ``replica.lag.time.max.ms`` is long: followers are paused between their fetch steps and
  must not drop out of the ISR on their own; ``isr_shrink`` is a scripted step.
- ``zookeeper.session.timeout.ms`` (60 s) bounds how long a follower may stay paused in
  total (a resume of a few milliseconds does not always let it ping ZooKeeper); ``detect``
  does not wait for it: the harness deletes the dead broker's registration itself.
- ``auto.leader.rebalance.enable=false``: no preferred-leader election behind the script.
- ``request.timeout.ms`` (ZooKeeper mode) is 5 s, not 30: a follower that becomes follower
  of another leader shuts its old fetcher thread down inside ``becomeLeaderOrFollower``
  (``ReplicaFetcherManager.shutdownIdleFetcherThreads``, under the replica state-change
  lock), and before 2.x that thread finishes its blocking Fetch first, bounded by this
  timeout (``ReplicaFetcherThread``'s NetworkClient). A fetch outstanding to a leader the
  harness holds paused therefore stalls every later LeaderAndIsr of that broker: on
  0.10.2.1 the second of two held-back LeaderAndIsr came ~30 s after the heal with the
  default, ~10 s with 10 s, 4.3-4.7 s with 5 s (controller-queue-two-leader-changes,
  controller-failover-missed-change). Five times ``replica.fetch.wait.max.ms``, so a Fetch
  parked its full time at a leader on a loaded machine is still answered within it.
  The controller's channel (``ControllerChannelManager``) uses the same timeout: a request
  to a broker paused longer than it is resent on a new connection.
- one partition, explicit assignment, no auto-created topics; ``__consumer_offsets`` (which
  the watermark queries' group lookups would otherwise create across the test brokers) is
  pre-created with one partition on the controller broker, out of harm's way.
"""

from __future__ import annotations

from harness.db.catalogue.versions import KafkaVersion
from harness.db.specs import TopicSpec
from harness.readback.hw import HW_CHECKPOINT_INTERVAL_MS

SESSION_TIMEOUT_MS = 60_000
CONTROLLER_HW_CHECKPOINT_INTERVAL_MS = 5_000
"""The HW checkpoint of a ZooKeeper-mode controller broker (and its spare): Kafka's default.
They host no replica of a run's partitions, so nothing reads their checkpoint; the 10 ms
of the replicas (:data:`HW_CHECKPOINT_INTERVAL_MS`) is most of an idle broker's CPU."""
LAG_TIME_MAX_MS = 600_000
FETCH_WAIT_MAX_MS = 1000
"""``replica.fetch.wait.max.ms``: a follower that has just appended sends its next Fetch at
once, and the leader parks it this long when there is nothing new. That is the window in
which the follower has the records but not yet the HW that covers them (the model's
``fetch`` is one request/response round): the fetch step must see the round and stop the
leader within it (playbook/settle.py ``_shield_from_leader``), and in a ``fetch: followers``
step the first follower's Fetch stays parked through the next follower's round, so a
crash of the leader after the step must come (or the leader be held:
playbook/crash.py ``hold_leader_before_its_kill``) within it too. It is also what a produce
step right after a fetch step waits out (playbook/produce.py) and what a record-less fetch
waits for, where the run's doorbell cannot answer those Fetches at once (playbook/bell.py:
runs with a run network, held requests or a controller failover).
500 ms was tried twice (28 Nov, 6 Dec: the six profiles' catalogue 494 -> 445 s
under ``matrix --jobs 3``) and not kept: in CI at load ~15-20 a two-follower fetch step
took 0.62 s, so the first follower's parked Fetch was answered before the leader was held
(tests/system/test_leader_hold_brokers.py failed on 0.10.2.1; docs/speed.md)."""
REQUEST_TIMEOUT_MS = 5_000  # ZooKeeper mode; see the module docstring
BROKER_RETRY_MS = 500
"""A KRaft broker's own ``broker.session.timeout.ms``: its registration and heartbeat retry
backoff is capped at this (3.3) or half of it (4.0); see :func:`kraft_broker_properties`.
A quarter of the controller's session (``KRaftMode.SESSION_TIMEOUT_MS``, 2 s), so a broker
whose heartbeat failed tries again well inside it, on 3.3 as on 4.0."""


def broker_properties(
    version: KafkaVersion,
    broker_id: int,
    host: str,
    port: int,
    log_dir: str,
    zk_connect: str,
) -> dict[str, str]:
    """server.properties for one broker (the same for local processes and containers)."""
    props = {
        "broker.id": str(broker_id),
        "listeners": f"PLAINTEXT://{host}:{port}",
        "advertised.listeners": f"PLAINTEXT://{host}:{port}",
        "log.dirs": log_dir,
        "zookeeper.connect": zk_connect,
        "zookeeper.session.timeout.ms": str(SESSION_TIMEOUT_MS),
        "zookeeper.connection.timeout.ms": "30000",
        "num.partitions": "1",
        "auto.create.topics.enable": "false",
        "auto.leader.rebalance.enable": "false",
        "delete.topic.enable": "true",
        "controlled.shutdown.enable": "true",
        "replica.high.watermark.checkpoint.interval.ms": str(HW_CHECKPOINT_INTERVAL_MS),
        "replica.lag.time.max.ms": str(LAG_TIME_MAX_MS),
        "replica.fetch.wait.max.ms": str(FETCH_WAIT_MAX_MS),
        "replica.fetch.backoff.ms": "100",
        "request.timeout.ms": str(REQUEST_TIMEOUT_MS),
        "offsets.topic.replication.factor": "1",
        "offsets.topic.num.partitions": "1",
        "transaction.state.log.replication.factor": "1",
        "transaction.state.log.min.isr": "1",
        "group.initial.rebalance.delay.ms": "0",
        "num.io.threads": "2",
        "num.network.threads": "2",
        "num.replica.fetchers": "1",
        "background.threads": "2",
        "log.cleaner.enable": "false",
        "log.flush.interval.messages": "9223372036854775807",
        "log.flush.scheduler.interval.ms": "3600000",
        "log.flush.offset.checkpoint.interval.ms": "3600000",
    }
    props.update(version.broker_props)
    return props


def _common(version: KafkaVersion, log_dir: str) -> dict[str, str]:
    """What a KRaft broker shares with a ZooKeeper-mode one (the timers the script owns)."""
    props = broker_properties(version, 0, "127.0.0.1", 0, log_dir, "")
    for key in ("broker.id", "listeners", "advertised.listeners", "zookeeper.connect",
                "zookeeper.session.timeout.ms", "zookeeper.connection.timeout.ms",
                "delete.topic.enable", "request.timeout.ms"):  # fmt: skip
        props.pop(key, None)
    return props


def kraft_controller_properties(
    version: KafkaVersion,
    node_id: int,
    host: str,
    port: int,
    log_dir: str,
    voters: str,
    session_timeout_ms: int,
) -> dict[str, str]:
    """A dedicated KRaft controller (``process.roles=controller``).

    ``broker.session.timeout.ms`` is the controller's: how long a silent broker keeps its
    session. It is short because the harness heartbeats for brokers the scenario keeps
    alive (see ``harness.db.mode.KRaftMode``), and a restart on 4.x waits for it.
    """
    return {
        "process.roles": "controller",
        "node.id": str(node_id),
        "controller.quorum.voters": voters,
        "controller.listener.names": "CONTROLLER",
        "listeners": f"CONTROLLER://{host}:{port}",
        "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
        "log.dirs": log_dir,
        "broker.session.timeout.ms": str(session_timeout_ms),
        "broker.heartbeat.interval.ms": "500",
        "metadata.max.idle.interval.ms": "2000",
        "auto.leader.rebalance.enable": "false",
        "num.io.threads": "2",
        "num.network.threads": "2",
        "background.threads": "2",
        "log.flush.interval.messages": "9223372036854775807",
        "offsets.topic.replication.factor": "1",
        "transaction.state.log.replication.factor": "1",
        "transaction.state.log.min.isr": "1",
    }


def kraft_broker_properties(
    version: KafkaVersion, node_id: int, host: str, port: int, log_dir: str, voters: str
) -> dict[str, str]:
    """A KRaft broker (``process.roles=broker``) with the same script-owned timers.

    ``broker.session.timeout.ms`` here is the *broker's* copy, not the session the
    controller keeps (that one is the controller's, :func:`kraft_controller_properties`).
    A broker reads it for two things only (``BrokerLifecycleManager``, ``BrokerServer``):
    the cap on the backoff between its registration and heartbeat attempts (half of it
    in 4.0, all of it in 3.3) and how long its heartbeat channel retries a request
    before giving up. At Kafka's default (9 s) a restarted broker that the controller
    refused while the old session lived (4.x: ``DuplicateBrokerRegistrationException``)
    waited up to 4.5 s more after the session had lapsed (seen: refused at +0.15, +0.4,
    +0.8, +1.6 s, lapsed, registered 0.9 s later). At :data:`BROKER_RETRY_MS` the broker
    asks again within half a second at most; what the controller decides is unchanged.
    """
    props = _common(version, log_dir)
    props.update(
        {
            "process.roles": "broker",
            "node.id": str(node_id),
            "controller.quorum.voters": voters,
            "controller.listener.names": "CONTROLLER",
            "listeners": f"PLAINTEXT://{host}:{port}",
            "advertised.listeners": f"PLAINTEXT://{host}:{port}",
            "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
            "broker.heartbeat.interval.ms": "500",
            "broker.session.timeout.ms": str(BROKER_RETRY_MS),
        }
    )
    props.update(version.broker_props)
    return props


def zookeeper_properties(data_dir: str, port: int, host: str = "127.0.0.1") -> dict[str, str]:
    return {
        "dataDir": data_dir,
        "clientPort": str(port),
        "clientPortAddress": host,
        "maxClientCnxns": "0",
        "tickTime": "2000",
        "maxSessionTimeout": "120000",
        "admin.enableServer": "false",
        "4lw.commands.whitelist": "*",
    }


def render(props: dict[str, str]) -> str:
    return "".join(f"{k}={v}\n" for k, v in sorted(props.items()))


def topic_config(spec: TopicSpec) -> dict[str, str]:
    return {
        "min.insync.replicas": str(spec.min_insync),
        "unclean.leader.election.enable": str(spec.unclean).lower(),
    }


def offsets_topic_znodes(controller_id: int) -> dict[str, dict[str, object]]:
    """ZooKeeper nodes that pre-create ``__consumer_offsets`` on the controller broker."""
    return {
        "/config/topics/__consumer_offsets": {
            "version": 1,
            "config": {"cleanup.policy": "compact", "segment.bytes": "104857600"},
        },
        "/brokers/topics/__consumer_offsets": {
            "version": 1,
            "partitions": {"0": [controller_id]},
        },
    }
