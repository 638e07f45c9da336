"""Pausing a real broker and the ApiVersions probe, on every generation.

``faults.pause`` returns only once SIGSTOP has stopped every JVM thread: a request sent
right after it is not answered (before the wait, 0.10.2.1 answered one). The ApiVersions
probe the produce fence relies on is answered by a running broker, not by a paused one
(see playbook/produce.py). Skips with the reason when no Kafka tree is available.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from tenacity import retry, retry_if_exception_type, stop_after_delay, wait_fixed

from harness.db.catalogue.versions import resolve_version
from harness.db.runtime.local import LocalCluster
from harness.db.runtime.process import stopped
from harness.nemesis import faults
from harness.protocol.wire import WireError, api_versions
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
