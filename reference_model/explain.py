"""Which rules of a profile decided each step: ``hwchaos model --explain``.

A rule decided a step when switching it off (or, for a rule the profile lacks, on) and
replaying the same events from the same state before the step gives a different observable
result: replica logs, HWs, checkpoints, leader-epoch caches, liveness, the controller's
leader/epoch/ISR/ELR, or the producer's outcome. This is a local counterfactual: each step
is judged from the state the full profile reached, so the answer reads "under this profile,
at this point, rule X made the difference", with the Kafka change that introduced X.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from reference_model.prevention import prevented
from reference_model.profiles import with_rule
from reference_model.rules import PREVENTION_RULES, RULES
from reference_model.run import RunResult, expand
from reference_model.state import PartitionState
from reference_model.transitions import apply


@dataclass(frozen=True)
class RuleEffect:
    rule: str
    in_profile: bool  # True: the profile has it and it decided the step; False: it lacks it
    # and having it would change the step
    change: str
    since: str
    mirrors: str

    def to_json(self) -> dict[str, Any]:
        return {
            "rule": self.rule,
            "in_profile": self.in_profile,
            "change": self.change,
            "since": self.since,
            "mirrors": self.mirrors,
        }

    def describe(self) -> str:
        verb = "decided by" if self.in_profile else "would differ with"
        return f"{verb} {self.rule} ({self.change}, since {self.since})"


def observable(st: PartitionState) -> tuple[Any, ...]:
    """What a step's outcome is judged on (bookkeeping fields of single rules left out)."""
    c = st.controller
    return (
        tuple(
            (r.log, r.hw, r.checkpoint_hw, r.epochs, r.alive, r.halted, r.role, r.leader, r.epoch)
            for r in st.replicas
        ),
        (c.leader, c.epoch, c.isr, c.elr, c.last_known_elr),
        tuple((w.record, w.status, w.offset) for w in st.writes),
    )


def explain(result: RunResult) -> list[list[RuleEffect]]:
    """For each step of ``result`` (initial state excluded), the rules that decided it."""
    cfg = result.config
    gen = cfg.generation
    out: list[list[RuleEffect]] = []
    variants = {
        name: cfg._replace(generation=with_rule(gen, name, name not in gen.rules))
        for name in RULES
        if name not in PREVENTION_RULES  # they change no transition: see prevention_effects
    }
    for prev, step in zip(result.steps, result.steps[1:], strict=False):
        want = observable(step.state)
        effects = []
        for name, alt in variants.items():
            st = prev.state
            for ev in step.events:
                st, _ = apply(alt, st, ev)
            if observable(st) != want:
                r = RULES[name]
                effects.append(
                    RuleEffect(name, name in gen.rules, r.change, ", ".join(r.since), r.mirrors)
                )
        out.append(effects)
    return out


def prevention_effects(result: RunResult) -> list[RuleEffect]:
    """The prevention rules that decided the prevented step (``result.prevented``).

    A rule decided it when switching it off (or, for one the profile lacks, on) changes
    whether, or by which rule, the step is prevented.
    """
    if result.prevented is None:
        return []
    cfg, gen = result.config, result.config.generation
    ev = result.scenario.steps[result.prevented[0] - 1]
    events = expand(cfg, result.final, ev, result.scenario.records_per_produce)

    def first(c: Any) -> str | None:
        for e in events:
            reason = prevented(c, result.final, e)
            if reason is not None:
                return reason
        return None

    want = first(cfg)
    out = []
    for name in PREVENTION_RULES:
        alt = cfg._replace(generation=with_rule(gen, name, name not in gen.rules))
        if first(alt) != want:
            r = RULES[name]
            out.append(RuleEffect(name, name in gen.rules, r.change, ", ".join(r.since), r.mirrors))
    return out


def explain_json(result: RunResult) -> list[dict[str, Any]]:
    """Per step: index, event and the rule effects (the ``--explain --json`` form); a
    prevented step comes last with ``prevented`` (the reason) and the rules behind it."""
    out: list[dict[str, Any]] = [
        {"step": s.index, "event": s.text, "rules": [e.to_json() for e in effects]}
        for s, effects in zip(result.steps[1:], explain(result), strict=True)
    ]
    if result.prevented is not None:
        k, reason = result.prevented
        out.append(
            {
                "step": k,
                "event": result.scenario.steps[k - 1].describe(result.config.brokers),
                "prevented": reason,
                "rules": [e.to_json() for e in prevention_effects(result)],
            }
        )
    return out


def format_explain(result: RunResult) -> str:
    """The human form: one block per step that some rule decided."""
    lines = [
        f"rules of {result.config.generation.name} ({result.config.generation.kafka_versions}):"
    ]
    for name in RULES:
        if name in result.config.generation.rules and name not in PREVENTION_RULES:
            r = RULES[name]
            lines.append(f"  {name:<28} {r.change} (since {', '.join(r.since)}): {r.mirrors}")
    lines.append("prevention rules (steps this version makes impossible):")
    for name in PREVENTION_RULES:
        if name in result.config.generation.rules:
            r = RULES[name]
            lines.append(f"  {name:<34} {r.change} (since {', '.join(r.since)}): {r.mirrors}")
    lines.append("")
    for s, effects in zip(result.steps[1:], explain(result), strict=True):
        if not effects:
            continue
        lines.append(f"{s.index:>4}  {s.text}")
        for e in effects:
            lines.append(f"        {e.describe()}")
    if result.prevented is not None:
        k, reason = result.prevented
        lines.append(f"{k:>4}  {result.scenario.steps[k - 1].describe(result.config.brokers)}")
        for e in prevention_effects(result):
            verb = "prevented by" if e.in_profile else "would be allowed with"
            lines.append(f"        {verb} {e.rule} ({e.change}, since {e.since})")
        lines.append(f"        {reason}")
    return "\n".join(lines)
