"""Every scenario the project shows a user passes the strict validation.

The catalogue (``scenarios/`` and ``scenarios/found/``) and each YAML example in the README
and ``docs/`` that is a scenario (has ``steps:``) or an ``expect:`` block: a doc example
that the loader refuses would teach a key that does not exist.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from harness.generator.scenarios import SCENARIO_DIR, parse_text
from reference_model.scenario import Scenario

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^```yaml\n(.*?)^```", re.S | re.M)


def _examples() -> list[tuple[str, str]]:
    out = []
    for doc in DOCS:
        if not doc.is_file():
            continue
        for k, m in enumerate(FENCE.finditer(doc.read_text()), start=1):
            text = m.group(1)
            if re.search(r"(?m)^steps\s*:", text):
                out.append((f"{doc.name} example {k}", text))
            elif re.search(r"(?m)^expect\s*:", text):
                # An expect: block on its own: give it the brokers and records it names.
                body = yaml.safe_load(text)["expect"]
                names = sorted((body.get("replicas") or {}).keys()) or ["A", "B"]
                records = sorted(
                    {r for v in (body.get("replicas") or {}).values() for r in v}
                    | set(body.get("lost_acked") or [])
                )
                host = {
                    "brokers": names,
                    "steps": [{"produce": r} for r in records] or [{"crash": names[0]}],
                }
                out.append((f"{doc.name} example {k}", yaml.safe_dump(host) + text))
    return out


EXAMPLES = _examples()


def test_the_readme_has_scenario_examples() -> None:
    assert any(name.startswith("README.md") for name, _ in EXAMPLES)


@pytest.mark.parametrize(("name", "text"), EXAMPLES, ids=[n for n, _ in EXAMPLES])
def test_doc_example_passes_validation(name: str, text: str) -> None:
    assert isinstance(parse_text(text, name), Scenario)


@pytest.mark.parametrize(
    "path",
    sorted(SCENARIO_DIR.glob("*.yaml")) + sorted(SCENARIO_DIR.glob("found/*.yaml")),
    ids=lambda p: p.name,
)
def test_catalogue_file_passes_validation(path: Path) -> None:
    assert isinstance(parse_text(path.read_bytes(), str(path)), Scenario)


def test_model_prints_the_settings_in_force(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A file in Kafka's spelling: ``model`` shows min.insync.replicas=2, not the default 1."""
    from harness.cli import main

    f = tmp_path / "kafka-names.yaml"
    f.write_text(
        "topic: {replication.factor: 3, min.insync.replicas: 2}\n"
        "producer: {acks: all}\nsteps: [{produce: m1}, {crash: leader}]\n"
    )
    assert main(["model", str(f)]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert first.startswith(
        "settings: acks=all min.insync.replicas=2 unclean.leader.election.enable=false "
        "replication.factor=3"
    ), first
