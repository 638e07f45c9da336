# ruff: noqa: E501  (real broker log lines, kept whole)
"""What a node's logs say it died of (harness.db.exits), on real broker log lines.

The lines are cut from the logs of real brokers that could not bind their port (the
start-retry integration test provokes it): 0.10.2.1 logs FATAL then goes on shutting down,
a 4.0.0 KRaft controller logs an ERROR whose trace wraps the BindException three deep.
"""

from __future__ import annotations

from pathlib import Path

from harness.db.exits import MAX_CHARS, exit_cause

KAFKA_0_10 = """\
[2026-11-28 09:37:13,604] INFO Awaiting socket connections on 127.0.0.1:37207. (kafka.network.Acceptor)
[2026-11-28 09:37:13,626] FATAL Fatal error during KafkaServerStartable startup. Prepare to shutdown (kafka.server.KafkaServerStartable)
kafka.common.KafkaException: Socket server failed to bind to 127.0.0.1:37207: Address already in use.
\tat kafka.network.Acceptor.openServerSocket(SocketServer.scala:330)
\tat kafka.network.Acceptor.<init>(SocketServer.scala:255)
Caused by: java.net.BindException: Address already in use
\tat sun.nio.ch.Net.bind0(Native Method)
\t... 12 more
[2026-11-28 09:37:13,628] INFO shutting down (kafka.server.KafkaServer)
[2026-11-28 09:37:13,640] INFO shut down completed (kafka.server.KafkaServer)
"""

KAFKA_4_0 = """\
[2026-11-28 09:37:00,706] ERROR Encountered fatal fault: caught exception (org.apache.kafka.server.fault.ProcessTerminatingFaultHandler)
java.lang.RuntimeException: Received a fatal error while waiting for all of the SocketServer Acceptors to be started
\tat kafka.server.ControllerServer.startup(ControllerServer.scala:415) ~[kafka_2.13-4.0.0.jar:?]
Caused by: java.lang.RuntimeException: Unable to start acceptor for ListenerName(CONTROLLER)
\tat kafka.network.Acceptor.liftedTree1$1(SocketServer.scala:558) ~[kafka_2.13-4.0.0.jar:?]
Caused by: org.apache.kafka.common.KafkaException: Socket server failed to bind to 127.0.0.1:45977: Address already in use.
\tat kafka.network.Acceptor.openServerSocket(SocketServer.scala:642) ~[kafka_2.13-4.0.0.jar:?]
Caused by: java.net.BindException: Address already in use
\tat java.base/sun.nio.ch.Net.bind0(Native Method) ~[?:?]
"""


def _logs(tmp_path: Path, **files: str) -> Path:
    for name, text in files.items():
        (tmp_path / f"{name}.log").write_text(text)
    return tmp_path


def test_the_last_fatal_line_with_its_root_cause(tmp_path: Path) -> None:
    assert exit_cause(_logs(tmp_path, server=KAFKA_0_10)) == (
        "Fatal error during KafkaServerStartable startup. Prepare to shutdown "
        "(kafka.server.KafkaServerStartable): java.net.BindException: Address already in use"
    )


def test_a_wrapped_cause_is_read_to_its_deepest_caused_by(tmp_path: Path) -> None:
    cause = exit_cause(_logs(tmp_path, server=KAFKA_4_0))
    assert cause is not None and cause.startswith("Encountered fatal fault")
    assert cause.endswith(": java.net.BindException: Address already in use")


def test_a_jvm_that_never_started_is_read_from_stdout(tmp_path: Path) -> None:
    logs = _logs(
        tmp_path,
        server="",
        stdout="Error: Could not find or load main class kafka.Kafka\n"
        "Caused by: java.lang.ClassNotFoundException: kafka.Kafka\n",
    )
    assert exit_cause(logs) == (
        "Error: Could not find or load main class kafka.Kafka: "
        "java.lang.ClassNotFoundException: kafka.Kafka"
    )


def test_no_error_no_cause_and_long_ones_cut(tmp_path: Path) -> None:
    assert exit_cause(tmp_path / "absent") is None
    assert exit_cause(_logs(tmp_path, server=KAFKA_0_10.splitlines()[0] + "\n")) is None
    long = f"[2026-11-28 09:00:00,000] ERROR {'x' * 500} (kafka.Kafka$)\n"
    cause = exit_cause(_logs(tmp_path, server=long))
    assert cause is not None and len(cause) == MAX_CHARS and cause.endswith("...")
