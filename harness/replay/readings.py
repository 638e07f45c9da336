"""Every reading of the logs that fits: the main reconstruction and the others played.

Why: logs leave gaps (no producer times, no timestamps, a follower that logs nothing, an
unflushed tail or a never-copied one). Each gap is played both (or every) way, and the
readings whose verdicts differ are kept as alternatives with an ambiguity naming them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from harness.replay.parse import BrokerLogs
from harness.replay.reconstruct import Acked, Reconstruction, reconstruct
from harness.replay.versions import VersionInfo


def _outcome(rec: Reconstruction) -> tuple[Any, ...]:
    res = rec.result
    return (
        tuple(sorted(rec.lost_acked)),
        tuple(res.divergent_offsets),
        tuple(tuple(e.record for e in r.log) for r in res.final.replicas),
    )


def explain(
    brokers: Sequence[BrokerLogs],
    version: VersionInfo,
    acked: list[Acked] | None,
    acks: str | None,
    min_insync: int | None,
    name: str = "replay",
) -> Reconstruction:
    """The reconstruction, with the other reading of the logs listed when it fits too.

    A follower whose recovered LEO is below what its leader wrote either never copied the
    tail or copied it and lost it unflushed; the logs cannot tell (acks=1 acknowledges
    before followers copy). Both are played; when their verdicts differ, the ambiguity
    names both, with the steps of the second.
    """
    main = reconstruct(brokers, version, acked, acks, min_insync, name)
    untimed = [b.name for b in brokers if any(not f.timed for f in b.facts)]
    sources = {f.cite.rpartition(":")[0] for b in brokers for f in b.facts if not f.timed}
    if len(untimed) > 1 and len(sources) > 1:
        # Lines without timestamps from several brokers: their relative order is unknown.
        # Play each order of the brokers' blocks (up to 4 brokers) and keep what differs.
        from itertools import islice, permutations

        seen = {_outcome(main)}
        for perm in islice(permutations(untimed), 1, 24):
            alt = reconstruct(brokers, version, acked, acks, min_insync, name, order=perm)
            if _outcome(alt) in seen:
                continue
            seen.add(_outcome(alt))
            a = alt.result
            main.ambiguities.append(
                f"lines of {', '.join(untimed)} carry no timestamps: played in the order "
                f"{' then '.join(perm)} they give lost acknowledged writes "
                f"{alt.lost_acked or 'none'}, divergent offsets {a.divergent_offsets or 'none'}"
            )
            main.alternatives.append(alt)
    alt = reconstruct(brokers, version, acked, acks, min_insync, name, power_loss_first=True)
    if _outcome(alt) != _outcome(main) and len(alt.ambiguities) <= len(main.ambiguities):
        a = alt.result
        steps = "; ".join(e.describe(a.config.brokers) for e in alt.scenario.steps)
        main.ambiguities.append(
            "two orderings fit the logs: the one above (followers never copied what they "
            "lack after restart), or they copied it and lost it unflushed to a power failure "
            f"- then lost acknowledged writes {alt.lost_acked or 'none'}, divergent offsets "
            f"{a.divergent_offsets or 'none'}; its steps: {steps}"
        )
        main.alternatives.append(alt)
    if acked and any(f.kind == "isr_change" and f.detail == "shrinking" for f in main.facts):
        # When were the records written: before or after the leader dropped a follower?
        seen = {_outcome(main)} | {_outcome(a) for a in main.alternatives}
        for k in range(min(len(acked), 6) + 1):
            for j in range(k + 1):
                alt = reconstruct(
                    brokers, version, acked, acks, min_insync, name, split_at=k, copied_before=j
                )
                if _outcome(alt) in seen:
                    continue
                seen.add(_outcome(alt))
                a = alt.result
                main.ambiguities.append(
                    f"the producer's records carry no times: with {k} of them written before "
                    f"the ISR shrink the logs show ({j} copied by the dropped followers), lost "
                    f"acknowledged writes {alt.lost_acked or 'none'}, divergent offsets "
                    f"{a.divergent_offsets or 'none'}"
                )
                main.alternatives.append(alt)
    if any("but appended by" in w for w in main.step_facts):
        # Which followers copied the unacknowledged record before its leader failed: each
        # set of them is a reading the logs allow (up to 4 replicas: 15 sets).
        from itertools import combinations

        seen = {_outcome(main)} | {_outcome(a) for a in main.alternatives}
        names_ = list(main.scenario.brokers)[:4]
        for k in range(1, len(names_) + 1):
            for subset in combinations(names_, k):
                alt = reconstruct(
                    brokers, version, acked, acks, min_insync, name, copy_unsure=frozenset(subset)
                )
                if _outcome(alt) in seen:
                    continue
                seen.add(_outcome(alt))
                a = alt.result
                main.ambiguities.append(
                    f"an unacknowledged record was appended; if {', '.join(subset)} copied it "
                    f"before the leader failed: lost acknowledged writes "
                    f"{alt.lost_acked or 'none'}, divergent offsets {a.divergent_offsets or 'none'}"
                )
                main.alternatives.append(alt)
    if any("not placed by any fact" in a for a in main.ambiguities):
        alt = reconstruct(brokers, version, acked, acks, min_insync, name, append_unsure=True)
        if _outcome(alt) != _outcome(main):
            a = alt.result
            steps = "; ".join(e.describe(a.config.brokers) for e in alt.scenario.steps)
            logs = {
                n: [e.record for e in r.log]
                for n, r in zip(a.config.brokers, a.final.replicas, strict=True)
            }
            main.ambiguities.append(
                "or they were appended: then final logs "
                f"{logs}, lost acknowledged writes {alt.lost_acked or 'none'}, divergent "
                f"offsets {a.divergent_offsets or 'none'}; its steps: {steps}"
            )
            main.alternatives.append(alt)
    return main
