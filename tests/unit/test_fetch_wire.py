"""The consumer oracle's Fetch: request bytes as Kafka's schemas say, answers parsed.

A real socket on loopback plays the broker: it reads the request the client sends, checks
the fields the broker's ``FetchRequest`` parser reads (api key, version, replica id, the
v11 session and rack fields) and answers with a Fetch response built from Kafka's
``FetchResponse.json`` layout and a record batch in the on-disk format.
"""

from __future__ import annotations

import socket
import struct
import threading

import pytest

from harness.protocol.fetch import CONSUMER, DEBUGGING_CONSUMER, RACK, fetch, fetch_version
from tests.unit.kafka_encoding import Rec, v2_batch


def _s(text: str) -> bytes:
    b = text.encode()
    return struct.pack(">h", len(b)) + b


def _answer(version: int, hw: int, records: bytes, error: int = 0) -> bytes:
    body = struct.pack(">i", 0)  # throttle
    if version >= 11:
        body += struct.pack(">hi", 0, 0)  # error_code, session_id
    body += struct.pack(">i", 1) + _s("hwchaos") + struct.pack(">i", 1)
    body += struct.pack(">ihq", 0, error, hw)
    if version >= 4:
        body += struct.pack(">q", hw)  # last_stable_offset
        if version >= 11:
            body += struct.pack(">q", 0)  # log_start_offset
        body += struct.pack(">i", -1)  # aborted_transactions: null
        if version >= 11:
            body += struct.pack(">i", -1)  # preferred_read_replica
    body += struct.pack(">i", len(records)) + records
    return body


def _serve(answer: bytes, seen: list[bytes]) -> tuple[int, threading.Thread]:
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)

    def run() -> None:
        conn, _ = srv.accept()
        with conn, srv:
            size = struct.unpack(">i", conn.recv(4, socket.MSG_WAITALL))[0]
            req = conn.recv(size, socket.MSG_WAITALL)
            seen.append(req)
            corr = req[4:8]
            conn.sendall(struct.pack(">i", 4 + len(answer)) + corr + answer)

    t = threading.Thread(target=run)
    t.start()
    return srv.getsockname()[1], t


@pytest.mark.parametrize("version", [3, 4, 11])
def test_fetch_parses_records_and_hw(version: int) -> None:
    batch = v2_batch(0, [Rec(b"m1", b"m1"), Rec(b"m2", b"m2")])
    partial = v2_batch(2, [Rec(b"m3", b"m3")])[:20]  # a partial last batch is normal
    seen: list[bytes] = []
    port, t = _serve(_answer(version, 2, batch + partial), seen)
    rid = DEBUGGING_CONSUMER if version < 11 else CONSUMER
    ans = fetch("127.0.0.1", port, "hwchaos", 0, version, rid)
    t.join()
    assert (ans.error, ans.high_watermark) == (0, 2)
    assert ans.records == [(0, "m1"), (1, "m2")]
    req = seen[0]
    assert struct.unpack(">hh", req[:4]) == (1, version)  # Fetch, the version asked
    client_len = struct.unpack(">h", req[8:10])[0]
    body = req[10 + client_len :]
    assert struct.unpack(">i", body[:4])[0] == rid
    if version >= 11:
        assert body.endswith(_s(RACK))  # rack_id: the request carries client metadata


def test_fetch_error_code_is_returned() -> None:
    seen: list[bytes] = []
    port, t = _serve(_answer(4, -1, b"", error=6), seen)
    ans = fetch("127.0.0.1", port, "hwchaos", 0, 4, DEBUGGING_CONSUMER)
    t.join()
    assert (ans.error, ans.records) == (6, [])


def test_versions_per_generation_and_bad_version() -> None:
    assert fetch_version(False, False) == 3
    assert fetch_version(True, False) == 4
    assert fetch_version(True, True) == 11
    with pytest.raises(ValueError, match="Fetch v5"):
        fetch("127.0.0.1", 9, "hwchaos", 0, 5)
