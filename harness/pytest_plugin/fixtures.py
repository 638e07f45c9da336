"""Fixtures for application chaos tests: a running cluster, its nemesis, its on-disk logs."""

from __future__ import annotations

import re
import signal
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.db import Cluster, TopicSpec
from harness.db.catalogue.versions import KafkaVersion, resolve_version
from harness.db.mode.view import PartitionView
from harness.db.names import PARTITION, TOPIC
from harness.pytest_plugin.options import (
    DEFAULT_BROKERS,
    DEFAULT_VERSION,
    RUN_FOLDER,
    _settings,
    _unique,
    unavailable,
)

# ---------------------------------------------------------------- fixtures


class HwchaosCluster:
    """A running cluster for an application's own test: bootstrap, topics, leaders."""

    def __init__(self, cluster: Cluster, version: KafkaVersion, names: list[str]) -> None:
        self.cluster = cluster
        self.version = version
        self.names = names
        # Unique across runs (a retried test, a reused topic): a record id found on disk is
        # always the one this test sent, never a leftover with the same name.
        self._prefix = uuid.uuid4().hex[:8]
        self._next = 0
        self.lost: list[str] = []  # every loss lost_acked() found, for the JUnit property

    def record_id(self) -> str:
        """A record id unique to this test run (``<run>-<n>``); send it as key and value."""
        self._next += 1
        return f"{self._prefix}-{self._next}"

    def log(self, name: str, topic: str = TOPIC) -> list[tuple[int, int, str]]:
        """Broker ``name``'s log of ``topic``-0 as written on disk: (offset, epoch, id)."""
        from harness.readback.logformat import read_partition_dir

        pdir = self.cluster.partition_dir(name, topic)
        if not pdir.is_dir():
            return []
        return [(r.offset, r.epoch, r.record_id) for r in read_partition_dir(pdir, verify=False)]

    def lost_acked(
        self, acked: Iterable[Any], topic: str = TOPIC, timeout: float = 60.0
    ) -> list[str]:
        """The acknowledged records the partition's leader does not hold, read from disk.

        ``acked``: record ids (str or bytes) or the delivered messages themselves
        (confluent-kafka ``Message``: its offset is checked too, as Kafka's promise is
        about the acknowledged offset). Waits (bounded) for a leader; a partition with none
        counts every acknowledged record lost, since no consumer can read it. After a
        leader change, ``wait_for_leader(topic, not_=old)`` first: until the controller has
        elected, the old leader is still the one on record.
        """
        wanted = [_acked_entry(a) for a in acked]
        try:
            leader: str | None = self.wait_for_leader(topic, timeout=timeout)
        except TimeoutError:
            leader = None
        on_disk = self.log(leader, topic) if leader is not None else []
        at = {o: r for o, _e, r in on_disk}
        ids = set(at.values())
        lost = [
            rec
            for rec, off in wanted
            if (off is None and rec not in ids) or (off is not None and at.get(off) != rec)
        ]
        self.lost += [r for r in lost if r not in self.lost]
        return lost

    @property
    def bootstrap(self) -> str:
        return self.cluster.bootstrap()

    @property
    def workdir(self) -> Path:
        return self.cluster.workdir

    def create_topic(
        self,
        name: str = TOPIC,
        replicas: list[str] | None = None,
        min_insync: int = 1,
        unclean: bool = False,
        timeout: float = 60.0,
    ) -> str:
        """Create a one-partition topic on ``replicas`` (default: every broker, first leads)
        and wait until it has a leader; returns the leader's name."""
        spec = TopicSpec(replicas or list(self.names), min_insync, unclean, name=name)
        self.cluster.create_topic(spec)
        return self.wait_for_leader(name, timeout=timeout)

    def leader(self, topic: str = TOPIC) -> str | None:
        """The partition's leader as the controller recorded it (None: offline)."""
        view = self._view(topic)
        if view is None or view.leader < 0:
            return None
        return self._name(view.leader)

    def isr(self, topic: str = TOPIC) -> list[str]:
        view = self._view(topic)
        return [] if view is None else [self._name(b) for b in view.isr]

    def _view(self, topic: str) -> PartitionView | None:
        """The controller's record of the partition (ZooKeeper or KRaft metadata)."""
        meta = self.cluster.metadata()
        try:
            return meta.partition(topic, PARTITION)
        finally:
            meta.close()

    def wait_for_leader(
        self, topic: str = TOPIC, not_: str | None = None, timeout: float = 60.0
    ) -> str:
        """Wait (bounded) for a leader other than ``not_``; returns its name."""
        from tenacity import retry, retry_if_result, stop_after_delay, wait_fixed

        @retry(
            stop=stop_after_delay(timeout),
            wait=wait_fixed(0.2),
            retry=retry_if_result(lambda who: who is None or who == not_),
            reraise=True,
        )
        def poll() -> str | None:
            return self.leader(topic)

        try:
            who = poll()
        except Exception:
            who = None
        if who is None or who == not_:
            raise TimeoutError(
                f"no leader for {topic}-{PARTITION}"
                + (f" other than {not_}" if not_ else "")
                + f" after {timeout:.0f}s"
            )
        return who

    def _name(self, broker_id: int) -> str:
        for n, spec in self.cluster.brokers.items():
            if spec.broker_id == broker_id:
                return n
        return str(broker_id)


class HwchaosNemesis:
    """Faults on one cluster, by broker name. ``crash`` and ``power_loss`` also make the
    controller notice now (the registration is removed, as session expiry would)."""

    def __init__(self, cluster: HwchaosCluster) -> None:
        self.c = cluster
        self.cluster = cluster.cluster

    def crash(self, name: str, detect: bool = True) -> None:
        """SIGKILL: the page cache survives, so every appended byte stays on disk."""
        from harness.nemesis import faults

        faults.crash(self.cluster, name)
        if detect:
            self._detect(name)

    def power_loss(self, name: str, keep_offset: int | None = None, detect: bool = True) -> int:
        """Crash and lose the unflushed tail: the log is cut at ``keep_offset`` (default: the
        recovery point Kafka checkpointed, i.e. what it had fsynced). Returns bytes lost."""
        from harness.nemesis import faults

        if keep_offset is None:
            keep_offset = self._recovery_point(name)
        lost = faults.power_loss(self.cluster, name, keep_offset)
        if detect:
            self._detect(name)
        return lost

    def pause(self, name: str) -> None:
        """SIGSTOP: alive to the OS, silent to everyone else."""
        self.cluster.signal(name, signal.SIGSTOP)

    def resume(self, name: str) -> None:
        self.cluster.signal(name, signal.SIGCONT)

    def clean_stop(self, name: str) -> None:
        from harness.nemesis import faults

        faults.clean_stop(self.cluster, name)

    def restart(self, name: str) -> None:
        """Start a stopped or crashed broker again (same id, port and data dir)."""
        self.cluster.start_broker(name)

    def partition(
        self, src: str | list[str], dst: str | list[str], direction: str = "both"
    ) -> list[tuple[str, str]]:
        """Cut the links src -> dst (and back unless ``one-way``): every packet dropped.

        Needs ``@pytest.mark.hwchaos(..., network=True)`` (local backend, root): each node
        then runs in its own network namespace. Peers: broker names, ``controller``,
        ``zookeeper``, ``client`` (the test's own clients)."""
        from harness.nemesis import faults

        return faults.partition(self.cluster, src, dst, direction)  # type: ignore[arg-type]

    def isolate(self, name: str) -> list[tuple[str, str]]:
        """Cut ``name`` from every other node; the test's clients still reach it."""
        from harness.nemesis import faults

        return faults.isolate(self.cluster, name)

    def heal(self) -> list[tuple[str, str]]:
        """Restore every cut link."""
        from harness.nemesis import faults

        return faults.heal(self.cluster)

    def lag(self, follower: str) -> None:
        """Make ``follower`` stop fetching (its fetcher paused with the JVM: SIGSTOP).

        It stays in the ISR until the leader's replica.lag.time.max.ms passes, so a write
        acknowledged now with acks=1 is on the leader alone: the catalogue's "leader dies
        before a follower fetches" ordering. ``catch_up`` lets it fetch again."""
        self.pause(follower)

    def catch_up(self, follower: str) -> None:
        """Let a lagging follower fetch again (SIGCONT)."""
        self.resume(follower)

    def cut_from_leader(self, follower: str, topic: str = TOPIC) -> list[tuple[str, str]]:
        """Cut the links between ``follower`` and the partition's leader, both ways: the
        follower keeps its controller session (it stays registered) but fetches nothing,
        so the leader drops it from the ISR after replica.lag.time.max.ms. Needs
        ``@pytest.mark.hwchaos(..., network=True)``; ``heal()`` restores the links."""
        leader = self.c.wait_for_leader(topic)
        if leader == follower:
            raise ValueError(f"{follower} leads {topic}-{PARTITION}: cut a follower")
        return self.partition(follower, leader)

    def _detect(self, name: str) -> None:
        """What the expiry of its session (ZooKeeper) or a fencing (KRaft) does, now."""
        self.cluster.declare_dead(name)

    def _recovery_point(self, name: str, topic: str = TOPIC) -> int:
        from harness.readback.checkpoints import read_offset_checkpoint

        path = self.cluster.log_dir(name) / "recovery-point-offset-checkpoint"
        if not path.exists():
            return 0
        return read_offset_checkpoint(path).get((topic, PARTITION), 0)


Readback = Callable[..., dict[str, list[tuple[int, int, str]]]]


def _acked_entry(a: Any) -> tuple[str, int | None]:
    """(record id, acknowledged offset or None) of one ``lost_acked`` argument."""
    if isinstance(a, bytes):
        return a.decode(), None
    if isinstance(a, str):
        return a, None
    value = getattr(a, "value", None)
    if callable(value):  # a confluent_kafka.Message from the delivery callback
        raw = a.key() or value()
        rec = raw.decode() if isinstance(raw, bytes) else str(raw)
        off = a.offset()
        return rec, (int(off) if off is not None and off >= 0 else None)
    raise TypeError(f"lost_acked: expected record ids or delivered messages, got {type(a)}")


def _marker_args(request: pytest.FixtureRequest) -> tuple[str, int, bool]:
    marker = request.node.get_closest_marker("hwchaos")
    kwargs = dict(marker.kwargs) if marker is not None else {}
    versions = _settings(request.config).versions
    version = str(kwargs.get("version") or (versions[0] if versions else DEFAULT_VERSION))
    brokers = int(kwargs.get("brokers", DEFAULT_BROKERS))
    if not 1 <= brokers <= 5:
        raise pytest.UsageError(f"@pytest.mark.hwchaos: brokers must be 1..5, got {brokers}")
    return version, brokers, bool(kwargs.get("network", False))


@pytest.fixture
def hwchaos_cluster(request: pytest.FixtureRequest) -> Iterator[HwchaosCluster]:
    """A started cluster (ZooKeeper, a controller broker, N replica brokers A, B, C...)."""
    name, size, network = _marker_args(request)
    try:
        version = resolve_version(name)
    except ValueError as exc:
        raise pytest.UsageError(f"@pytest.mark.hwchaos: {exc}") from None
    settings = _settings(request.config)
    reason = unavailable(version, settings.backend)
    if reason is not None:
        pytest.skip(reason)
    if network:
        from harness.db.runtime.linkcuts import network_available

        why = network_available()
        if settings.backend != "local" or why is not None:
            pytest.skip(f"network partitions: {why or 'the fixture needs the local backend'}")
    from harness.generator.runner import make_cluster

    names = [chr(ord("A") + i) for i in range(size)]
    test = re.sub(r"[^A-Za-z0-9_.-]+", "_", request.node.name)[:80]
    run_id = f"{test}__{version.name}__{time.strftime('%Y%m%dT%H%M%S')}"
    workdir = _unique(settings.out / "fixtures" / run_id)
    request.node.user_properties.append((RUN_FOLDER, str(workdir)))
    if network:
        from harness.db.runtime.local import LocalCluster

        cluster: Cluster = LocalCluster(version, names, workdir, network=True)
    else:
        cluster = make_cluster(version, settings.backend, names, workdir, run_id)
    try:
        cluster.start()
        handle = HwchaosCluster(cluster, version, names)
        yield handle
    finally:
        cluster.close()
    # What lost_acked() found, on the report like a scenario item's (JUnit property);
    # --hwchaos-fail-on-loss fails a test whose own assertions let a loss pass.
    request.node.user_properties.append(("lost_acked", ",".join(handle.lost)))
    if handle.lost and settings.fail_on_loss:
        pytest.fail(
            f"acknowledged writes LOST: {', '.join(handle.lost)} (--hwchaos-fail-on-loss)",
            pytrace=False,
        )


@pytest.fixture
def hwchaos_nemesis(hwchaos_cluster: HwchaosCluster) -> HwchaosNemesis:
    """Faults on the ``hwchaos_cluster``'s brokers, by name."""
    return HwchaosNemesis(hwchaos_cluster)


@pytest.fixture
def hwchaos_readback(hwchaos_cluster: HwchaosCluster) -> Readback:
    """``hwchaos_readback(topic)``: {broker: [(offset, leader epoch, record id)]} read from
    every replica's segment files on disk (record id = key, else value)."""
    from harness.readback.logformat import read_partition_dir

    def read(topic: str = TOPIC) -> dict[str, list[tuple[int, int, str]]]:
        out: dict[str, list[tuple[int, int, str]]] = {}
        for name in hwchaos_cluster.names:
            pdir = hwchaos_cluster.cluster.partition_dir(name, topic)
            out[name] = (
                [(r.offset, r.epoch, r.record_id) for r in read_partition_dir(pdir, verify=False)]
                if pdir.is_dir()
                else []
            )
        return out

    return read
