"""A fresh cluster started in the background while the run before it plays (issue 23).

Half of a version's catalogue runs need a cluster of their own (the first run of each
configuration, the network scenarios, the runs that need a spare controller broker), and a
start is 2-4 s of such a run. Whoever knows the order of the runs (``matrix``, the
benchmark) asks :class:`BackgroundStarts` for the next run's cluster before the current one
plays (:meth:`~BackgroundStarts.ask`); once the playing run's own cluster is up
(:meth:`~BackgroundStarts.kick`), the next one is built on the main thread and started on a
helper thread that lives as long as the pool: a JVM's PDEATHSIG is tied to the thread that
forked it (:mod:`harness.db.runtime.process`). The run it was asked for takes it
(:meth:`~BackgroundStarts.take`) and waits for what is left of its start
(:meth:`~BackgroundStarts.ready`). It is a fresh cluster like any other, built by the
runner's own builder, only started earlier. :class:`harness.generator.warm.WarmClusters`
owns one; docs/warm-cluster.md has the figures.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness import timing
from harness.db import Cluster

BACKGROUND_NICE = 10
"""The nice value of a cluster started in the background, while it starts (root only: a
lower one cannot be set back without it), set on each JVM's threads and on its scheduler
autogroup as it is launched (:func:`harness.db.runtime.process.renice`: each JVM is a
session, so an autogroup, of its own, and autogroups share the CPU equally whatever their
threads' nice values). Its start's CPU (4-5 JVMs loading classes, 4-6 CPU seconds) then
goes to the playing run's JVMs and harness first: with the threads' nice value alone, the
run beside a background start (power-loss-all-replicas, three restarts) took 9.8-12.7 s
instead of 5.9-7.2 s (7 Dec 2026). :meth:`BackgroundStarts.ready` sets the JVMs back."""

PHASE = "cluster_start (background)"
"""The start's own phase, first among the timings of the run that takes the cluster."""


def prestart_off() -> bool:
    """``HWCHAOS_PRESTART=0``: no cluster is started ahead of its run (A/B measurements, a
    machine where a second cluster starting beside a run is unwelcome)."""
    return os.environ.get("HWCHAOS_PRESTART", "") == "0"


@dataclass
class Ahead:
    """A fresh cluster asked for ahead of its run."""

    key: str | None  # its configuration (harness.generator.warm.warm_key); None: fresh only
    run_id: str
    build: Callable[[Path], Cluster]
    after: str = ""  # the run that played while it started
    cluster: Cluster | None = None
    future: Future[timing.Timings] | None = None


def discard(ahead: Ahead) -> None:
    """Stop a background start nobody takes (killing its JVMs ends the start at once)."""
    if ahead.cluster is not None:
        with contextlib.suppress(Exception):
            ahead.cluster.close()


def _start(cluster: Cluster) -> timing.Timings:
    """The helper thread's job: start ``cluster``, its fences recorded apart from the run
    playing meanwhile (a thread starts with no current :class:`timing.Timings`). Linux keeps
    a nice value per thread and a forked child inherits its thread's, so lowering this
    helper thread's priority lowers the JVMs it launches, not the harness."""
    if os.geteuid() == 0:
        with contextlib.suppress(OSError):
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), BACKGROUND_NICE)
    timings = timing.Timings()
    with timing.recording(timings), timing.phase(PHASE):
        cluster.start()
    return timings


class BackgroundStarts:
    """At most one cluster starting (or started) ahead of its run, and the one asked next."""

    def __init__(self) -> None:
        self._started: Ahead | None = None  # started in the background, not yet taken
        self._asked: Ahead | None = None  # to start when the playing run's cluster is up
        self._taken: dict[int, Ahead] = {}  # handed to a run, not yet waited for (ready)
        self._helper: ThreadPoolExecutor | None = None
        self.count = 0  # runs played on a cluster started in the background

    def ask(self, key: str | None, build: Callable[[Path], Cluster], run_id: str) -> None:
        """The next run (``run_id``, configuration ``key``) needs a cluster the playing run's
        will not be: start it when the playing run's cluster is up. One at a time: on two
        cores a second would only compete with the runs."""
        self._asked = None if prestart_off() else Ahead(key, run_id, build)

    def forget_ask(self) -> None:
        """The next run will reuse a kept cluster after all: nothing to start."""
        self._asked = None

    def kick(self, playing: str, workdir: Callable[[], Path]) -> None:
        """The run ``playing`` has its cluster up: a background start it did not take is
        stopped (it reused a cluster after all), and the one asked for next begins."""
        old = self._started
        if old is not None and (old.run_id == playing or self._asked is not None):
            # a start this run did not take, or one older than the start asked for now;
            # kept otherwise (a run played again starts no new one: harness.trial)
            discard(old)
            self._started = None
        ahead, self._asked = self._asked, None
        if ahead is None or ahead.run_id == playing:
            return
        from harness.db.runtime import netns, reaper

        # the exit hooks from this (main) thread, before any process or namespace of the
        # new cluster exists; the cluster object built here too, only its start elsewhere
        netns.install_exit_hooks()
        reaper.install_exit_hooks()
        try:
            ahead.cluster = ahead.build(workdir())
        except Exception:
            return  # its run builds its own, and says why if it cannot
        ahead.after = playing
        if os.geteuid() == 0 and hasattr(ahead.cluster, "start_nice"):
            ahead.cluster.start_nice = BACKGROUND_NICE  # the local runtime's JVMs, as launched
        if self._helper is None:
            self._helper = ThreadPoolExecutor(1, thread_name_prefix="hwchaos-prestart")
        ahead.future = self._helper.submit(_start, ahead.cluster)
        self._started = ahead

    @property
    def starting(self) -> Cluster | None:
        """The cluster being started (or started) for a later run and not yet taken."""
        return self._started.cluster if self._started is not None else None

    def take(self, key: str | None, run_id: str) -> Ahead | None:
        """The background start asked for this run, if one began and has not failed (a
        keyed run takes one of its configuration, a fresh-only run the one of its id)."""
        ahead = self._started
        if ahead is None or ahead.future is None or ahead.cluster is None:
            return None
        if (ahead.run_id != run_id) if key is None else (ahead.key != key):
            return None
        self._started = None
        if ahead.future.done() and ahead.future.exception() is not None:
            discard(ahead)  # it failed: the run starts a cluster of its own, as without it
            return None
        return ahead

    def hand_over(self, ahead: Ahead) -> dict[str, Any]:
        """``ahead``'s cluster goes to its run: what ``run.json`` says of it so far."""
        assert ahead.cluster is not None
        self._taken[id(ahead.cluster)] = ahead
        return {"after": ahead.after}

    def ready(self, cluster: Cluster, said: dict[str, Any]) -> timing.Timings:
        """Wait for what is left of ``cluster``'s background start; raises its error (the
        cluster closed). Sets its JVMs back to the harness's priority, adds to ``said`` how
        long the start took and how long the run waited, and returns the start's timings."""
        ahead = self._taken.pop(id(cluster))
        assert ahead.future is not None
        t0 = time.perf_counter()
        try:
            timings = ahead.future.result()
        except BaseException:
            with contextlib.suppress(Exception):
                cluster.close()
            raise
        waited = time.perf_counter() - t0
        if os.geteuid() == 0:
            from harness.db.runtime.process import renice

            if hasattr(cluster, "start_nice"):
                cluster.start_nice = None  # a restart from now on is an ordinary one
            mine = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
            for name in cluster.nodes:
                pid = cluster.host_pid(name)
                if pid is not None:
                    renice(pid, mine, group=0)  # 0: a new autogroup's own value
        said["waited_seconds"] = round(waited, 3)
        said["start_seconds"] = round(timings.seconds(PHASE), 3)
        self.count += 1
        return timings

    def stop(self) -> list[Ahead]:
        """Stop every start not yet waited for (Ctrl-C, the pool's close); returns them."""
        pending = [a for a in (self._started, *self._taken.values()) if a is not None]
        self._started, self._asked, self._taken = None, None, {}
        for ahead in pending:
            discard(ahead)
        return pending

    def shutdown(self, stopped: list[Ahead]) -> None:
        """End the helper thread, once the clusters it launched JVMs for are stopped (its
        exit is their PDEATHSIG); ``stopped`` once more, for a start that ended meanwhile."""
        if self._helper is not None:
            self._helper.shutdown(wait=True)
            self._helper = None
        for ahead in stopped:
            discard(ahead)
