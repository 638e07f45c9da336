"""One CLI style: every command module has ``add_arguments``/``run``, one shared override group,
``--profile`` with ``--protocol`` as its alias, lazy imports. ``hwchaos run --rf`` once answered
"unrecognized arguments" although the README promised it."""

from __future__ import annotations

import argparse
import importlib
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from harness.cli import COMMANDS, build_parser, main
from harness.db.catalogue.versions import KafkaVersion
from reference_model.scenario import Scenario

ROOT = Path(__file__).resolve().parents[2]
FLEXIBLE = str(ROOT / "scenarios/acks-all-min-isr2-one-crash.yaml")  # names no brokers
OVERRIDES = {"--acks", "--min-insync", "--unclean", "--rf", "--records"}


def _options(command: str) -> set[str]:
    parser = build_parser(only=command)
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return {o for a in sub.choices[command]._actions for o in a.option_strings}


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_command_module_has_add_arguments_and_run(command: str) -> None:
    module = importlib.import_module(COMMANDS[command][0])
    assert callable(module.add_arguments) and callable(module.run)


@pytest.mark.parametrize("command", ["model", "run", "matrix", "explore"])
def test_the_shared_override_group_is_on_every_scenario_command(command: str) -> None:
    assert _options(command) >= OVERRIDES


@pytest.mark.parametrize("command", ["model", "explore", "advise"])
def test_profile_is_the_word_and_protocol_its_alias(command: str) -> None:
    assert {"--profile", "--protocol"} <= _options(command)


def test_model_takes_profile_and_protocol_alike(capsys: pytest.CaptureFixture[str]) -> None:
    scenario = str(ROOT / "scenarios/kip101-scenario1.yaml")
    assert main(["model", scenario, "--profile", "kip101", "--json"]) == 0
    by_profile = capsys.readouterr().out
    assert main(["model", scenario, "--protocol", "kip101", "--json"]) == 0
    assert capsys.readouterr().out == by_profile


def test_run_takes_rf_and_plays_the_scenario_with_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """``hwchaos run SCENARIO --kafka 3.3.1 --rf 3`` reaches the trial with RF 3."""
    import harness.cli.run as run_cmd

    seen: dict[str, Any] = {}

    class Stop(Exception):
        pass

    def fake_trial(scenario: Scenario, version: KafkaVersion, *_a: Any, **_k: Any) -> Any:
        seen["rf"], seen["version"] = scenario.rf, version.name
        raise Stop

    monkeypatch.setattr(run_cmd, "trial", fake_trial)
    with pytest.raises(Stop):
        main(["run", FLEXIBLE, "--kafka", "3.3.1", "--rf", "3", "--out", "/nonexistent-hw"])
    assert seen == {"rf": 3, "version": "3.3.1"}


def test_top_level_help_imports_no_command_module() -> None:
    code = (
        "import sys; from harness.cli import build_parser; build_parser(only='');"
        "print(sorted(m for m in sys.modules if m.startswith('harness.cli.')))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "[]"


def test_model_imports_neither_the_runner_nor_pandas() -> None:
    code = (
        "import sys; from harness.cli import build_parser; build_parser(only='model');"
        "print(sorted(m for m in ('pandas', 'harness.generator.runner') if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "[]"


def test_a_quorum_size_on_a_zookeeper_version_is_one_line_and_leaves_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "runs"
    argv = ["run", FLEXIBLE, "--kafka", "3.3.1", "--controllers", "3", "--out", str(out)]
    assert main(argv) == 2
    assert capsys.readouterr().err.strip() == (
        "hwchaos run: --controllers 3: 3.3.1 is not a KRaft version"
    )
    assert not out.exists() or not any(out.iterdir())
