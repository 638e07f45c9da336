"""Reading scenario files: YAML on disk to a validated :class:`Scenario`.

The model never touches files; this is the one place that does, so every malformed file is
reported the same way: ``<file>: step N: what is wrong``.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from reference_model.scenario import Scenario, ScenarioError, parse_scenario

SCENARIO_DIR = Path(__file__).resolve().parents[2] / "scenarios"


def load_scenario(path: str | Path) -> Scenario:
    """Load and validate one scenario file; a bare name is looked up in ``scenarios/``."""
    p = Path(path)
    if not p.exists() and not p.suffix:
        candidate = SCENARIO_DIR / f"{p.name}.yaml"
        if candidate.exists():
            p = candidate
    if not p.is_file():
        raise ScenarioError(f"{path}: no such scenario file")
    try:
        doc = yaml.safe_load(p.read_text())
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" line {mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ScenarioError(f"{p}:{where}: invalid YAML: {problem}") from None
    return parse_scenario(doc, str(p))


def catalogue() -> list[Path]:
    """Every scenario shipped in ``scenarios/`` (explorer output included), sorted."""
    return sorted(SCENARIO_DIR.glob("*.yaml"))
