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
        data = p.read_bytes()
    except OSError as exc:
        raise ScenarioError(f"{p}: cannot read: {exc.strerror or exc}") from None
    return parse_text(data, str(p))


def parse_text(data: bytes | str, source: str) -> Scenario:
    """Validate a scenario given as bytes (a file's content) or text; ``source`` names it.

    Every input ends as a :class:`Scenario` or a one-line :class:`ScenarioError`: bytes that
    are not UTF-8, YAML that does not parse (including nesting too deep for the parser), and
    documents of the wrong shape.
    """
    if isinstance(data, bytes):
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            line = data[: exc.start].count(b"\n") + 1
            raise ScenarioError(
                f"{source}: line {line}: not UTF-8 text (byte 0x{data[exc.start]:02x} at "
                f"offset {exc.start}); save the file as UTF-8"
            ) from None
    else:
        text = data
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" line {mark.line + 1}:" if mark is not None else ""
        problem = getattr(exc, "problem", None) or getattr(exc, "reason", None) or str(exc)
        first = str(problem).splitlines()[0] if str(problem).strip() else type(exc).__name__
        raise ScenarioError(f"{source}:{where} invalid YAML: {first}") from None
    except RecursionError:
        raise ScenarioError(f"{source}: invalid YAML: nested too deeply") from None
    return parse_scenario(doc, source)


def catalogue() -> list[Path]:
    """Every scenario shipped in ``scenarios/`` (explorer output included), sorted."""
    return sorted(SCENARIO_DIR.glob("*.yaml"))
