"""The truncation offsets the fetch fence reads from a broker's log, as each version logs them.

A follower that truncated and fetched back to its old LEO got records; the fence tells it
from an empty round only by these offsets (controller-failover-missed-change on 0.10.2.1).
"""

from __future__ import annotations

import pytest

from harness.generator.playbook.fetch import TRUNCATED_TO


@pytest.mark.parametrize(
    ("line", "offset"),
    [
        ("[2026-11-27 19:35:24,395] INFO Truncating log hwchaos-0 to offset 1. (kafka.log.Log)", 1),
        ("INFO [Log partition=hwchaos-0, dir=/d] Truncating to offset 3 (kafka.log.Log)", 3),
        ("INFO [UnifiedLog partition=hwchaos-0, dir=/d] Truncating to offset 0 (x)", 0),
        ("Truncating partition hwchaos-0 to local high watermark 2", 2),
        ("Truncating partition hwchaos-0 with TruncationState(offset=4, completed=true) due", 4),
    ],
)
def test_truncation_offset_per_version(line: str, offset: int) -> None:
    assert [int(a or b) for a, b in TRUNCATED_TO.findall(line)] == [offset]


def test_other_lines_are_not_truncations() -> None:
    text = "Truncated 3 segments\nFollower 2 set replica high watermark for partition x to 1\n"
    assert TRUNCATED_TO.findall(text) == []
