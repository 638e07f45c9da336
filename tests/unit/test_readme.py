"""The README is a user's page: every command it shows must work as written.

Each ``hwchaos ...`` line of its shell blocks is parsed by the real command-line parser;
the model-only ones (``model``, ``explore`` without ``--confirm``, ``replay``) are run for
real, with their documented exit codes and printed results checked. Commands that need
brokers, a daemon or a download are parsed only. ``make`` targets must exist, the
``--hwchaos-*`` options must be the plugin's, and the fixture example must compile and name
fixtures the plugin provides.
"""

from __future__ import annotations

import argparse
import ast
import re
import shlex
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from harness.cli import main as cli_main

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
MAX_LINES = 250
RUNNABLE = {"model", "explore", "replay"}


@dataclass(frozen=True)
class Command:
    """One command line of a README shell block, with its trailing comment."""

    argv: tuple[str, ...]
    comment: str

    def __str__(self) -> str:
        return " ".join(self.argv)


def blocks(text: str, lang: str) -> list[str]:
    """The bodies of the fenced code blocks in ``text`` whose info string is ``lang``.

    Read fence by fence: a closing fence is never taken for the opening of the next block.
    """
    out: list[str] = []
    body: list[str] | None = None
    info = ""
    for line in text.splitlines(keepends=True):
        if line.startswith("```"):
            if body is None:
                body, info = [], line[3:].strip()
            else:
                if info == lang:
                    out.append("".join(body))
                body = None
        elif body is not None:
            body.append(line)
    return out


def commands(text: str) -> Iterator[Command]:
    """Shell lines of ``text`` (continuations joined), split into argv and comment."""
    for body in blocks(text, "sh"):
        for line in body.replace("\\\n", " ").splitlines():
            # The comment as written (quotes kept): it is compared with what the command prints.
            code, _, comment = re.sub(r"(^|\s)#\s*", "\0", line, count=1).partition("\0")
            words = shlex.split(code)
            if words:
                yield Command(tuple(words), comment)


def hwchaos_commands() -> list[Command]:
    out = []
    for c in commands(README.read_text()):
        if Path(c.argv[0]).name == "hwchaos":
            out.append(Command(c.argv[1:], c.comment))
    return out


class _Parsed(BaseException):
    """Raised instead of running a command once argparse accepted its arguments."""


def parse_only(argv: tuple[str, ...], monkeypatch: pytest.MonkeyPatch) -> None:
    """Parse ``argv`` with the real CLI (top level or a subcommand's own parser), run nothing.

    Every subcommand ends in ``ArgumentParser.parse_args`` before it does anything; the patch
    stops it right there. A refusal is argparse's ``SystemExit(2)``.
    """
    real = argparse.ArgumentParser.parse_args

    def stop(self: argparse.ArgumentParser, *a: object, **kw: object) -> argparse.Namespace:
        real(self, *a, **kw)  # type: ignore[call-overload]
        raise _Parsed

    monkeypatch.setattr(argparse.ArgumentParser, "parse_args", stop)
    with pytest.raises(_Parsed):
        cli_main(list(argv))


def test_readme_stays_a_users_page() -> None:
    n = len(README.read_text().splitlines())
    assert n <= MAX_LINES, f"README.md has {n} lines; internals belong in docs/"


def test_readme_shows_commands_of_every_kind() -> None:
    kinds = {c.argv[0] for c in hwchaos_commands()}
    assert {"model", "run", "explore", "advise", "replay", "matrix"} <= kinds


@pytest.mark.parametrize("cmd", hwchaos_commands(), ids=str)
def test_every_hwchaos_command_parses(cmd: Command, monkeypatch: pytest.MonkeyPatch) -> None:
    parse_only(cmd.argv, monkeypatch)


@pytest.mark.parametrize(
    "cmd",
    [c for c in hwchaos_commands() if c.argv[0] in RUNNABLE and "--confirm" not in c.argv],
    ids=str,
)
def test_model_only_commands_run_as_documented(
    cmd: Command,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Run in the repository (scenario names and paths as a user types them), output to tmp."""
    monkeypatch.chdir(ROOT)
    argv = list(cmd.argv)
    if "--out" in argv:
        argv[argv.index("--out") + 1] = str(tmp_path / "out")
    elif argv[0] == "explore":
        argv += ["--out", str(tmp_path / "found")]
    rc = cli_main(argv)
    out = capsys.readouterr().out
    m = re.search(r"exit (\d)", cmd.comment)
    assert rc == (int(m.group(1)) if m else 0), f"{cmd}: exit {rc}\n{out}"
    if cmd.comment.startswith("lost acknowledged writes:"):
        assert cmd.comment in out, f"{cmd}: the README says {cmd.comment!r}\n{out}"


def test_make_targets_exist() -> None:
    targets = set(re.findall(r"^([a-z][a-z-]*):", (ROOT / "Makefile").read_text(), re.MULTILINE))
    used = {c.argv[1] for c in commands(README.read_text()) if c.argv[0] == "make"}
    assert {"demo", "test", "test-fast", "test-integration", "test-system"} <= used
    assert used <= targets, used - targets


def test_pytest_lines_use_the_plugins_options(pytestconfig: pytest.Config) -> None:
    lines = [c for c in commands(README.read_text()) if Path(c.argv[0]).name == "pytest"]
    assert lines
    for c in lines:
        for word in c.argv:
            if word.startswith("--hwchaos-"):
                pytestconfig.getoption(word.split("=", 1)[0])  # ValueError if unknown


def test_fixture_example_compiles_and_names_the_plugins_fixtures(
    request: pytest.FixtureRequest,
) -> None:
    (example,) = blocks(README.read_text(), "python")
    tree = ast.parse(example)
    compile(tree, "README.md", "exec")
    imported = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import)
                for a in n.names}
    imported |= {n.module.split(".")[0] for n in ast.walk(tree)
                 if isinstance(n, ast.ImportFrom) and n.module}
    used = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    assert {"pytest", "Producer"} <= used and {"pytest", "confluent_kafka"} <= imported
    (fn,) = [n for n in tree.body if isinstance(n, ast.FunctionDef)]
    manager = request.session._fixturemanager
    for arg in fn.args.args:
        assert manager.getfixturedefs(arg.arg, request.node), f"no fixture {arg.arg!r}"


def test_parse_only_refuses_what_the_cli_refuses(monkeypatch: pytest.MonkeyPatch) -> None:
    """The check above is not vacuous: an option the CLI lacks is refused, at both levels."""
    for argv in (("model", "kip101-scenario1", "--no-such"), ("run", "x", "--kafka", "3.3.1",
                                                              "--no-such")):
        with pytest.raises(SystemExit):
            parse_only(argv, monkeypatch)


def test_inline_hwchaos_commands_parse(monkeypatch: pytest.MonkeyPatch) -> None:
    """Commands quoted in the prose (`hwchaos ...`) are held to the same parser."""
    inline = re.findall(r"`hwchaos ([^`]+)`", README.read_text())
    assert inline
    for text in inline:
        argv = tuple(shlex.split(text))
        if argv[0] in ("kafka", "docker", "image", "native") and len(argv) == 1:
            continue  # a command group named in passing
        parse_only(argv, monkeypatch)


def test_scenario_example_is_valid_and_plays(tmp_path: Path) -> None:
    from harness.generator.scenarios import load_scenario
    from reference_model.run import run_scenario

    (example,) = blocks(README.read_text(), "yaml")
    path = tmp_path / "mine.yaml"
    path.write_text(example)
    result = run_scenario(load_scenario(path), "3.3.1")
    assert result.to_json()["leader"] == "B"


def test_folder_map_names_existing_folders() -> None:
    (tree,) = [b for b in blocks(README.read_text(), "") if "reference_model/" in b]
    lines = tree.strip().splitlines()
    assert len(lines) <= 10
    for line in lines:
        assert (ROOT / line.split()[0]).is_dir(), line


def test_versions_shown_for_brokers_are_in_the_catalogue() -> None:
    from harness.db.catalogue.versions import CATALOGUE

    text = README.read_text()
    shown = {
        v
        for c in commands(text)
        for flag, value in zip(c.argv, c.argv[1:], strict=False)
        if flag in ("--kafka", "--versions", "--hwchaos-kafka")
        and (c.argv[1] != "model" if Path(c.argv[0]).name == "hwchaos" else True)
        for v in value.split(",")
    }
    section = text.split("## Where real Kafka comes from")[1].strip().split("\n\n")[0]
    examples = set(re.findall(r"`(\d[\w.-]*)`", section))
    assert len(examples) >= 4, section
    shown |= examples
    assert shown and shown <= set(CATALOGUE), shown - set(CATALOGUE)
