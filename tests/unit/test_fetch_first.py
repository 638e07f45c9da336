"""Which follower a ``partition`` lets fetch before the cut, so a later ``isr_shrink`` of
another follower drops only that one on a real broker (jepsen-2013-isr-shrink)."""

from __future__ import annotations

from pathlib import Path

from harness.generator.playbook.partition import fetch_first
from harness.generator.scenarios import load_scenario
from reference_model.run import run_scenario
from reference_model.scenario import Scenario

SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"


def _first(sc: Scenario, k: int) -> list[str]:
    prediction = run_scenario(sc, "hw")
    names = list(sc.brokers)
    ev = sc.steps[k - 1]
    assert ev.kind == "partition"
    links = [(names[a], names[b]) for a, b in ev.links if a >= 0 and b >= 0]
    return fetch_first(prediction, sc.steps, names, k, links)


def test_the_follower_the_model_keeps_fetches_first() -> None:
    """``isr_shrink B`` then ``isr_shrink C``: C, kept in the ISR after B's shrink, fetches
    first; B, the one shrunk first, stays paused."""
    sc = load_scenario(str(SCENARIOS / "jepsen-2013-isr-shrink.yaml"))
    assert _first(sc, 4) == ["C"]


def test_the_order_of_the_shrinks_decides(tmp_path: Path) -> None:
    """Swapping the two shrinks swaps who fetches first: the choice comes from the script,
    not from a fixed broker. (B needs one more fetch first: after ``fetch: followers`` twice
    the model has B at HW 0, and a fetch that brings it HW 1 is one the script lacks.)"""
    text = (SCENARIOS / "jepsen-2013-isr-shrink.yaml").read_text()
    swapped = text.replace("isr_shrink: B ", "isr_shrink: X ").replace(
        "isr_shrink: C ", "isr_shrink: B "
    )
    swapped = swapped.replace("isr_shrink: X ", "isr_shrink: C ")
    assert swapped != text
    path = tmp_path / "swapped.yaml"
    path.write_text(swapped)
    assert _first(load_scenario(str(path)), 4) == []  # B's HW is behind: not run
    path.write_text(swapped.replace("  - partition:", "  - fetch: B\n  - partition:"))
    assert _first(load_scenario(str(path)), 5) == ["B"]


def test_a_lagging_follower_does_not_fetch_first(tmp_path: Path) -> None:
    """A follower whose fetch would copy something (m2 produced before the partition) is
    never run: that fetch is one the script does not have."""
    text = (SCENARIOS / "jepsen-2013-isr-shrink.yaml").read_text()
    lines = text.splitlines()
    i = next(n for n, line in enumerate(lines) if line.strip().startswith("- partition:"))
    j = next(n for n, line in enumerate(lines) if line.strip().startswith("- produce: m2"))
    lines[i], lines[j] = lines[j], lines[i]
    path = tmp_path / "lagging.yaml"
    path.write_text("\n".join(lines) + "\n")
    assert _first(load_scenario(str(path)), 5) == []
