"""Real brokers: every playable catalogue scenario, on every available version, replayed
from its own broker logs.

For each version one module-scoped fixture plays the scenarios once, as ``matrix`` does: on
a warm cluster (harness.generator.warm), grouped by cluster configuration. The first run of
each configuration starts its cluster, so its logs reach back to every broker's first start
line; the others play on the kept cluster, and their logs are slices of long-running
brokers' (no first start, earlier runs' restarts and topics before them), which is what an
SRE's logs of an incident usually are. Each test then replays that run's ``logs/`` with the
producer's outcomes as the acked file and checks that the model's verdict on the
reconstructed scenario equals the run's verdict: lost acknowledged writes, divergent offsets
and every replica's final log as read back from its segments. Skips with the reason when no
Kafka tree is available.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from harness.db import BrokerUnavailable
from harness.db.catalogue.dists import find_tree
from harness.db.catalogue.versions import CATALOGUE, resolve_version
from harness.generator.scenarios import SCENARIO_DIR, load_scenario
from harness.generator.warm import WarmClusters
from harness.replay.logdir import read_logdir
from harness.replay.readings import explain
from harness.replay.reconstruct import Acked
from harness.replay.verdict import words
from harness.replay.versions import detect_version
from harness.trial import trial

pytestmark = pytest.mark.broker

PLAYABLE = [
    "kip101-scenario1",
    "kip101-scenario1-kip-text",
    "kip101-scenario2",
    "kip279-fast-leader-change",
    "kip320-zombie-follower",
    "kip966-last-replica-standing",
    "acks-all-min-isr2-one-crash",
    "power-loss-all-replicas",
    "stale-hw-checkpoint",
]
# The order the fixture plays them in: two-broker runs, then three-broker ones, so that runs
# of one cluster configuration follow one another on the kept cluster (kip101-scenario1-
# kip-text shares the two-broker one on KRaft; on ZooKeeper it needs a spare controller,
# and the network scenario a run network: each starts a cluster of its own).
PLAY_ORDER = [
    "kip101-scenario1",
    "kip101-scenario2",
    "kip279-fast-leader-change",
    "stale-hw-checkpoint",
    "kip101-scenario1-kip-text",
    "acks-all-min-isr2-one-crash",
    "kip966-last-replica-standing",
    "power-loss-all-replicas",
    "kip320-zombie-follower",
]
assert sorted(PLAY_ORDER) == sorted(PLAYABLE)
# Run folders already played (``hwchaos run ... --out DIR``): HWCHAOS_REPLAY_RUNS=DIR replays
# every one of them instead of playing new ones (a sweep over every scenario and version).
_RUNS = os.environ.get("HWCHAOS_REPLAY_RUNS", "")
# One ZooKeeper and one KRaft version by default (CI time); HWCHAOS_REPLAY_VERSIONS=all
# (or a comma list) widens it to every catalogue entry (a missing tree skips with its reason).
_WANTED = os.environ.get("HWCHAOS_REPLAY_VERSIONS", "0.10.2.1,4.0.0")
VERSIONS = [v for v in CATALOGUE if _WANTED == "all" or v in _WANTED.split(",")]


def _available(version: str) -> str | None:
    try:
        find_tree(resolve_version(version))
    except BrokerUnavailable as exc:
        return str(exc)
    return None


@pytest.fixture(scope="module", params=VERSIONS)
def runs(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Any:
    """All playable scenarios played once on one version: scenario -> run folder."""
    version = request.param
    reason = _available(version)
    if reason is not None:
        pytest.skip(reason)
    out = tmp_path_factory.mktemp(f"replay-{version}")
    folders: dict[str, Path | str] = {}
    with WarmClusters(out / "warm") as pool:
        for name in PLAY_ORDER:
            scenario = load_scenario(str(SCENARIO_DIR / f"{name}.yaml"))
            run_id = f"{name}__{version}__{time.strftime('%H%M%S')}"
            folder = out / run_id
            try:
                trial(
                    scenario,
                    resolve_version(version),
                    "local",
                    folder,
                    run_id,
                    lambda _m: None,
                    warm=pool,
                )
                folders[name] = folder
            except Exception as exc:  # the cluster itself failed (e.g. ZooKeeper under load)
                folders[name] = f"{type(exc).__name__}: {exc}".splitlines()[0]
    return version, folders


def _observed(folder: Path) -> dict[str, list[str]]:
    df = pd.read_parquet(folder / "replicas.parquet")
    obs = df[df.source == "observed"].sort_values(["replica", "offset"])
    return {str(n): list(g.record) for n, g in obs.groupby("replica")}


@pytest.mark.parametrize("scenario", PLAYABLE)
def test_replay_reproduces_the_runs_verdict(runs: Any, scenario: str) -> None:
    version, folders = runs
    folder = folders[scenario]
    if isinstance(folder, str):
        pytest.skip(f"{scenario} on {version}: the run itself failed: {folder}")
    check_run(folder, version)


def _played() -> list[Path]:
    root = Path(_RUNS)
    return sorted(p for p in root.iterdir() if (p / "verdict.json").is_file()) if _RUNS else []


@pytest.mark.skipif(not _RUNS, reason="HWCHAOS_REPLAY_RUNS (a folder of run folders) not set")
@pytest.mark.parametrize("folder", _played(), ids=lambda p: p.name.rsplit("__", 1)[0])
def test_replay_of_played_runs(folder: Path) -> None:
    """Every run folder under HWCHAOS_REPLAY_RUNS replays to its run's verdict (or to one of
    the readings the replay reports when the logs leave a gap)."""
    check_run(folder, json.loads((folder / "verdict.json").read_text())["version"])


def check_run(folder: Path, version: str) -> None:
    """Replay ``folder``'s logs with the producer's outcomes; the run's verdict (lost
    acknowledged writes, divergent offsets, every replica's log read back from its
    segments) must be the replay's or one of the alternative readings it reports.

    A ``prevented`` run (the model predicted that the brokers refuse a step, e.g. a KRaft
    restart before the old session was fenced: kip101-scenario1-kip-text on 4.0.0) stopped
    before that step; its logs hold the steps it played, which the replay must read back
    the same way (no loss, no divergence, the final logs as observed)."""
    run = json.loads((folder / "verdict.json").read_text())
    if run["verdict"] not in ("match", "model_mismatch", "prevented"):
        pytest.skip(f"{folder.name} did not reach a verdict: {run['verdict']}")
    topic = json.loads((folder / "run.json").read_text())["extra"].get("cluster", {}).get("topic")
    brokers = read_logdir(folder / "logs", topic or "hwchaos", 0)
    found = detect_version(brokers, None)
    if found.name != version:
        # A slice of a long-running broker's logs may hold no line that names the release:
        # the replay must say it guessed (or could not tell), and the user names it
        # (``--kafka``), as here.
        assert "guessed" in found.how or "not in the logs" in found.how, (found, version)
        found = detect_version(brokers, version)
    assert found.name == version
    acked = [
        Acked(r, d["offset"] if isinstance(d["offset"], int) else -1, d["status"])
        for r, d in run["extra"]["deliveries"].items()
    ]
    rec = explain(brokers, found, acked, run["acks"], None)
    res = rec.result
    why = "\n".join(
        [
            words(rec),
            *(
                f"{e.describe(res.config.brokers)} | {w}"
                for e, w in zip(rec.scenario.steps, rec.step_facts, strict=True)
            ),
        ]
    )
    assert res.config.generation.name == resolve_version(version).generation
    assert res.config.min_insync == run["min_insync"]
    assert res.config.unclean == run["unclean"], why
    observed = _observed(folder)

    def final(r: Any) -> dict[str, list[str]]:
        return {
            n: [e.record for e in rep.log]
            for n, rep in zip(r.result.config.brokers, r.result.final.replicas, strict=True)
        }

    # A record the producer saw fail may or may not have been appended; when the logs do not
    # say, both readings are given (an ambiguity) and the run must match one of them.
    readings = [rec, *rec.alternatives]
    got = [(sorted(r.lost_acked), r.result.divergent_offsets, final(r)) for r in readings]
    want = (
        sorted(run["lost_acked"]),
        run["divergent_offsets"],
        {n: observed.get(n, []) for n in final(rec)},
    )
    assert want in got, why
