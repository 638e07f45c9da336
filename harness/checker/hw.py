"""The per-step HW check: each replica's observed HW after every step against the model's.

The observed HW comes from the brokers (harness.readback.hw: every replica's own
``replication-offset-checkpoint``; the leader's ListOffsets answer as a cross-check), never
from the model. A step where some replica's observed HW differs from the model's ``hw`` is
a mismatch naming the step, the replica, both values and the source, so a wrong model (or a
broker that did something else) fails the run at the step where it happened, not only when
the final logs differ. A replica without a partition on disk (-1) is not compared.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from harness.checker.diff import Verdict

HW_SOURCE = "replication-offset-checkpoint"
"""What :func:`hw_check` compares: each broker's own HW checkpoint (all versions)."""

HARNESS_NOTE = "harness: "
"""How a step's note starts when the harness writes of its own step (a pause it could not
make in time, a follower that ran meanwhile), observed, never assumed."""

CARRIED = re.compile(r"harness: (\S+) held .*: applied when \S+ next runs")
"""A harness note whose effect shows at a later step: replicas (``B`` or ``B,C``) that hold
an answer unread (playbook/crash.py ``_answers_unread``: a killed leader's answer to a
parked Fetch). It is a hint of that replica's next HW difference, wherever it shows."""


@dataclass
class HwMismatch:
    step: int
    event: str
    replica: str
    predicted: int
    observed: int
    source: str
    stable: bool
    hint: str = ""  # a known cause recognised from the step and the values, if any

    def describe(self) -> str:
        moving = "" if self.stable else ", still moving"
        hint = f" ({self.hint})" if self.hint else ""
        return (
            f"step {self.step} ({self.event}): {self.replica}'s HW is {self.observed} "
            f"({self.source}{moving}), the model says {self.predicted}{hint}"
        )


@dataclass
class HwCheck:
    """The per-step HW agreement of one run (``verdict.hw``)."""

    source: str = HW_SOURCE
    steps_compared: int = 0
    steps_agreeing: int = 0
    replicas_compared: int = 0
    replicas_agreeing: int = 0
    mismatches: list[HwMismatch] = field(default_factory=list)
    # leader HW on the wire (ListOffsets) against its own checkpoint: differences only
    wire_vs_checkpoint: list[dict[str, Any]] = field(default_factory=list)

    @property
    def first(self) -> HwMismatch | None:
        return self.mismatches[0] if self.mismatches else None

    @property
    def match(self) -> bool:
        return not self.mismatches

    def summary(self) -> str:
        head = f"HW per step ({self.source}): {self.steps_agreeing}/{self.steps_compared} agree"
        first = self.first
        return head if first is None else f"{head}; first: {first.describe()}"

    def to_json(self) -> dict[str, Any]:
        doc = asdict(self)
        doc["first_step"] = self.first.step if self.first else None
        doc["summary"] = self.summary()
        return doc


def hw_check(
    names: Sequence[str],
    predicted_hw: Sequence[Sequence[int]],
    observations: Sequence[Any],
    controller: Sequence[tuple[str, list[str]]] | None = None,
) -> HwCheck:
    """Compare, step by step, the model's HW of every replica with the observed one.

    ``predicted_hw[k-1][i]``: the model's HW of replica ``names[i]`` after step k.
    ``observations``: the playbook's per-step observations (``step``, ``event``, ``hw``,
    ``hw_stable``, ``leader``, ``isr``, ``leader_hw_wire``); steps without an HW reading (a
    run recorded before HW observation existed) are skipped, not counted as agreeing.
    ``controller[k-1]``: the model's (leader, ISR) after step k, to say why a step differs
    where the controller's observed decision already does.
    """
    out = HwCheck()
    carried: dict[str, str] = {}  # replica -> an earlier step's note that explains it
    for obs in observations:
        seen: dict[str, int] = dict(getattr(obs, "hw", {}) or {})
        if not seen or obs.step - 1 >= len(predicted_hw):
            _carry(obs, carried)
            continue
        stable: dict[str, bool] = dict(getattr(obs, "hw_stable", {}) or {})
        want = predicted_hw[obs.step - 1]
        step_ok = True
        compared = 0
        step_hint = _hint(obs, controller[obs.step - 1] if controller else None)
        for i, name in enumerate(names):
            got = seen.get(name, -1)
            if got < 0:
                continue
            compared += 1
            out.replicas_compared += 1
            if got == want[i]:
                out.replicas_agreeing += 1
                continue
            step_ok = False
            out.mismatches.append(
                HwMismatch(
                    obs.step,
                    obs.event,
                    name,
                    int(want[i]),
                    got,
                    HW_SOURCE,
                    stable.get(name, True),
                    "; ".join(x for x in (step_hint, carried.pop(name, "")) if x),
                )
            )
        _carry(obs, carried)
        wire = int(getattr(obs, "leader_hw_wire", -1))
        lead = getattr(obs, "leader", "")
        if wire >= 0 and lead and seen.get(lead, -1) >= 0 and seen[lead] != wire:
            out.wire_vs_checkpoint.append(
                {"step": obs.step, "leader": lead, "wire": wire, "checkpoint": seen[lead]}
            )
        if compared:
            out.steps_compared += 1
            out.steps_agreeing += int(step_ok)
    return out


def _carry(obs: Any, carried: dict[str, str]) -> None:
    """Keep the :data:`CARRIED` notes of step ``obs`` for the replicas they name."""
    for n in getattr(obs, "notes", []) or []:
        for part in n.split("; "):
            m = CARRIED.match(part.strip())
            if m:
                for name in m.group(1).split(","):
                    carried[name] = f"step {obs.step}: {part.strip()}"


def _hint(obs: Any, want: tuple[str, list[str]] | None) -> str:
    """Why, where the step's observation says it: leader or ISR other than the model's, and
    what the harness itself said of the step (a pause it could not make in time)."""
    out = []
    if want is not None:
        leader, isr = want
        seen_leader = str(getattr(obs, "leader", ""))
        seen_isr = sorted(getattr(obs, "isr", []) or [])
        if seen_leader != leader:
            out.append(f"leader is {seen_leader or 'none'}, the model's {leader or 'none'}")
        if seen_isr != sorted(isr):
            out.append(f"ISR is {seen_isr}, the model's {sorted(isr)}")
    out += [
        part.strip()
        for n in getattr(obs, "notes", []) or []
        for part in n.split("; ")
        if part.startswith(HARNESS_NOTE)
    ]
    return "; ".join(out)


def predicted_hws(prediction: Any) -> list[list[int]]:
    """The model's HW of every replica after every step (``RunResult.steps[1:]``)."""
    return [[int(r.hw) for r in s.state.replicas] for s in prediction.steps[1:]]


def controller_view(run: Any) -> list[tuple[str, list[str]]]:
    """The model's (leader, ISR) by broker name after every step of ``run``."""
    names = list(run.config.brokers)
    out = []
    for s in run.steps[1:]:
        c = s.state.controller
        lead = names[c.leader] if 0 <= c.leader < len(names) else ""
        out.append((lead, [names[i] for i in sorted(c.isr)]))
    return out


def judge_hw(
    verdict: Verdict,
    names: Sequence[str],
    predicted_hw: Sequence[Sequence[int]],
    observations: Sequence[Any],
    controller: Sequence[tuple[str, list[str]]] | None = None,
) -> HwCheck:
    """Add the per-step HW check to ``verdict`` (a checker.diff.Verdict); a mismatch fails it.

    The run is a model mismatch from the first step whose observed HW differs, whatever
    the final logs say: a run whose logs end equal can hide a step that went wrong.
    """
    result = hw_check(names, predicted_hw, observations, controller)
    verdict.hw = result.to_json()
    first = result.first
    if first is not None:
        verdict.differs_at(first.step, first.describe())
    return result


def missed_window(verdict: Verdict | None) -> str:
    """The harness's own note on the step where a model mismatch first shows; "" otherwise.

    Some steps have a window the harness must act in: a follower paused while its next Fetch
    is parked at the leader (``replica.fetch.wait.max.ms``), a follower run through an ISR
    shrink paused before the HW the shrink raised reaches it. A loaded machine can miss it,
    and the step then says so, observed ("harness: B (or its leader) paused 1.30s after its
    fetch round ...", "harness: A ... applied the HW the shrink raised (1 -> 2 ...)"). A
    mismatch whose first HW difference carries such a note, with no broker exiting
    unpredicted, says the step was not played as scripted: the run is no evidence on the
    model either way, and playing it again is the answer (the pytest plugin does, once).
    Final logs that differ too count as downstream of that step only when no replica's LEO
    differed before it (``first_differing_step`` at or after the flagged step): a follower
    that applied a second fetch round keeps a record the model has it truncate (0.10.2.1
    kip101-scenario1-kip-text in a container, CI 6 Dec 2026: A paused 1.32 s after its
    round, HW 2 where the model says 1, so m2 was kept and not lost). Logs that differ with
    no step named, or from an earlier step, are evidence. Any other mismatch is evidence,
    and stays one; a run played again is judged as it comes.
    """
    if verdict is None or verdict.verdict != "model_mismatch":
        return ""
    if any(not h.get("predicted") for h in verdict.halts) or verdict.liveness:
        return ""  # a broker or the controller went its own way: evidence
    mismatches = (verdict.hw or {}).get("mismatches") or []
    if not mismatches:
        return ""
    first = mismatches[0]
    if HARNESS_NOTE not in str(first.get("hint", "")):
        return ""
    if verdict.differences:
        began = verdict.first_differing_step
        if began is None or began < int(first.get("step", 0)):
            return ""  # the logs parted before the step the harness flagged: evidence
    try:
        return HwMismatch(**first).describe()
    except TypeError:  # a run.json written before a field was added or renamed
        return str(first)
