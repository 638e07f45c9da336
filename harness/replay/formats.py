"""The Kafka release a paste comes from, told by its line formats when no line names it.

Why: an incident paste rarely holds the ``Kafka version :`` start-up line, and the model's
rules differ by release (truncation to the HW before 0.11, leader epochs after, KIP-279 in
2.0, KIP-320 in 2.1). Each text below first appeared (or last appeared) in a known release
line; the tightest bound the lines give is the guess, and the verdict says it was guessed
and from which line. Texts read from Kafka's source per tag (``ReplicaFetcherThread``,
``AbstractFetcherThread``, ``Partition``, ``Log``/``UnifiedLog``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from harness.replay.parse import BrokerLogs

# (pattern, release guessed, why). First match in this order wins: most specific first.
MARKERS: tuple[tuple[re.Pattern[str], str, str], ...] = (
    (
        re.compile(r"QuorumController|KafkaRaftServer|BrokerLifecycleManager"),
        "3.3.1-kraft",
        "KRaft components (3.x KRaft)",
    ),
    (
        re.compile(r"Halting because log truncation is not allowed for topic"),
        "0.10.0.0",
        "the 0.8/0.9 halt line (names the topic only); modelled by the pre-0.11 rules",
    ),
    (
        re.compile(
            r"Exiting because log truncation is not allowed for partition \S+, Current "
            r"leader \d+'s"
        ),
        "0.10.2.1",
        "the 0.10 halt line",
    ),
    (
        re.compile(r"current leader's latest offset \d+ is less than replica's"),
        "1.0.2",
        "the 1.0 halt line",
    ),
    (re.compile(r"with partition epoch \d+"), "3.3.1", "'with partition epoch' (3.1+)"),
    (
        re.compile(r"\[UnifiedLog partition=|\[LogLoader partition="),
        "3.3.1",
        "UnifiedLog/LogLoader loggers (3.0+)",
    ),
    (
        re.compile(r"Follower \S+ starts at leader epoch \d+ from offset \d+ with high watermark"),
        "2.8.2",
        "the 2.7-3.0 follower line",
    ),
    (re.compile(r"TruncationState\(offset="), "2.8.2", "TruncationState (2.4+)"),
    (
        re.compile(r"starts at leader epoch \d+ from offset \d+ with high watermark"),
        "2.4.1",
        "'starts at leader epoch ... with high watermark' (2.4+)",
    ),
    (
        re.compile(r"starts at Leader Epoch \d+ from offset"),
        "1.1.1",
        "'starts at Leader Epoch' (1.0-2.3)",
    ),
    (
        re.compile(r"Truncating log \S+ to offset \d+\."),
        "0.10.2.1",
        "'Truncating log t-0 to offset N.' (before 1.0)",
    ),
    (
        re.compile(r"starting the become-(?:leader|follower) transition"),
        "0.10.2.1",
        "state-change 'become-leader transition' lines (before 1.0)",
    ),
)


def infer_release(brokers: Sequence[BrokerLogs]) -> tuple[str, str, str] | None:
    """(release, why, cited line) from the first marker any fact's line carries."""
    lines = [(f.line, f.cite) for b in brokers for f in b.facts]
    for rx, release, why in MARKERS:
        for text, cite in lines:
            if rx.search(text):
                return release, why, cite
    return None
