"""Playing a scenario through the model: the trace, the verdict and their table forms.

``run_scenario`` is what ``hwchaos model`` prints and what the harness compares real brokers
against. Each step keeps the full state after it, so the first step at which reality departs
from the prediction can be named.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from reference_model import verdict
from reference_model.events import ALL, FOLLOWERS, LEADER, Event
from reference_model.prevention import prevented
from reference_model.profiles import Generation, generation
from reference_model.scenario import Scenario
from reference_model.state import (
    ACKED,
    NO_LEADER,
    REFUSED,
    Config,
    PartitionState,
    initial_state,
)
from reference_model.transitions import apply


@dataclass(frozen=True)
class Step:
    """One scenario step as played: the event(s) it expanded to, notes, resulting state."""

    index: int  # 1-based; 0 is the initial state
    text: str
    events: tuple[Event, ...]
    notes: tuple[str, ...]
    state: PartitionState


@dataclass(frozen=True)
class RunResult:
    scenario: Scenario
    config: Config
    steps: tuple[Step, ...]  # steps[0] is the initial state
    # (1-based step, reason) of the first step the Kafka version makes impossible
    # (``reference_model.prevention``); the run stopped before it, so ``steps`` ends there.
    prevented: tuple[int, str] | None = None

    @property
    def final(self) -> PartitionState:
        return self.steps[-1].state

    @property
    def lost_acked(self) -> list[str]:
        return verdict.lost_acked(self.final)

    @property
    def divergent_offsets(self) -> list[int]:
        return verdict.divergent_offsets(self.final)

    def acked(self) -> list[str]:
        return [w.record for w in self.final.writes if w.status == ACKED]

    def lost_steps(self) -> dict[str, int]:
        """For each lost write, the step that caused the loss.

        That is the step after which the final leader no longer held the record (the
        truncation, in KIP-101 scenario 1); if the final leader never held it, the step after
        which the leader of the moment stopped holding it (the election of a replica that
        lacks it).
        """
        out: dict[str, int] = {}
        lost = set(self.lost_acked)
        final_leader = verdict.effective_leader(self.final)
        for w in self.final.writes:
            if w.record not in lost:
                continue
            on_final = on_current = -1
            for step in self.steps:
                lead = verdict.effective_leader(step.state)
                for who, is_final in ((final_leader, True), (lead, False)):
                    if who == NO_LEADER:
                        continue
                    log = step.state.replicas[who].log
                    if w.offset < len(log) and log[w.offset].record == w.record:
                        if is_final:
                            on_final = step.index
                        else:
                            on_current = step.index
            last = on_final if on_final >= 0 else on_current
            out[w.record] = min(last + 1, len(self.steps) - 1)
        return out

    def log_epoch(self, epoch: int) -> int:
        """Epoch as it appears on disk: message formats before v2 carry none (-1)."""
        return epoch if self.config.generation.epoch_in_log else -1

    def to_json(self) -> dict[str, Any]:
        """The ``--json`` object of ``hwchaos model``."""
        st = self.final
        names = self.config.brokers
        return {
            "scenario": self.scenario.name,
            "protocol": self.config.generation.name,
            "replicas": {
                n: [
                    {"offset": o, "epoch": self.log_epoch(e.epoch), "record": e.record}
                    for o, e in enumerate(r.log)
                ]
                for n, r in zip(names, st.replicas, strict=True)
            },
            "hw": {n: r.hw for n, r in zip(names, st.replicas, strict=True)},
            "leo": {n: r.leo for n, r in zip(names, st.replicas, strict=True)},
            "checkpoint_hw": {n: r.checkpoint_hw for n, r in zip(names, st.replicas, strict=True)},
            "epochs": {
                n: [list(e) for e in r.epochs] for n, r in zip(names, st.replicas, strict=True)
            },
            "alive": {n: r.alive for n, r in zip(names, st.replicas, strict=True)},
            "leader": names[st.controller.leader] if st.controller.leader != NO_LEADER else None,
            "leader_epoch": st.controller.epoch,
            "isr": [names[i] for i in sorted(st.controller.isr)],
            "elr": [names[i] for i in sorted(st.controller.elr)],
            "last_known_elr": [names[i] for i in sorted(st.controller.last_known_elr)],
            "mode": self.config.generation.mode,
            "rules": sorted(self.config.generation.rules),
            "acked": self.acked(),
            "refused": [w.record for w in st.writes if w.status == REFUSED],
            "writes": [
                {"record": w.record, "status": w.status, "offset": w.offset} for w in st.writes
            ],
            "lost_acked": self.lost_acked,
            "lost_steps": self.lost_steps(),
            "divergent_offsets": self.divergent_offsets,
            "outcomes": verdict.outcomes(self.config, st),
            "prevented": (
                {"step": self.prevented[0], "reason": self.prevented[1]}
                if self.prevented is not None
                else None
            ),
            "steps": [
                {
                    "step": s.index,
                    "event": s.text,
                    "note": "; ".join(n for n in s.notes if n),
                    **_controller_json(names, s.state),
                }
                for s in self.steps[1:]
            ],
        }

    def step_rows(self, run_id: str = "") -> list[dict[str, Any]]:
        """The state after every step, one row per (step, replica), for a DataFrame."""
        names = self.config.brokers
        rows = []
        for s in self.steps:
            ctrl = s.state.controller
            leader = names[ctrl.leader] if ctrl.leader != NO_LEADER else ""
            isr = ",".join(names[i] for i in sorted(ctrl.isr))
            for n, r in zip(names, s.state.replicas, strict=True):
                rows.append(
                    {
                        "run_id": run_id,
                        "step": s.index,
                        "event": s.text,
                        "replica": n,
                        "alive": r.alive,
                        "role": r.role,
                        "leo": r.leo,
                        "hw": r.hw,
                        "checkpoint_hw": r.checkpoint_hw,
                        "flushed": r.flushed,
                        "epochs": ",".join(f"{e}:{o}" for e, o in r.epochs),
                        "log": " ".join(
                            f"{e.record}@{o}/e{self.log_epoch(e.epoch)}"
                            for o, e in enumerate(r.log)
                        ),
                        "leader": leader,
                        "leader_epoch": ctrl.epoch,
                        "isr": isr,
                    }
                )
        return rows

    def replica_rows(self, run_id: str = "", source: str = "predicted") -> list[dict[str, Any]]:
        return [
            {
                "run_id": run_id,
                "source": source,
                "replica": n,
                "offset": o,
                "epoch": self.log_epoch(e.epoch),
                "record": e.record,
            }
            for n, r in zip(self.config.brokers, self.final.replicas, strict=True)
            for o, e in enumerate(r.log)
        ]

    def write_rows(self, run_id: str = "", source: str = "predicted") -> list[dict[str, Any]]:
        lost = set(self.lost_acked)
        lost_at = self.lost_steps()
        return [
            {
                "run_id": run_id,
                "source": source,
                "record": w.record,
                "status": w.status,
                "offset": w.offset,
                "acked": w.status == ACKED,
                "lost": w.record in lost,
                "lost_step": lost_at.get(w.record, -1),
                "lost_event": self.steps[lost_at[w.record]].text if w.record in lost_at else "",
            }
            for w in self.final.writes
        ]


def _controller_json(names: tuple[str, ...], st: PartitionState) -> dict[str, Any]:
    """The controller's decision after a step: what the harness reads from ZooKeeper or
    ``__cluster_metadata`` (leader, leader epoch, ISR, and under KIP-966 ELR/LastKnownElr)."""
    ctrl = st.controller
    return {
        "leader": names[ctrl.leader] if ctrl.leader != NO_LEADER else None,
        "leader_epoch": ctrl.epoch,
        "isr": [names[i] for i in sorted(ctrl.isr)],
        "elr": [names[i] for i in sorted(ctrl.elr)],
        "last_known_elr": [names[i] for i in sorted(ctrl.last_known_elr)],
    }


def expand(cfg: Config, st: PartitionState, ev: Event, records: int = 1) -> list[Event]:
    """Resolve aliases (leader/followers/all) against the current state; batch records."""
    if ev.kind == "produce":
        if records > 1:
            ids = ",".join(f"{ev.record}-{k}" for k in range(records))
            return [ev._replace(record=ids)]
        return [ev]
    n = len(cfg.brokers)
    leader = st.controller.leader
    if ev.replica == LEADER:
        return [ev._replace(replica=leader)] if leader != NO_LEADER else []
    if ev.replica == FOLLOWERS:
        return [ev._replace(replica=i) for i in range(n) if i != leader]
    if ev.replica == ALL:
        return [ev._replace(replica=i) for i in range(n)]
    return [ev]


def run_scenario(scenario: Scenario, gen: Generation | str) -> RunResult:
    """Play every step of ``scenario`` under generation ``gen``.

    Stops at the first step the version makes impossible (``reference_model.prevention``):
    that step and the later ones are not applied, ``steps`` ends at the state before it and
    ``prevented`` says which step and why. A step expanded to several events (``fetch:
    followers``) is prevented as a whole if any of its events is.
    """
    cfg = scenario.config(gen if isinstance(gen, Generation) else generation(gen))
    st = initial_state(cfg, scenario.leader)
    steps = [Step(0, "initial state", (), (), st)]
    for k, ev in enumerate(scenario.steps, start=1):
        events = expand(cfg, st, ev, scenario.records_per_produce)
        notes = []
        if not events:
            notes.append("no leader: alias 'leader' resolves to nobody")
        nxt = st
        for e in events:
            reason = prevented(cfg, nxt, e)
            if reason is not None:
                return RunResult(scenario, cfg, tuple(steps), (k, reason))
            nxt, note = apply(cfg, nxt, e)
            notes.append(note)
        st = nxt
        steps.append(Step(k, ev.describe(cfg.brokers), tuple(events), tuple(notes), st))
    return RunResult(scenario, cfg, tuple(steps))


def format_table(result: RunResult) -> str:
    """The human step-by-step table of ``hwchaos model`` and the verdict under it."""
    names = result.config.brokers
    elr = result.config.generation.elr
    head = f"{'step':>4}  {'event':<28}" + "".join(f"{n:<26}" for n in names) + "leader/epoch isr"
    if elr:
        head += " elr lastKnownElr"
    lines = [head, "-" * len(head)]
    for s in result.steps:
        ctrl = s.state.controller
        cells = []
        for r in s.state.replicas:
            status = "" if r.alive else "(down) "
            log = ",".join(e.record for e in r.log) or "-"
            cells.append(f"{status}[{log}] hw={r.hw}"[:25].ljust(26))
        leader = names[ctrl.leader] if ctrl.leader != NO_LEADER else "-"
        isr = ",".join(names[i] for i in sorted(ctrl.isr))
        line = f"{s.index:>4}  {s.text[:28]:<28}" + "".join(cells)
        line += f"{leader}/{ctrl.epoch} {{{isr}}}"
        if elr:
            line += " {" + ",".join(names[i] for i in sorted(ctrl.elr)) + "}"
            line += " {" + ",".join(names[i] for i in sorted(ctrl.last_known_elr)) + "}"
        lines.append(line)
        for note in s.notes:
            if note:
                lines.append(f"{'':>6}  ↳ {note}")
    j = result.to_json()
    lines.append("")
    lines.append(
        f"protocol: {j['protocol']} ({result.config.generation.kafka_versions})   "
        f"final leader: {j['leader']}   acked: {j['acked']}"
    )
    lines.append(f"lost acknowledged writes: {j['lost_acked'] or 'none'}")
    lines.append(f"divergent offsets: {j['divergent_offsets'] or 'none'}")
    if j["outcomes"]:
        lines.append(f"other outcomes: {', '.join(j['outcomes'])}")
    if result.prevented is not None:
        k, reason = result.prevented
        text = result.scenario.steps[k - 1].describe(names)
        lines.append(f"prevented at step {k} ({text}): {reason}")
    return "\n".join(lines)
