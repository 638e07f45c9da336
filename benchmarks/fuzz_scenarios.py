"""10,000 fuzzed scenario inputs per generator: how many end as a Scenario, as a one-line
ScenarioError, and as anything else (the target is 0).

Uses the generators of tests/test_scenario_fuzz.py (random bytes, random YAML documents,
scenario-shaped documents, valid scenarios with one field mutated).
Run: .venv/bin/python benchmarks/fuzz_scenarios.py [N] [random|scenario-shaped|valid ...]
"""

from __future__ import annotations

import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from harness.generator.scenarios import parse_text  # noqa: E402
from reference_model.scenario import Scenario, ScenarioError  # noqa: E402
from tests.unit.test_scenario_fuzz import (  # noqa: E402
    documents,
    dump,
    mutated_documents,
    scenario_shaped,
)


def run(name: str, strategy: st.SearchStrategy[Any], to_input: Any, n: int) -> Counter[str]:
    counts: Counter[str] = Counter()
    others: list[str] = []

    @settings(
        max_examples=n,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(strategy)
    def probe(value: Any) -> None:
        try:
            result = parse_text(to_input(value), "fuzz.yaml")
        except ScenarioError as exc:
            multi = "\n" in str(exc)
            counts["ScenarioError (multi-line!)" if multi else "ScenarioError"] += 1
            return
        except Exception as exc:  # what the property forbids: count and show it
            counts[f"other: {type(exc).__name__}"] += 1
            if len(others) < 5:
                others.append(f"{type(exc).__name__}: {exc!s:.200} <- {value!r:.200}")
            return
        counts["valid Scenario" if isinstance(result, Scenario) else "other result"] += 1

    t0 = time.perf_counter()
    probe()
    dt = time.perf_counter() - t0
    total = sum(counts.values())
    bad = total - counts["ScenarioError"] - counts["valid Scenario"]
    detail = ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))
    print(f"{name:<20} {total:>6} inputs in {dt:6.1f}s  other exceptions: {bad}  ({detail})")
    for line in others:
        print(f"    {line}")
    return counts


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000
    only = set(sys.argv[2:])  # generator names to run (default: all)
    generators: list[tuple[str, st.SearchStrategy[Any], Any]] = [
        ("random bytes", st.binary(max_size=400), lambda b: b),
        ("random YAML", documents, dump),
        ("scenario-shaped", scenario_shaped, dump),
        ("valid + mutated", mutated_documents(), dump),
    ]
    total: Counter[str] = Counter()
    for name, strategy, to_input in generators:
        if not only or name.split()[0] in only or name in only:
            total += run(name, strategy, to_input, n)
    bad = sum(v for k, v in total.items() if k not in ("ScenarioError", "valid Scenario"))
    print(f"{'all':<20} {sum(total.values()):>6} inputs, other exceptions: {bad}")


if __name__ == "__main__":
    main()
