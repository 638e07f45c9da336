"""Known replication incidents as data: what each looks like in the logs, its references,
and what would have prevented it; and the findings read straight from the logged numbers.

Why: the model replays what the logs allow, but an incident paste is often a few lines of
one broker with offsets in the millions. The numbers in those lines carry the humans'
conclusion (the halt line's two offsets, ``Non-monotonic update of high watermark from X
to Y``, a truncation below the HW). Each :class:`Finding` names the lines it rests on
(``file:line``) and says whether it is *logged* (a line states it) or *inferred* (read
from several lines, or from the model's replay).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from harness.replay.rules import Fact


@dataclass(frozen=True)
class Pattern:
    """One known incident shape."""

    id: str
    name: str
    references: tuple[str, ...]
    prevented_by: str  # the release or setting that closes it
    looks_like: str  # what the logs show


PATTERNS: dict[str, Pattern] = {
    p.id: p
    for p in (
        Pattern(
            "kip101-s1",
            "KIP-101 scenario 1: a restarted follower truncates to its stale HW and is elected",
            ("KIP-101", "KAFKA-1211"),
            "Kafka 0.11 (leader epochs, OffsetsForLeaderEpoch)",
            "pre-0.11 'Truncating log t-0 to offset N' right after a restart, then the "
            "same broker leads while the old leader is gone",
        ),
        Pattern(
            "kip101-s2",
            "KIP-101 scenario 2: replicas truncate to different HWs and diverge",
            ("KIP-101", "KAFKA-1211"),
            "Kafka 0.11 (leader epochs, OffsetsForLeaderEpoch)",
            "pre-0.11 truncations to the HW on two replicas after both restarted",
        ),
        Pattern(
            "follower-ahead-halt",
            "A follower is ahead of the new leader with unclean election off: it halts "
            "rather than truncate",
            ("KAFKA-1211", "KIP-101", "KAFKA-3410"),
            "Kafka 1.1 (the follower truncates to the leader instead of halting) and 0.11 "
            "(leader epochs, so a clean election never picks the shorter log)",
            "FATAL 'Halting/Exiting because log truncation is not allowed', current leader's "
            "latest offset below the replica's",
        ),
        Pattern(
            "kafka-7164",
            "KAFKA-7164: a follower that missed a leader epoch skips truncation when the same "
            "leader is re-elected",
            ("KAFKA-7164",),
            "Kafka 2.0.1 / 2.1.0",
            "a follower line with an epoch more than one above its previous one, same leader, "
            "no truncation",
        ),
        Pattern(
            "kip279",
            "KIP-279: fast leader fail-over leaves leader and follower diverged",
            ("KIP-279", "KAFKA-6361"),
            "Kafka 2.0 (OffsetsForLeaderEpoch v1 returns the epoch)",
            "0.11-1.1 truncation by leader epoch across two quick leader changes; "
            "OffsetsOutOfOrderException on the follower",
        ),
        Pattern(
            "kip320",
            "KIP-320: a zombie follower or consumer with a stale leader epoch",
            ("KIP-320", "KAFKA-6880"),
            "Kafka 2.1 (fetch carries the leader epoch; stale fetches are fenced)",
            "UNKNOWN_LEADER_EPOCH / FENCED_LEADER_EPOCH answers (the fence working) or, "
            "before 2.1, a follower fetching from a deposed leader",
        ),
        Pattern(
            "kip966",
            "KIP-966 last replica standing: the last ISR member lost its unflushed tail and "
            "was re-elected",
            ("KIP-966",),
            "Kafka 4.0 with eligible.leader.replicas.version=1 (default from 4.1)",
            "the ISR shrinks to one broker, that broker recovers a shorter log after an "
            "unclean shutdown and leads; the others truncate",
        ),
        Pattern(
            "unclean-election",
            "Unclean leader election: an out-of-sync replica became leader",
            ("KIP-106",),
            "unclean.leader.election.enable=false (default from 0.11) and acks=all with "
            "min.insync.replicas >= 2",
            "'There's potential data loss', an unclean election line, or a follower reset "
            "to a leader's shorter log",
        ),
        Pattern(
            "kafka-14704",
            "KAFKA-14704: a former leader raises its HW before truncating its uncommitted tail",
            ("KAFKA-14704",),
            "Kafka 3.3.3 / 3.4.1 / 3.5.0",
            "2.7-3.4 follower truncation after a diverging epoch, below its own high watermark",
        ),
        Pattern(
            "hw-regression",
            "The high watermark went backwards",
            ("KAFKA-14704", "KAFKA-9491"),
            "depends on the cause; 3.5+ closes the known ones",
            "'Non-monotonic update of high watermark from X to Y' or a truncation below the HW",
        ),
    )
}


@dataclass
class Finding:
    """One claim with its evidence: ``logged`` (a line states it) or ``inferred``."""

    claim: str
    cites: list[str]
    how: str = "logged"  # logged | inferred
    pattern: str = ""
    loss: str = ""  # "" | possible | yes: what it says about acknowledged data
    divergence: str = ""  # "" | yes
    offsets: tuple[int, ...] = field(default=())


def _n(f: Fact, names: dict[int, str]) -> str:
    return names.get(f.broker_id, f.broker) if f.broker_id >= 0 else f.broker


def findings(facts: list[Fact], names: dict[int, str], release: str) -> list[Finding]:
    """What the logged numbers say by themselves, pattern named where one fits."""
    out: list[Finding] = []
    rel = tuple(int(x) for x in re.findall(r"\d+", release)[:3])
    last_epoch: dict[str, tuple[int, int, str]] = {}  # broker -> (epoch, leader, cite)
    for f in facts:
        if f.kind in ("become_follower", "leader_and_isr") and f.epoch >= 0 and f.leader >= 0:
            prev = last_epoch.get(f.broker)
            last_epoch[f.broker] = (f.epoch, f.leader, f.cite)
            # KAFKA-7164 (0.11 to 2.0.0): a follower told of the same leader again, more than
            # one epoch later, skipped the truncation the missed epochs required.
            if (
                prev is not None
                and prev[1] == f.leader
                and f.epoch > prev[0] + 1
                and rel[:2] >= (0, 11)
                and rel < (2, 0, 1)
            ):
                lead = names.get(f.leader, f"broker {f.leader}")
                out.append(
                    Finding(
                        f"{f.broker} follows {lead} again at epoch {f.epoch} after epoch "
                        f"{prev[0]}: it missed {f.epoch - prev[0] - 1} leader epoch(s) and this "
                        "release skips the truncation then; its log may diverge",
                        [prev[2], f.cite],
                        how="inferred",
                        pattern="kafka-7164",
                        divergence="yes",
                    )
                )
                continue
        if f.kind == "fatal_truncation":
            who = names.get(f.broker_id, f.broker) if f.broker_id >= 0 else f.broker
            if f.offset >= 0 and f.other >= 0:
                lead = names.get(f.leader, f"broker {f.leader}") if f.leader >= 0 else "the leader"
                n = f.other - f.offset
                out.append(
                    Finding(
                        f"{who} halted: {lead} leads with log end offset {f.offset}, {who} "
                        f"holds {f.other}; the {n} record(s) at offsets {f.offset}..{f.other - 1} "
                        f"are not on the leader (lost if acknowledged; acks=1 acknowledges on "
                        f"the old leader's append). {who} refused to truncate them "
                        "(unclean.leader.election.enable=false)",
                        [f.cite],
                        pattern="follower-ahead-halt",
                        loss="possible",
                        divergence="yes",
                        offsets=tuple(range(f.offset, min(f.other, f.offset + 20))),
                    )
                )
            else:
                out.append(
                    Finding(
                        f"{who} halted rather than truncate below its HW; the offsets are not "
                        "in the line",
                        [f.cite],
                        pattern="follower-ahead-halt",
                        loss="possible",
                    )
                )
        elif f.kind == "hw_regression":
            out.append(
                Finding(
                    f"{f.broker}'s high watermark went back from {f.hw} to {f.other}: "
                    f"offsets {f.other}..{f.hw - 1} were exposed as committed and then were not",
                    [f.cite],
                    pattern="hw-regression",
                    loss="possible",
                )
            )
        elif f.kind == "truncate" and f.other > f.offset >= 0:
            out.append(
                Finding(
                    f"{f.broker} truncated from {f.other} to the leader's {f.offset}: the "
                    f"leader lacks offsets {f.offset}..{f.other - 1}, so it was elected "
                    "without them (an unclean election)",
                    [f.cite],
                    pattern="unclean-election",
                    loss="possible",
                    divergence="yes",
                )
            )
        elif f.kind == "truncate" and f.hw > f.offset >= 0:
            # Before the fix a former leader's fetcher raised its HW, then truncated.
            diverging = (2, 7, 0) <= rel < (3, 3, 3) or rel == (3, 4, 0)
            out.append(
                Finding(
                    f"{f.broker} truncated to offset {f.offset}, below its high watermark "
                    f"{f.hw}: offsets {f.offset}..{f.hw - 1} had been marked committed on it",
                    [f.cite],
                    pattern="kafka-14704" if diverging else "hw-regression",
                    loss="possible",
                )
            )
        elif f.kind == "out_of_order":
            out.append(
                Finding(
                    f"{f.broker} refused a fetched batch whose offsets are below its own log "
                    "end: its log and the leader's disagree",
                    [f.cite],
                    pattern="kip279" if rel and rel < (2, 0) else "",
                    divergence="yes",
                )
            )
        elif f.kind == "epoch_error":
            out.append(
                Finding(
                    f"{f.broker}: a fetch was answered {f.detail}: a replica or client used a "
                    "leader epoch the leader does not have (KIP-320's fence refused it)",
                    [f.cite],
                    pattern="kip320",
                )
            )
        elif f.kind == "unclean_election":
            out.append(
                Finding(
                    "an unclean leader election took place",
                    [f.cite],
                    pattern="unclean-election",
                    loss="possible",
                )
            )
    return out
