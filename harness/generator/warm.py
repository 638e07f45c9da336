"""A warm cluster: one running cluster reused run after run (issue 23, item 2).

A cluster start is a third of a short run. :class:`WarmClusters` keeps the cluster of the
last run up and plays the next run of the *same configuration* on it: the same version,
backend, broker names, KRaft quorum size, run network and per-broker settings (the short
``replica.lag.time.max.ms`` and ZooKeeper session of network runs are broker properties, so
runs that need other ones need another cluster). Runs that need a spare controller broker
(:mod:`harness.nemesis.failover`) always get a fresh cluster.

Between runs, after the run's logs were copied out, the cluster is put back as a fresh one
would be (:func:`reset`): links healed, paused JVMs resumed, brokers the run stopped started
again (and only those), the run's topic deleted, and the log files emptied, so no fence of
the next run reads a line of this one (a halt, a truncation). The reset is made when the
next run of the same configuration takes the cluster (:meth:`WarmClusters.acquire`), not
when the run ends (:meth:`WarmClusters.release`): a cluster that no later run takes (the
last run of its configuration) is closed as it is, and its reset (1-5 s: a restart, the
topic deletion) is never paid. Its time counts in the run that needed it.
Before a run (:func:`dirty`) the cluster is *observed*, not trusted: every node's process
runs and is not stopped (``/proc``), no DROP rule of the run network is in any namespace,
every broker is live for the controller, the ZooKeeper-mode controller is the controller
broker, and no partition of an earlier run's topic is left, in the controller's metadata
(nor its deletion pending in ``/admin/delete_topics``) or on any broker's disk. A dirty
cluster is refused in one line; the run then starts a fresh one and says why in
``run.json`` (``extra.cluster``).

Each run on a reused cluster plays on its own topic (``hwchaos-<n>``; a fresh cluster's
first run keeps ``hwchaos``), set as :attr:`Cluster.topic` before the playbook starts.

A run that needs a fresh cluster can have it started in the background while the run
before it plays (:meth:`WarmClusters.prestart`; :mod:`harness.generator.background`).
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from harness import timing
from harness.db import Cluster
from harness.db.names import TOPIC
from harness.generator.background import Ahead, BackgroundStarts, discard
from harness.generator.realise import needs
from harness.generator.warm_reset import dirty, reset
from harness.nemesis.failover import unnoticed_restarts
from reference_model.run import RunResult
from reference_model.scenario import Scenario

T = TypeVar("T")


@dataclass
class Reuse:
    """What ``run.json`` says of the cluster a run played on (``extra.cluster``)."""

    reused: bool  # played on a cluster an earlier run left running
    topic: str
    before: list[str] = field(default_factory=list)  # run ids played on it before, in order
    why_fresh: str = ""  # why a fresh cluster, when not reused
    reset: list[str] = field(default_factory=list)  # what was put back after this run
    # what was put back before this run: the reset of the run before, made when this run
    # took the cluster (WarmClusters.acquire)
    reset_before: list[str] = field(default_factory=list)
    # a fresh cluster started in the background while the run before played
    # (WarmClusters.prestart): {"after": run id, "start_seconds": its start's wall time,
    # "waited_seconds": how long this run waited for what was left of it}; {} otherwise
    prestarted: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


NOT_REUSED: dict[str, str] = {}
"""Versions whose runs always get a fresh cluster, and why: a reused cluster there gave a
verdict a fresh one did not (tests/system/test_warm_brokers.py), not yet explained. None
today (2.1.1 was, until the cause was found: docs/warm-cluster.md)."""


def warm_key(
    scenario: Scenario, prediction: RunResult, version_name: str, backend: str, controllers: int
) -> str | None:
    """The configuration a cluster must have for this run; None: only a fresh one will do.

    Everything that changes what the cluster is before the first step: version, backend,
    the broker names (ids and ports follow), the quorum size, and the run-network settings
    of :func:`harness.generator.realise.configure` (which brokers get which properties).
    """
    failovers = any(
        ev.kind == "controller_failover" for step in prediction.steps for ev in step.events
    )
    if failovers or unnoticed_restarts(prediction) or version_name in NOT_REUSED:
        # a spare controller broker and a frozen controller: not reset here; or a version
        # whose reuse is not trusted (NOT_REUSED)
        return None
    want = needs(scenario, prediction)
    return json.dumps(
        [
            version_name,
            backend,
            controllers,
            list(scenario.brokers),
            want.network,
            sorted(want.lag_on),
            sorted(want.elected_lag_on),
            sorted(want.short_session),
        ]
    )


def leftover(prediction: RunResult) -> int:
    """How much the reset after this run has to put back, from the model's last state: 2 per
    broker the run leaves halted, 1 per broker left down, and 1 more when the controller
    still counts that broker live (its session has not lapsed: the reset's restart waits
    for it, KRaft refusing the new registration until then).

    Why: the warm pool resets a cluster when the next run of its configuration takes it, and
    never after the last one (the pool stops it). Played tidiest first within a
    configuration (:func:`reuse_rank`), the run that leaves the most behind comes last and its
    reset is not made. The costly ones: kip966-last-replica-standing on 0.10.2.1 leaves B and
    C halted (KAFKA-4039); putting them back took 1.5-17 s of the next run (two restarts, then
    a topic deletion the controller stalled on), 7 Dec 2026. kip101-scenario1-kip-text on
    KRaft stops before restarting A, whose session still lives: the restart in the reset
    waited for it to lapse, and the run after it (stale-hw-checkpoint on 4.0.0) took 8.3 s
    against 5-6 s after another run's reset.
    """
    last = prediction.steps[-1].state
    live = last.controller.live
    return sum(
        2 if r.halted else 0 if r.alive else 2 if k in live else 1
        for k, r in enumerate(last.replicas)
    )


def reuse_rank(key: str | None, prediction: RunResult, name: str) -> tuple[str, int, str]:
    """Sort key of a run among those one warm pool plays: grouped by cluster configuration
    (:func:`warm_key`; "~", after every one, for a run that needs a fresh cluster), tidiest
    first within a group (:func:`leftover`), then by name; :func:`play_order` orders the
    groups."""
    return (key or "~", leftover(prediction), name)


def clock_bound(scenario: Scenario, prediction: RunResult) -> bool:
    """Whether the run waits on one of Kafka's own clocks, whatever cluster it plays on: the
    leader's ``replica.lag.time.max.ms`` at an ``isr_shrink``, or the session of a broker cut
    from ZooKeeper (or the KRaft controller) lapsing (:func:`harness.generator.realise.needs`
    names the brokers that get the short settings).

    Why: while such a run waits (6-20 s on every version, 7 Dec 2026) its JVMs and the
    harness are idle, so a cluster started in the background then costs the next run
    nothing; after a short run (3-5 s) the next run waited 2-3.4 s of its start
    (:func:`play_order`)."""
    want = needs(scenario, prediction)
    return bool(want.lag_on or want.short_session)


@dataclass(frozen=True)
class Slot:
    """What :func:`play_order` needs of one run: ``group`` (the position of its version: runs
    never move across versions), its cluster configuration (:func:`warm_key`), its place
    within the configuration (:func:`reuse_rank`), its number of steps and
    :func:`clock_bound`."""

    group: int
    key: str | None
    rank: tuple[str, int, str]
    steps: int
    clock_bound: bool


def slot_of(
    group: int, scenario: Scenario, prediction: RunResult, version_name: str, backend: str
) -> Slot:
    """A run's :class:`Slot`, for a cluster of one KRaft controller (as ``matrix``, the pytest
    plugin and the benchmark start them)."""
    key = warm_key(scenario, prediction, version_name, backend, 1)
    rank = reuse_rank(key, prediction, scenario.name)
    return Slot(group, key, rank, len(scenario.steps), clock_bound(scenario, prediction))


def play_order(items: list[T], slot: Callable[[T], Slot]) -> list[T]:
    """The order one warm pool plays ``items`` in: each version's runs together (versions as
    ``group`` says), each cluster configuration's runs one after another (the tidiest first,
    :func:`reuse_rank`), and the configurations (a run that needs a fresh cluster is one
    alone) in an order that starts each cluster while a run that waits on Kafka's clock
    plays.

    Why: a configuration's cluster is started in the background while the run before it
    plays (:meth:`WarmClusters.prestart`). Behind a short run the start was still going
    when the run ended, and the next run waited for it (2.4-3.4 s on 0.10.2.1, four runs
    of fifteen, 7 Dec 2026); behind a :func:`clock_bound` run (6-20 s, the CPU idle) it is
    done in time. So the configurations alternate: one whose last run is clock-bound,
    then one whose last run is not (configurations of several runs first, then single
    runs by their number of steps, so the one left without a long run before it, when
    there are more of them, is the one with the most steps); first of all, and after a
    short run, a clock-bound one, whose start waits either way. Which broker behaviour a
    run sees does not depend on the order: each run plays on a cluster checked clean
    (:func:`dirty`)."""
    slots = [slot(it) for it in items]
    out: list[int] = []
    after_long = False
    for group in sorted({s.group for s in slots}):
        shared: dict[str, list[int]] = {}
        units: list[list[int]] = []
        for i, s in enumerate(slots):
            if s.group != group:
                continue
            if s.key is None:
                units.append([i])
            elif s.key in shared:
                shared[s.key].append(i)
            else:
                shared[s.key] = [i]
                units.append(shared[s.key])
        for u in units:
            u.sort(key=lambda i: slots[i].rank)

        def ends_long(u: list[int]) -> bool:
            return slots[u[-1]].clock_bound

        longs = sorted((u for u in units if ends_long(u)), key=lambda u: slots[u[0]].rank)
        shorts = sorted(
            (u for u in units if not ends_long(u)),
            key=lambda u: (len(u) == 1, slots[u[0]].steps, slots[u[0]].rank),
        )
        while longs or shorts:
            unit = shorts.pop(0) if shorts and (after_long or not longs) else longs.pop(0)
            out += unit
            after_long = ends_long(unit)
    return [items[i] for i in out]


def reap_stale(root: Path) -> int:
    """Remove the work dirs a killed harness left under ``root`` (its JVMs first, from
    their ``pids.json``, should PDEATHSIG not have taken them); returns how many."""
    from harness.db.runtime.local import kill_leftovers

    if not root.is_dir():
        return 0
    mine = f"cluster-{os.getpid()}-"
    n = 0
    for d in root.glob("cluster-*"):
        if d.is_dir() and not d.name.startswith(mine):
            with contextlib.suppress(Exception):
                kill_leftovers(d)
            shutil.rmtree(d, ignore_errors=True)
            n += 1
    return n


@dataclass
class _Warm:
    key: str
    cluster: Cluster
    runs: list[str] = field(default_factory=list)
    topics: list[str] = field(default_factory=list)
    unreset: bool = False  # the last run left its state: reset before the next run takes it


class WarmClusters:
    """Running clusters kept between runs, one per configuration (:func:`warm_key`).

    At most ``keep`` are kept (the least recently used is closed first): an idle cluster
    still holds its JVMs' memory. :meth:`close` stops all of them and removes their work
    dirs (every run copied its logs out); so does the process's exit, through ``atexit``
    here and each cluster's own PDEATHSIG/reaper machinery when the harness is killed, as
    for a fresh cluster.
    """

    def __init__(self, root: Path | None = None, keep: int = 1) -> None:
        self._own_root = root is None
        self.root = Path(tempfile.mkdtemp(prefix="hwchaos-warm-")) if root is None else root
        self.keep = keep
        self._warm: dict[str, _Warm] = {}
        self._made = 0
        self._last = False  # the next run released is the last one on its cluster
        self.reused = 0  # runs played on a reused cluster (benchmarks, tests)
        self._ahead = BackgroundStarts()  # harness.generator.background
        atexit.register(self.close)

    def prestart(self, key: str | None, build: Callable[[Path], Cluster], run_id: str) -> None:
        """Ask for the cluster of the *next* run (``run_id``, configuration ``key``) to be
        started in the background once the run about to play has its own cluster up
        (:meth:`kick`; :mod:`harness.generator.background`). The caller asks only when the
        next run will not take the playing run's cluster; nothing is asked when a kept
        cluster already has ``key``."""
        if key is not None and key in self._warm:
            self._ahead.forget_ask()
            return
        self._ahead.ask(key, build, run_id)

    def kick(self, playing: str) -> None:
        """The run ``playing`` has its cluster up: the start asked for next begins."""
        self._ahead.kick(playing, self.workdir)

    @property
    def starting(self) -> Cluster | None:
        """The cluster being started (or started) in the background for a later run and not
        yet taken; None when there is none. For the tests and the progress output."""
        return self._ahead.starting

    @property
    def prestarted(self) -> int:
        """Runs played on a cluster started in the background (benchmarks, tests)."""
        return self._ahead.count

    def ready(self, cluster: Cluster, reuse: Reuse) -> timing.Timings:
        """Wait for what is left of a background start (``reuse.prestarted``); raises its
        error. Returns the start's own timings (the run adds them to its record)."""
        try:
            return self._ahead.ready(cluster, reuse.prestarted)
        except BaseException:
            for key, warm in list(self._warm.items()):
                if warm.cluster is cluster:
                    self._warm.pop(key)
            raise

    def workdir(self) -> Path:
        """A new cluster's work dir, outside every run folder (it outlives the run)."""
        self._made += 1
        path = self.root / f"cluster-{os.getpid()}-{self._made}"
        path.mkdir(parents=True, exist_ok=True)
        return path

    def acquire(
        self, key: str | None, build: Callable[[Path], Cluster], run_id: str
    ) -> tuple[Cluster, Reuse]:
        """The cluster for a run of configuration ``key``: a clean warm one, or a new one
        (not started) built by ``build`` in a work dir of this pool."""
        pre = self._ahead.take(key, run_id)
        if key is None:
            why = (
                "the run needs a fresh cluster (a spare controller broker, an "
                "unnoticed restart, or a version in warm.NOT_REUSED)"
            )
            if pre is not None and pre.cluster is not None:
                return pre.cluster, self._prestarted(pre, why)
            return build(self.workdir()), Reuse(False, TOPIC, why_fresh=why)
        warm = self._warm.pop(key, None)
        why = "first run of this configuration"
        if warm is not None:
            why = ""
            done: list[str] = []
            if warm.unreset:
                try:
                    done = reset(warm.cluster, warm.cluster.topic)
                    warm.unreset = False
                except Exception as exc:
                    why = f"the reset after {warm.runs[-1]} failed: {type(exc).__name__}: {exc}"
            if not why:
                try:
                    why = dirty(warm.cluster, warm.topics) or ""
                except Exception as exc:  # an unreadable cluster is a dirty one
                    why = f"the clean check failed: {exc}"
            if not why:
                topic = f"{TOPIC}-{len(warm.runs)}"
                warm.cluster.topic = topic
                reuse = Reuse(True, topic, before=list(warm.runs), reset_before=done)
                warm.runs.append(run_id)
                warm.topics.append(topic)
                self._warm[key] = warm
                self.reused += 1
                if pre is not None:
                    discard(pre)  # asked for in vain: the warm cluster was clean after all
                return warm.cluster, reuse
            why = f"refused a dirty warm cluster: {why}"
            warm.cluster.close()
        for other in list(self._warm)[: max(0, len(self._warm) - self.keep + 1)]:
            self._warm.pop(other).cluster.close()
        cluster = pre.cluster if pre is not None and pre.cluster is not None else None
        if cluster is None:
            cluster = build(self.workdir())
        cluster.topic = TOPIC
        self._warm[key] = _Warm(key, cluster, [run_id], [TOPIC])
        if pre is not None and pre.cluster is not None:
            return cluster, self._prestarted(pre, why)
        return cluster, Reuse(False, TOPIC, why_fresh=why)

    def _prestarted(self, pre: Ahead, why: str) -> Reuse:
        """What ``run.json`` says of a fresh cluster whose start began in the background
        (:meth:`ready` waits for it)."""
        return Reuse(
            False,
            TOPIC,
            why_fresh=f"{why}; started in the background while {pre.after} played",
            prestarted=self._ahead.hand_over(pre),
        )

    def last_run(self) -> None:
        """Say that the next run is the last on its cluster (the caller knows: the last
        counterexample, the last cell of a configuration or of a matrix job): its release
        closes the cluster instead of resetting it, a reset nobody would use (up to a few
        seconds when it restarts a broker)."""
        self._last = True

    def release(self, cluster: Cluster, reuse: Reuse) -> None:
        """After the run (its logs copied out): keep the cluster for the next run of its
        configuration, which resets it first (:meth:`acquire`), or close it when it is not
        kept or no run follows (:meth:`last_run`)."""
        kept = next((w for w in self._warm.values() if w.cluster is cluster), None)
        last, self._last = self._last, False
        if kept is not None and last:
            self._warm.pop(kept.key, None)
            reuse.reset = ["closed, not reset: no run follows on this cluster"]
        if kept is None or last:
            cluster.close()
            return
        kept.unreset = True
        reuse.reset = ["deferred: made when the next run of this configuration takes it"]

    def close(self) -> None:
        """Stop every kept cluster and remove the work dirs; idempotent.

        A background start still under way is stopped too: its JVMs are killed from here,
        so the start ends at once (its node exited) instead of waiting out its bound."""
        stopped = self._ahead.stop()
        while self._warm:
            _key, warm = self._warm.popitem()
            warm.cluster.close()
        # after the kept clusters' own stop: the helper thread is the PDEATHSIG parent of
        # the JVMs it launched, and its exit kills whatever of them is left
        self._ahead.shutdown(stopped)
        for n in range(1, self._made + 1):
            shutil.rmtree(self.root / f"cluster-{os.getpid()}-{n}", ignore_errors=True)
        if self._own_root:
            shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> WarmClusters:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
