"""The consumer oracle's verdict: what consumers read, against the model and the final log.

Reads come from the brokers (harness.protocol.fetch, recorded by the playbook): after every
step the leader as an ordinary consumer, and each follower, just before the harness pauses
it, as Kafka's debugging consumer (served up to that follower's HW). The model predicts
each read: the replica's log below its HW in the model run on the events played
(harness.checker.realised). The anomalies use Jepsen's queue vocabulary and are computed
the same way from the observed reads and from the predicted ones, so the verdict can say
both whether they happened and whether the model said they would:

- ``lost``: acknowledged, absent from the final leader's log (from the run's verdict);
- ``read_then_lost``: a consumer read the record at an offset, and the final leader's log
  does not have it there;
- ``hw_regression``: the HW a consumer saw from the leader went down between two reads;
- ``uncommitted_read``: a replica served an offset at or above the HW the leader reported
  at that step (possible from a follower only, e.g. KAFKA-14704);
- ``divergent_offsets``: two reads returned different records at one offset.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from reference_model.state import PartitionState


def predicted_reads(
    names: Sequence[str], states: Sequence[PartitionState], reads: Sequence[Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """The model's answer to every observed read: the replica's log below its HW then.

    A read the broker refused (its ``error``: e.g. NOT_LEADER_FOR_PARTITION from a leader
    that had not yet taken up its election) keeps that error here, so the anomalies are
    computed from the same reads on both sides: the model's answer to a read nobody could
    make is no prediction of what a consumer saw (a CI run once reported a predicted HW
    regression "NOT as the model predicts" because the one read that would show it failed).
    """
    out = []
    for rd in reads:
        k = int(rd["step"])
        row = {**rd, "records": [], "hw": -1, "error": str(rd.get("error") or "")}
        if 1 <= k <= len(states):
            rep = states[k - 1].replicas[list(names).index(rd["replica"])]
            row["hw"] = rep.hw
            row["records"] = [[o, e.record] for o, e in enumerate(rep.log[: rep.hw])]
        out.append(row)
    return out


def anomalies(
    reads: Sequence[Mapping[str, Any]],
    final_log: Mapping[int, str],
    leader_hw: Mapping[int, int],
    lost: Sequence[str],
) -> dict[str, list[Any]]:
    """Jepsen-style anomalies of one sequence of reads (observed or predicted).

    ``final_log``: offset -> record of the final leader; ``leader_hw``: step -> the leader's
    HW at that step (for ``uncommitted_read``).
    """
    read_then_lost: list[dict[str, Any]] = []
    uncommitted: list[dict[str, Any]] = []
    seen: dict[int, set[str]] = {}
    regress: list[dict[str, Any]] = []
    last_hw: tuple[int, int] | None = None
    for rd in reads:
        if rd.get("error"):
            continue
        k = int(rd["step"])
        for o, rec in rd["records"]:
            seen.setdefault(int(o), set()).add(str(rec))
            if final_log.get(int(o)) != rec and not any(
                x["record"] == rec and x["offset"] == o for x in read_then_lost
            ):
                read_then_lost.append(
                    {"step": k, "replica": rd["replica"], "offset": o, "record": rec}
                )
            lhw = leader_hw.get(k, -1)
            if rd["role"] != "leader" and lhw >= 0 and int(o) >= lhw:
                uncommitted.append(
                    {
                        "step": k,
                        "replica": rd["replica"],
                        "offset": o,
                        "record": rec,
                        "leader_hw": lhw,
                    }
                )
        if rd["role"] == "leader" and int(rd["hw"]) >= 0:
            if last_hw is not None and int(rd["hw"]) < last_hw[1]:
                regress.append(
                    {"step": k, "from_step": last_hw[0], "before": last_hw[1], "after": rd["hw"]}
                )
            last_hw = (k, int(rd["hw"]))
    return {
        "lost": sorted(lost),
        "read_then_lost": read_then_lost,
        "hw_regression": regress,
        "uncommitted_read": uncommitted,
        "divergent_offsets": sorted(o for o, recs in seen.items() if len(recs) > 1),
    }


def consumer_verdict(
    names: Sequence[str],
    states: Sequence[PartitionState],
    reads: Sequence[Mapping[str, Any]],
    final_log: Mapping[int, str],
    predicted_final_log: Mapping[int, str],
    observed_hw: Mapping[int, int],
    lost: Sequence[str],
    predicted_lost: Sequence[str],
) -> dict[str, Any]:
    """``verdict.consumer``: reads compared one by one, and the anomalies both ways."""
    predicted = predicted_reads(names, states, reads)
    agree = 0
    compared = 0
    differ: list[dict[str, Any]] = []
    for o, p in zip(reads, predicted, strict=True):
        if o.get("error"):
            continue
        compared += 1
        if [list(x) for x in o["records"]] == p["records"]:
            agree += 1
        else:
            differ.append(
                {
                    "step": o["step"],
                    "replica": o["replica"],
                    "observed": [r for _o, r in o["records"]],
                    "predicted": [r for _o, r in p["records"]],
                }
            )
    model_hw: dict[int, int] = {}
    for k, st in enumerate(states, start=1):
        lead = st.controller.leader
        if 0 <= lead < len(st.replicas):
            model_hw[k] = st.replicas[lead].hw
    seen = anomalies(reads, final_log, observed_hw, lost)
    want = anomalies(predicted, predicted_final_log, model_hw, predicted_lost)
    keys = ("read_then_lost", "hw_regression", "uncommitted_read", "divergent_offsets")
    as_predicted = all(_keyset(seen[k]) == _keyset(want[k]) for k in keys)
    return {
        "reads": len(reads),
        "reads_compared": compared,
        "reads_agreeing": agree,
        "reads_differing": differ,
        "observed": seen,
        "predicted": want,
        "anomalies_as_predicted": as_predicted,
        "summary": _summary(seen, compared, agree, as_predicted, len(reads) - compared),
    }


def _keyset(items: list[Any]) -> list[Any]:
    """Compare anomalies by what happened, not by which step first showed it."""
    if items and isinstance(items[0], dict):
        return sorted({(x.get("offset"), x.get("record")) for x in items if "record" in x}) or [
            len(items)
        ]
    return items


def _summary(
    seen: dict[str, list[Any]], compared: int, agree: int, as_predicted: bool, refused: int = 0
) -> str:
    found = [f"{k} {len(v)}" for k, v in seen.items() if v]
    what = ", ".join(found) or "no anomaly"
    pred = "as the model predicts" if as_predicted else "NOT as the model predicts"
    not_made = f" ({refused} refused by the broker, compared on neither side)" if refused else ""
    return f"consumer: {agree}/{compared} reads as predicted{not_made}; {what} ({pred})"
