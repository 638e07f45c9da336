"""docs/: the generated rule tables equal the rules, and every link leads somewhere.

The rules table in ``docs/model.md`` is made from ``reference_model.rules.RULES`` by
``scripts/gen_docs.py``; a rule edited without ``make docs`` fails here. Links between the
README and docs/ (files and ``#anchors``) must resolve, and the background notes the code
cites must be in the repository.
"""

from __future__ import annotations

import dataclasses
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))

import gen_docs  # noqa: E402

from reference_model import rules  # noqa: E402

PAGES = [ROOT / "README.md", ROOT / "docker" / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"\]\(([^)\s]+)\)")


def test_generated_tables_are_current() -> None:
    text = (ROOT / "docs" / "model.md").read_text()
    assert gen_docs.fill(text, gen_docs.CATALOGUE) == text, "run `make docs` and commit"
    assert gen_docs.main(["--check"]) == 0


def test_every_rule_and_catalogue_profile_is_in_the_tables() -> None:
    text = (ROOT / "docs" / "model.md").read_text()
    for name in rules.RULES:
        assert f"| `{name}` |" in text, name
    for name in gen_docs.CATALOGUE:
        assert f"| `{name}` |" in text, name


def test_a_changed_rule_makes_the_committed_table_stale(monkeypatch: pytest.MonkeyPatch) -> None:
    """Mutation: move one rule's first release; the check must see the table is stale."""
    text = (ROOT / "docs" / "model.md").read_text()
    rule = rules.RULES["fencing"]
    moved = dataclasses.replace(rule, since=("2.2.0",))
    monkeypatch.setitem(rules.RULES, "fencing", moved)
    new = gen_docs.fill(text, gen_docs.CATALOGUE)
    assert new != text
    assert "| `fencing` | KIP-320 (KAFKA-7395) | 2.2.0 |" in new
    # and the catalogue's 2.1.1 profile loses the rule in the generated profiles table
    row = next(line for line in new.splitlines() if line.startswith("| `2.1.1` |"))
    assert "`fencing`" not in row


def test_an_unknown_generated_block_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown generated block 'nope'"):
        gen_docs.fill("<!-- generated: nope -->\n<!-- end generated -->", [])


def _anchors(page: Path) -> set[str]:
    """GitHub's heading anchors: lower case, punctuation dropped, spaces as dashes."""
    out = set()
    for line in page.read_text().splitlines():
        if line.startswith("#"):
            title = line.lstrip("#").strip().lower()
            out.add(re.sub(r"[^\w\- ]", "", title).replace(" ", "-"))
    return out


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_links_resolve(page: Path) -> None:
    for target in LINK.findall(page.read_text()):
        if re.match(r"[a-z]+:", target):
            continue  # http(s), mailto: not followed here
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        assert dest.exists(), f"{page.name}: link to missing {target}"
        if anchor and dest.suffix == ".md":
            assert anchor in _anchors(dest), f"{page.name}: no heading #{anchor} in {dest.name}"


def test_the_background_the_code_cites_is_in_docs() -> None:
    assert (ROOT / "docs" / "background.md").is_file()
    for folder in ("reference_model", "harness", "tests", "explorer"):
        for src in (ROOT / folder).rglob("*.py"):
            if src == Path(__file__):
                continue
            text = src.read_text()
            for m in re.finditer(r"\S*BACKGROUND\.md|\S*background\.md", text):
                assert "docs/background.md" in m.group(0), f"{src}: cites {m.group(0)}"


ROOTS = ("reference_model/", "harness/", "explorer/", "tests/", "scripts/", "benchmarks/",
         "docker/", "scenarios/", "docs/")


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_repository_paths_named_in_docs_exist(page: Path) -> None:
    """A file or folder named in `code` (e.g. `harness/db/modes.py`) exists: moves show here."""
    missing = []
    for token in re.findall(r"`([^`\s]+)`", page.read_text()):
        path = token.split("::")[0].rstrip(",.;:")
        placeholder = re.search(r"[<>*{}$]", path)
        if path.startswith(ROOTS) and not placeholder and not (ROOT / path).exists():
            missing.append(token)
    assert not missing, f"{page.name} names paths that do not exist: {missing}"
