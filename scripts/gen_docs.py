"""The generated tables of ``docs/``: rules and profiles from ``RULES``, steps, the catalogue.

Why generated: the tables used to be copied by hand from ``reference_model.rules.RULES``
into the README, and nothing noticed when a rule's first release or boundary test changed.
``docs/model.md`` holds them between ``<!-- generated: NAME -->`` and ``<!-- end generated -->``
markers; ``python scripts/gen_docs.py`` (``make docs``) rewrites those blocks in place, and
``--check`` only says whether they are current (exit 1 and the file's name when not), which
is what ``tests/unit/test_docs.py`` relies on. Run it after changing a rule, a first release
or the harness catalogue.

It lives here, not in ``reference_model/``, because it is documentation, not model: the
compiled model is built from every file of that folder, and the model never imports the
harness (whose catalogue names the profiles described).
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable, Iterable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import yaml  # noqa: E402

from harness.db.catalogue.versions import CATALOGUE  # noqa: E402
from reference_model.kinds import KINDS  # noqa: E402
from reference_model.profiles import resolve  # noqa: E402
from reference_model.rules import RULES, Rule  # noqa: E402

DOCS = (ROOT / "docs" / "model.md", ROOT / "docs" / "scenarios.md")
SCENARIOS = ROOT / "scenarios"

_MODE = {"any": "both", "zk": "ZooKeeper", "kraft": "KRaft"}


def _cell(text: str) -> str:
    """One table cell: pipes escaped, so a rule's text never breaks the table."""
    return text.replace("|", "\\|")


def _code_list(text: str, sep: str = ", ") -> str:
    return ", ".join(f"`{part.strip()}`" for part in text.split(sep) if part.strip())


def _boundary(rule: Rule) -> str:
    """Boundary references as links a reader can follow from ``docs/``."""
    out = []
    for ref in rule.boundary.split(", "):
        path, _, test = ref.partition("::")
        label = f"{path.rsplit('/', 1)[-1]}::{test}" if test else path.rsplit("/", 1)[-1]
        out.append(f"[`{label}`](../{path})")
    return ", ".join(out)


def _mode(rule: Rule) -> str:
    mode = _MODE[rule.mode]
    if rule.feature:
        mode += f" + feature `{rule.feature}`"
    if rule.needs_ibp:
        mode += f" (IBP {rule.needs_ibp}+)"
    return mode


def rules_markdown() -> str:
    """The behaviour rules (those that change a transition), one row each, in RULES order."""
    head = (
        "| rule | Kafka change | first release | mode | what changes | broker code mirrored "
        "| boundary |\n|---|---|---|---|---|---|---|\n"
    )
    rows = [
        f"| `{r.name}` | {_cell(r.change)} | {', '.join(r.since)} | {_mode(r)} "
        f"| {_cell(r.summary)} | {_cell(r.mirrors)} | {_boundary(r)} |"
        for r in RULES.values()
        if not r.prevents
    ]
    return head + "\n".join(rows) + "\n"


def prevention_markdown() -> str:
    """The prevention rules: which step kinds a release refuses, and from which release."""
    head = (
        "| rule | Kafka change | first release | mode | prevents | what is impossible "
        "| broker code | boundary |\n|---|---|---|---|---|---|---|---|\n"
    )
    rows = [
        f"| `{r.name}` | {_cell(r.change)} | {', '.join(r.since)} | {_mode(r)} "
        f"| {_code_list(', '.join(r.prevents))} | {_cell(r.summary)} | {_cell(r.mirrors)} "
        f"| {_boundary(r)} |"
        for r in RULES.values()
        if r.prevents
    ]
    return head + "\n".join(rows) + "\n"


def profiles_markdown(names: Iterable[str]) -> str:
    """Per profile name (the harness catalogue's), its mode and the rules in force."""
    head = "| profile | resolves to | behaviour rules | prevention rules |\n|---|---|---|---|\n"
    rows = []
    for name in names:
        p = resolve(name)
        behaviour = [r.name for r in RULES.values() if r.name in p.rules and not r.prevents]
        prevention = [r.name for r in RULES.values() if r.name in p.rules and r.prevents]
        rows.append(
            f"| `{name}` | {_cell(p.kafka_versions)} "
            f"| {', '.join(f'`{n}`' for n in behaviour) or 'none'} "
            f"| {', '.join(f'`{n}`' for n in prevention) or 'none'} |"
        )
    return head + "\n".join(rows) + "\n"


def steps_markdown() -> str:
    """Every step kind a scenario may use, with its one-line meaning and how the harness and
    the explorer treat it (``reference_model.kinds.KINDS``)."""
    head = (
        "| step | takes | what happens | on brokers | explored |\n|---|---|---|---|---|\n"
    )
    rows = []
    for k in KINDS.values():
        args = (("broker", k.takes_replica), ("record", k.takes_record), ("value", k.takes_value))
        takes = [w for w, on in args if on]
        played = ("played" + " (network)" * k.needs_network) if k.played else "model-only"
        explored = {None: "no", "": "yes"}.get(k.explore, f"`{k.explore}`")
        if k.explore and k.explore.startswith("!"):
            explored = f"unless `{k.explore[1:]}`"
        rows.append(
            f"| `{k.name}` | {', '.join(takes)} | {_cell(k.meaning)} | {played} | {explored} |"
        )
    return head + "\n".join(rows) + "\n"


def catalogue_markdown(folder: Path = SCENARIOS) -> str:
    """The catalogue: each scenario file's name, what it shows and what fixes it."""
    head = "| scenario | what it shows | fixed by |\n|---|---|---|\n"
    rows = []
    for path in sorted(folder.glob("*.yaml")):
        doc = yaml.safe_load(path.read_text())
        text = " ".join(str(doc.get("description", "")).split())
        rows.append(
            f"| [`{path.stem}`](../scenarios/{path.name}) | {_cell(text)} "
            f"| {_cell(str(doc.get('fixed_by', '')))} |"
        )
    return head + "\n".join(rows) + "\n"


_BLOCK = re.compile(
    r"(<!-- generated: (?P<name>[a-z-]+) -->\n)(?P<body>.*?)(<!-- end generated -->)", re.DOTALL
)


def fill(text: str, catalogue: Iterable[str]) -> str:
    """``text`` with every generated block rewritten from the rules (unknown names refused).

    The blocks: ``rules``, ``prevention``, ``profiles`` (over ``catalogue``), ``steps`` and
    ``catalogue`` (the scenario files).
    """
    names = list(catalogue)
    makers: dict[str, Callable[[], str]] = {
        "rules": rules_markdown,
        "prevention": prevention_markdown,
        "profiles": lambda: profiles_markdown(names),
        "steps": steps_markdown,
        "catalogue": catalogue_markdown,
    }

    def one(m: re.Match[str]) -> str:
        name = m.group("name")
        if name not in makers:
            raise ValueError(f"unknown generated block {name!r} (known: {', '.join(makers)})")
        return m.group(1) + makers[name]() + m.group(4)

    return _BLOCK.sub(one, text)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument("--check", action="store_true", help="exit 1 if a file is not current")
    args = p.parse_args(argv)
    stale = []
    for path in DOCS:
        text = path.read_text()
        new = fill(text, CATALOGUE)
        if new != text:
            stale.append(path)
            if not args.check:
                path.write_text(new)
    for path in stale:
        verb = "stale" if args.check else "rewritten"
        print(f"{path.relative_to(ROOT)}: {verb}", file=sys.stderr)
    return 1 if stale and args.check else 0


if __name__ == "__main__":
    sys.exit(main())
