"""Pausing a real broker and the ApiVersions probe, on every generation.

``faults.pause`` returns only once SIGSTOP has stopped every JVM thread: a request sent
right after it is not answered (before the wait, 0.10.2.1 answered one). The ApiVersions
probe the produce fence relies on is answered by a running broker, not by a paused one
(see playbook/produce.py). ListOffsets v1 to the leader answers its HW, on every generation
(the per-step "leader's HW on the wire"), and a broker that does not lead the partition
answers an error, not a number. Skips with the reason when no Kafka tree is available.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from tenacity import retry, retry_if_exception_type, stop_after_delay, wait_fixed

from harness.client.producer import Producer
from harness.db.catalogue.versions import resolve_version
from harness.db.names import PARTITION, TOPIC
from harness.db.runtime.local import LocalCluster
from harness.db.runtime.process import stopped
from harness.db.specs import TopicSpec
from harness.nemesis import faults
from harness.protocol.wire import WireError, api_versions, list_offsets_latest
from harness.readback import tcp
from tests.system.test_brokers import jvms_under, require


@pytest.mark.broker
@pytest.mark.parametrize("version", ["0.10.2.1", "2.1.1", "3.3.1", "4.0.0"])
def test_paused_broker_answers_no_probe(version: str, tmp_path: Path) -> None:
    require(version)
    cluster = LocalCluster(resolve_version(version), ["A"], tmp_path)
    with cluster:
        host, port = cluster.broker_address("A")

        @retry(
            retry=retry_if_exception_type(WireError),
            stop=stop_after_delay(60),
            wait=wait_fixed(0.2),
            reraise=True,
        )
        def answered() -> int:  # KRaft: the listener opens once the broker registered
            return api_versions(host, port, timeout=10.0)

        assert answered() == 0
        pid = cluster.host_pid("A")
        assert pid is not None and not stopped(pid)
        faults.pause(cluster, "A")
        try:
            assert stopped(pid)
            with pytest.raises(WireError, match=f"{host}:{port}: timed out"):
                api_versions(host, port, timeout=1.0)
        finally:
            faults.resume(cluster, "A")
        assert answered() == 0
    assert jvms_under(tmp_path) == []


@pytest.mark.broker
@pytest.mark.parametrize("version", ["0.10.2.1", "2.1.1", "3.3.1", "3.3.1-kraft", "4.0.0"])
def test_list_offsets_answers_the_leaders_hw(version: str, tmp_path: Path) -> None:
    require(version)
    cluster = LocalCluster(resolve_version(version), ["A", "B"], tmp_path)
    with cluster:
        cluster.create_topic(TopicSpec(["A", "B"], min_insync=1, unclean=False))
        lead, follower = (cluster.broker_address(n) for n in ("A", "B"))

        @retry(
            retry=retry_if_exception_type((WireError, AssertionError)),
            stop=stop_after_delay(60),
            wait=wait_fixed(0.2),
            reraise=True,
        )
        def hw_is(want: int) -> None:
            assert list_offsets_latest(*lead, TOPIC, PARTITION) == want

        hw_is(0)
        producer = Producer("{}:{}".format(*lead), "all")
        for r in ("m1", "m2", "m3"):
            producer.send(r)
        producer.close(timeout=30.0)
        assert all(d.status == "acked" for d in producer.deliveries.values())
        hw_is(3)  # acks=all with both in the ISR: acknowledged means below the HW
        with pytest.raises(WireError, match="ListOffsets error code"):
            list_offsets_latest(*follower, TOPIC, PARTITION)  # NOT_LEADER_OR_FOLLOWER
    assert jvms_under(tmp_path) == []


@pytest.mark.broker
@pytest.mark.parametrize("version", ["0.10.2.1", "3.3.1-kraft", "4.0.0"])
def test_a_paused_followers_parked_fetch_is_seen_answered(version: str, tmp_path: Path) -> None:
    """The produce fence's observation (harness.readback.tcp): a follower paused just after
    it caught up has its next Fetch parked at the leader, unanswered; the leader answers it
    after replica.fetch.wait.max.ms, and the answer waits in the paused follower's socket;
    until then the kernel's clocks of that connection never say nothing is in flight."""
    require(version)
    cluster = LocalCluster(resolve_version(version), ["A", "B"], tmp_path)
    with cluster:
        cluster.create_topic(TopicSpec(["A", "B"], min_insync=1, unclean=False))
        seen_parked = False
        for attempt in range(3):
            producer = Producer("{}:{}".format(*cluster.broker_address("A")), "all")
            producer.send(f"m{attempt}")
            producer.close(timeout=30.0)  # acks=all: B fetched it and sent its next Fetch
            pids = (cluster.host_pid("B"), cluster.host_pid("A"))
            assert pids[0] is not None and pids[1] is not None
            faults.pause(cluster, "B")
            try:
                seen_parked = tcp.answered(*pids) is False
                if seen_parked:
                    # a real parked Fetch is never taken for a follower between two Fetches
                    assert tcp.nothing_in_flight(*pids) is False
                    # the leader's timer answers it; the paused follower holds the answer
                    @retry(stop=stop_after_delay(10), wait=wait_fixed(0.05), reraise=True)
                    def answered(pids: tuple[int, int] = (pids[0], pids[1])) -> None:
                        assert tcp.answered(*pids) is True

                    answered()
                    break
            finally:
                faults.resume(cluster, "B")
        assert seen_parked, "the follower's Fetch was never seen parked (3 tries)"
    assert jvms_under(tmp_path) == []
