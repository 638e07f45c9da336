"""What the KRaft brokers and controllers are told about sessions (no JVM)."""

from __future__ import annotations

import pytest

from harness.db.catalogue.kafka_config import (
    BROKER_RETRY_MS,
    kraft_broker_properties,
    kraft_controller_properties,
)
from harness.db.catalogue.versions import resolve_version
from harness.db.mode.kraft import KRaftMode


@pytest.mark.parametrize("version", ["3.3.1-kraft", "4.0.0", "4.0.0-elr"])
def test_a_kraft_brokers_retry_cap_is_short_and_the_controllers_session_is_kept(
    version: str,
) -> None:
    """The broker's own ``broker.session.timeout.ms`` caps its registration retries (a
    restart on 4.x retries until the old session lapses); the session itself is the
    controller's, long enough for the harness's session keeper."""
    v = resolve_version(version)
    broker = kraft_broker_properties(v, 1, "127.0.0.1", 9092, "/d", "0@127.0.0.1:9093")
    ctrl = kraft_controller_properties(
        v, 0, "127.0.0.1", 9093, "/c", "0@127.0.0.1:9093", KRaftMode.SESSION_TIMEOUT_MS
    )
    assert broker["broker.session.timeout.ms"] == str(BROKER_RETRY_MS)
    assert ctrl["broker.session.timeout.ms"] == str(KRaftMode.SESSION_TIMEOUT_MS)
    # a retry comes at least every half of it (4.0), well inside the controller's session
    assert BROKER_RETRY_MS <= KRaftMode.SESSION_TIMEOUT_MS / 4
    # and not faster than the broker's own heartbeats
    assert int(broker["broker.heartbeat.interval.ms"]) <= BROKER_RETRY_MS
