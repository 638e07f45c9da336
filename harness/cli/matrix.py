"""``hwchaos matrix``: scenarios x versions (or generations) x config grid, resumable.

Each cell is one run folder under ``OUT/cells/<cell_id>/`` written by
:func:`harness.checker.results.write_run`, whose ``run.json`` is written last. On start the matrix
skips every cell that has its ``run.json`` and deletes folders that lack it (an interrupted
cell), so Ctrl-C followed by the same command completes the matrix with no cell duplicated
or missing.
"""

from __future__ import annotations

import argparse
import itertools
import shutil
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from tqdm import tqdm

from harness.checker import results
from harness.checker.verdicts import two_verdicts
from harness.cli.matrix_jobs import PLAYED_AGAIN, default_jobs, run_parallel
from harness.cli.overrides import add_overrides
from harness.db.catalogue.versions import resolve_version
from harness.generator.scenarios import catalogue, load_scenario
from harness.generator.warm import (
    Slot,
    WarmClusters,
    play_order,
    reap_stale,
    slot_of,
    warm_key,
)
from reference_model.profiles import FORMS, GENERATIONS, generation
from reference_model.run import RunResult, run_scenario
from reference_model.scenario import Scenario, ScenarioError


@dataclass(frozen=True)
class Cell:
    scenario: Scenario
    target: str  # a Kafka version, or "model:<generation>"
    acks: str
    min_insync: int
    unclean: bool
    rf: int
    records: int

    @property
    def model_only(self) -> bool:
        return self.target.startswith("model:")

    @property
    def protocol(self) -> str:
        if self.model_only:
            return self.target.split(":", 1)[1]
        return resolve_version(self.target).generation

    @property
    def cell_id(self) -> str:
        target = self.target.replace(":", "-")
        return (
            f"{self.scenario.name}__{target}__acks{self.acks}_isr{self.min_insync}"
            f"_u{int(self.unclean)}_rf{self.rf}_n{self.records}"
        )


def model_run(
    scenario: Scenario, protocol: str, run_id: str, version: str = "model"
) -> tuple[results.RunInfo, RunResult]:
    """Play ``scenario`` through the model and describe it as a results run."""
    res = run_scenario(scenario, protocol)
    j = res.to_json()
    prevented = getattr(res, "prevented", None)
    if prevented is not None:  # the profile makes a step impossible: a pass, like ok
        verdict = "prevented"
    elif j["lost_acked"]:
        verdict = "lost_acked"
    elif j["divergent_offsets"]:
        verdict = "divergence"
    elif "offline" in j["outcomes"]:
        verdict = "offline"
    else:
        verdict = "ok"
    info = results.RunInfo(
        run_id=run_id,
        scenario=scenario.name,
        version=version,
        protocol=protocol,
        backend="model",
        acks=scenario.acks,
        min_insync=scenario.min_insync,
        unclean=scenario.unclean,
        rf=scenario.rf,
        records=scenario.records_per_produce,
        verdict=verdict,
        model_match=True,
        lost_acked=j["lost_acked"],
        divergent_offsets=j["divergent_offsets"],
        outcomes=j["outcomes"],
        prevented=None
        if prevented is None
        else {
            "step": prevented[0],
            "event": scenario.steps[prevented[0] - 1].describe(scenario.brokers),
            "reason": prevented[1],
            "reached": True,
            "harness_note": "",
        },
    )
    return info, res


def write_model_run(folder: Path, scenario: Scenario, protocol: str, run_id: str) -> None:
    info, res = model_run(scenario, protocol, run_id, version=f"model:{protocol}")
    results.write_run(
        folder, info, res.replica_rows(run_id), res.write_rows(run_id), res.step_rows(run_id)
    )


def _split(value: str) -> list[str]:
    return [v.strip() for v in value.split(",") if v.strip()]


def _bools(value: str) -> list[bool]:
    out = []
    for v in _split(value):
        if v.lower() not in ("true", "false", "1", "0"):
            raise ScenarioError(f"--unclean: expected true/false, got {v!r}")
        out.append(v.lower() in ("true", "1"))
    return out


def cells(args: argparse.Namespace) -> Iterator[Cell | str]:
    """Every cell of the grid; a string instead of a cell says why a combination is skipped."""
    paths = [Path(p) for p in args.scenarios] if args.scenarios else catalogue()
    scenarios = [load_scenario(p) for p in paths]
    targets = (
        [f"model:{g}" for g in _split(args.protocols)] if args.model_only else _split(args.versions)
    )
    for t in targets:
        if t.startswith("model:"):
            try:
                generation(t[6:])
            except ValueError:
                raise ScenarioError(
                    f"unknown protocol generation {t[6:]!r} (valid: {FORMS})"
                ) from None
        else:
            resolve_version(t)  # fails early with the catalogue's one-line error
    # An empty list means "each scenario's own setting" (None: no override).
    acks_grid: list[str | None] = [*_split(args.acks)] or [None]
    isr_grid: list[int | None] = [int(m) for m in _split(args.min_insync)] or [None]
    unclean_grid: list[bool | None] = [*_bools(args.unclean)] or [None]
    grid = itertools.product(
        scenarios,
        targets,
        acks_grid,
        isr_grid,
        unclean_grid,
        [int(r) for r in _split(args.rf)] or [0],
        [int(n) for n in _split(args.records)],
    )
    for sc, target, acks, isr, unclean, rf, n in grid:
        try:
            s = sc.with_overrides(
                acks=acks, min_insync=isr, unclean=unclean, rf=rf or None, records=n
            )
        except ScenarioError as exc:
            yield f"skip {sc.name} acks={acks} isr={isr} rf={rf}: {exc}"
            continue
        if rf and s.rf != rf:
            yield f"skip {sc.name} rf={rf}: the scenario names its brokers (rf {s.rf})"
            continue
        yield Cell(s, target, s.acks, s.min_insync, s.unclean, s.rf, n)


def _loses(folder: Path) -> bool:
    import json

    run_json = folder / "run.json"
    return run_json.is_file() and two_verdicts(json.loads(run_json.read_text())).lost


def reuse_order(pending: list[Cell], backend: str) -> list[Cell]:
    """The cells in the order a warm cluster serves best: model cells first, then broker
    cells by version (in the order given) and cluster configuration (harness.generator.warm),
    so each configuration's cells follow one another on one running cluster, the tidiest
    first (``reuse_rank``: the last one's reset is never made), and each configuration's
    cluster starts while a run that waits on Kafka's clock plays (``play_order``)."""
    versions: dict[str, int] = {}
    for c in pending:
        if not c.model_only:
            versions.setdefault(c.target, len(versions))

    def slot(c: Cell) -> Slot:
        prediction = run_scenario(c.scenario, c.protocol)
        name = resolve_version(c.target).name
        return slot_of(versions[c.target], c.scenario, prediction, name, backend)

    broker = [c for c in pending if not c.model_only]
    return [c for c in pending if c.model_only] + play_order(broker, slot)


def cell_key(c: Cell, backend: str) -> str | None:
    """A broker cell's cluster configuration (harness.generator.warm.warm_key); None when
    only a fresh cluster will do."""
    prediction = run_scenario(c.scenario, c.protocol)
    return warm_key(c.scenario, prediction, resolve_version(c.target).name, backend, 1)


def _prestart_after(
    warm: WarmClusters, pending: list[Cell], keys: list[str | None], n: int, backend: str
) -> None:
    """Cell ``n`` is about to play: if the next broker cell will need a fresh cluster (its
    configuration is not cell ``n``'s), have it started in the background meanwhile
    (harness.generator.warm)."""
    from harness.generator.runner import prestart_next

    nxt = next((k for k in range(n + 1, len(pending)) if not pending[k].model_only), None)
    if nxt is None or (keys[nxt] is not None and keys[nxt] == keys[n]):
        return
    c = pending[nxt]
    prestart_next(warm, c.scenario, resolve_version(c.target), backend, c.cell_id)


def job_batches(ordered: list[Cell], backend: str, jobs: int) -> list[list[Cell]]:
    """``matrix --jobs N`` with warm clusters: the broker cells (in :func:`reuse_order`) cut
    into batches, each played by one child on one warm cluster of its own.

    A batch is a run of cells of one configuration, at most a 1/N share of all cells long
    (a long configuration is split so no job plays most of the matrix alone while the
    others wait: each piece costs one cluster start, played side by side); a cell that
    needs a fresh cluster is a batch alone. Longest first, so the last batches to start are
    short ones (the jobs finish together)."""
    share = max(1, -(-len(ordered) // max(1, jobs)))
    batches: list[list[Cell]] = []
    last: str | None = None
    for c in ordered:
        key = cell_key(c, backend)
        if key is not None and key == last and batches and len(batches[-1]) < share:
            batches[-1].append(c)
        else:
            batches.append([c])
        last = key
    return sorted(batches, key=len, reverse=True)


def final_table(root: Path, todo: list[Cell]) -> list[str]:
    """Per cell, both verdicts (agreement, safety), read back from each cell's run.json.

    Read from the files, not from this process's memory, so a resumed matrix shows the cells
    an earlier invocation played too. A cell without run.json is shown as ``not run``.
    """
    import json

    rows = [("scenario", "target", "settings", "agreement", "safety", "lost / divergent")]
    counts = {"lost": 0, "no loss": 0, "unknown": 0}
    for c in todo:
        run_json = root / c.cell_id / "run.json"
        settings = f"acks={c.acks} isr={c.min_insync} unclean={str(c.unclean).lower()} rf={c.rf}"
        if not run_json.is_file():
            rows.append((c.scenario.name, c.target, settings, "not run", "unknown", ""))
            counts["unknown"] += 1
            continue
        both = two_verdicts(json.loads(run_json.read_text()))
        agreement = both.agreement
        if both.model_only:
            agreement = "prevented (model)" if both.agreement == "prevented" else "model only"
        what = []
        if both.lost_acked:
            what.append("lost " + ",".join(both.lost_acked))
        if both.divergent_offsets:
            what.append("diverge@" + ",".join(str(o) for o in both.divergent_offsets))
        rows.append(
            (
                c.scenario.name,
                c.target,
                settings,
                agreement,
                both.safety.upper() if both.lost else both.safety,
                " ".join(what),
            )
        )
        counts[both.safety] += 1
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    lines.append(
        f"{len(todo)} cells: {counts['lost']} lose data, {counts['no loss']} lose nothing, "
        f"{counts['unknown']} unknown (not run, or stopped before the end)"
    )
    return lines


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The command's arguments, on the ``hwchaos`` parser or a parser of its own."""
    p.add_argument("--out", required=True, help="results folder (resumable)")
    p.add_argument("--model-only", action="store_true", help="reference model only")
    p.add_argument(
        "--profiles",
        "--protocols",
        dest="protocols",
        default=",".join(GENERATIONS),
        help="model profiles (model-only runs)",
    )
    p.add_argument("--versions", default="0.10.2.1,3.3.1", help="Kafka versions (broker runs)")
    p.add_argument("--backend", default="local", choices=["local", "docker"])
    p.add_argument("--scenarios", nargs="*", help="scenario files (default: the catalogue)")
    add_overrides(p, lists=True)
    p.add_argument(
        "--jobs",
        type=int,
        default=None,
        help="broker cells played side by side, each its own process, ports and networks "
        f"(default: what the cores allow, here {default_jobs()})",
    )
    p.add_argument(
        "--fresh",
        action="store_true",
        help="a fresh cluster for every broker cell (default: cells of one version and "
        "cluster configuration play one after another on one running cluster, checked clean "
        "and reset between them; with --jobs > 1 each job keeps warm clusters of its own)",
    )
    p.add_argument(
        "--fail-on-loss",
        action="store_true",
        help="exit 1 when any cell loses an acknowledged write or leaves replicas divergent "
        "(by default the exit status says only whether every cell reached a verdict)",
    )


def run(args: argparse.Namespace) -> int:
    jobs = default_jobs() if args.jobs is None else args.jobs
    if jobs < 1:
        print(f"hwchaos matrix: --jobs {jobs}: needs at least 1", file=sys.stderr)
        return 2
    out = Path(args.out).resolve()  # brokers run with another cwd: absolute paths only
    try:
        planned = list(cells(args))
    except (ScenarioError, ValueError) as exc:
        print(f"hwchaos matrix: {exc}", file=sys.stderr)
        return 2
    todo = [c for c in planned if isinstance(c, Cell)]
    skipped = [c for c in planned if isinstance(c, str)]
    root = out / "cells"
    root.mkdir(parents=True, exist_ok=True)
    for stale in root.iterdir():
        if stale.is_dir() and not results.is_complete(stale):
            shutil.rmtree(stale)  # an interrupted cell: played again below
    pending = [c for c in todo if not results.is_complete(root / c.cell_id)]
    ids = [c.cell_id for c in todo]
    if len(set(ids)) != len(ids):
        print("hwchaos matrix: duplicate cells in the grid", file=sys.stderr)
        return 2
    print(
        f"matrix: {len(todo)} cells ({len(todo) - len(pending)} already done, "
        f"{len(skipped)} combinations skipped) -> {out}",
        file=sys.stderr,
    )
    failures = 0
    broker_cells = [c for c in pending if not c.model_only]
    if not args.fresh:
        # beside the cells; what a killed matrix left there goes first (before any job
        # starts: a job's own pool never reaps, its siblings' clusters share the folder)
        reap_stale(out / "warm-clusters")
    if jobs > 1 and len(broker_cells) > 1:
        bar = tqdm(total=len(broker_cells), desc=f"cells ({jobs} jobs)", unit="cell",
                   file=sys.stderr)  # fmt: skip
        if args.fresh:
            batches = [[c] for c in broker_cells]
        else:
            batches = job_batches(reuse_order(broker_cells, args.backend), args.backend, jobs)
        failures += run_parallel(
            [[(c.scenario, c.target, root / c.cell_id, c.cell_id) for c in b] for b in batches],
            jobs,
            args.backend,
            lambda _cell, _ok: bar.update(1),
            warm_root=None if args.fresh else out / "warm-clusters",
        )
        bar.close()
        pending = [c for c in pending if c.model_only]
    warm = None
    if not args.fresh:
        warm = WarmClusters(out / "warm-clusters")
    if warm is not None:
        pending = reuse_order(pending, args.backend)
    keys = [None if c.model_only else cell_key(c, args.backend) for c in pending]
    try:
        for n, cell in enumerate(tqdm(pending, desc="cells", unit="cell", file=sys.stderr)):
            folder = root / cell.cell_id
            if cell.model_only:
                write_model_run(folder, cell.scenario, cell.protocol, cell.cell_id)
            else:
                from harness.trial import run_on_brokers

                if warm is not None and keys[n] not in keys[n + 1 :]:
                    warm.last_run()  # no later cell has this configuration: close, no reset
                if warm is not None:
                    _prestart_after(warm, pending, keys, n, args.backend)

                ok = run_on_brokers(
                    cell.scenario,
                    cell.target,
                    args.backend,
                    folder,
                    cell.cell_id,
                    warm=warm,
                    aside=out / PLAYED_AGAIN,
                )
                failures += 0 if ok else 1
    finally:
        if warm is not None:
            warm.close()
    (out / "skipped.txt").write_text("\n".join(skipped) + ("\n" if skipped else ""))
    print(f"matrix complete: {len(todo)} cells in {root}", file=sys.stderr)
    table = final_table(root, todo)
    (out / "verdicts.txt").write_text("\n".join(table) + "\n")
    print("\n".join(table))
    if args.fail_on_loss and any(_loses(root / c.cell_id) for c in todo):
        return 1
    return 1 if failures else 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="hwchaos matrix", description=__doc__)
    add_arguments(p)
    return run(p.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
