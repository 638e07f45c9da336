"""The warm pool's clean check and reset (harness.generator.warm): what a run left on a
cluster, observed, and put back as a fresh cluster would be.

:func:`dirty` says in one line why a cluster cannot take another run (observed: processes
and their ``/proc`` state, iptables in the namespaces, the controller's metadata, the
brokers' data dirs); :func:`reset` heals links, resumes paused JVMs, starts again the
brokers the run stopped (only those), deletes the run's topics and empties the log files,
so no fence of the next run reads a line of this one. docs/warm-cluster.md says why each.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

from harness.db import Cluster, ClusterError
from harness.db.names import bell_topic
from harness.generator.playbook.halts import dying_line
from harness.readback.log4j import read_rotated

RESET_TIMEOUT = 60.0
"""Bound of each wait of the reset (a broker to register, the old topic to go)."""
DELETE_STALL = 5.0
"""After this long without the topic deleted, the brokers still holding it are restarted.

A deletion on a quiet cluster takes well under a second; one the ZooKeeper-mode controller
stalls on without logging a halt (0.10.2.1 after kip966-last-replica-standing, 7 Dec 2026)
waited the whole 15 s this was before. A restart too many is harmless (a broker's startup
resumes the deletion of the topics it holds) and costs about a second."""
HALT_GRACE = 2.0
"""Seconds a deletion the controller logged as halted may take to resume by itself before
the brokers still holding the topic are restarted (instead of :data:`DELETE_STALL`)."""
HALTED = re.compile(r"Halted deletion of topics (\S+)")
"""TopicDeletionManager's line (controller.log, ZooKeeper mode, every release hwchaos runs:
``markTopicIneligibleForDeletion``/``haltTopicDeletion``; "... due to <reason>" from 2.x)."""



def _proc_state(pid: int) -> str:
    """The process state letter of ``/proc/<pid>/stat`` ('T': stopped), '' if gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return ""


def _observed_rules(cluster: Cluster) -> list[str]:
    """The run network's DROP rules as iptables lists them (not the harness's bookkeeping)."""
    net = cluster.network
    if net is None:
        return []
    return list(net.rules_in_place())


def dirty(cluster: Cluster, old_topics: list[str]) -> str | None:
    """Why ``cluster`` cannot take another run (one line), None when it is clean.

    Observed: processes and their ``/proc`` state, iptables in the namespaces, the
    controller's metadata, the brokers' data dirs.
    """
    for name in cluster.nodes:
        if not cluster.is_running(name):
            return f"{name} is not running"
        pid = cluster.host_pid(name)
        if pid is not None and _proc_state(pid) in ("T", "t"):
            return f"{name} (pid {pid}) is stopped (SIGSTOP)"
    for name in cluster.brokers:
        if _halted(cluster, name):
            return f"{name} logged its halt"
    rules = _observed_rules(cluster)
    if rules:
        return f"{len(rules)} DROP rule(s) left in the run network: {rules[0]}"
    old_topics = [t for old in old_topics for t in (old, bell_topic(old))]
    view = cluster.metadata()
    try:
        live = set(view.live_brokers())
        for name, spec in cluster.brokers.items():
            if spec.broker_id not in live:
                return f"broker {name} (id {spec.broker_id}) is not live for the controller"
        for topic in old_topics:
            if view.partition(topic) is not None:
                return f"the controller still has topic {topic} of an earlier run"
        pending = [t for t in view.pending_deletions() if t in old_topics]
        if pending:
            return f"the deletion of topic {pending[0]} of an earlier run is not complete"
    finally:
        view.close()
    wrong = cluster.mode.unexpected_controller(cluster)
    if wrong is not None:
        return wrong
    for topic in old_topics:
        for name in cluster.brokers:
            if cluster.partition_dir(name, topic).exists():
                return f"{name} still has {topic}'s partition dir"
    return None


def _wait(check: Callable[[], bool], what: str, timeout: float = RESET_TIMEOUT) -> None:
    """A bounded wait on observable state (the reset's fences). A read that fails (a
    znode deleted between two calls, a broker not answering yet) is retried; a
    ClusterError from ``check`` ends the wait."""
    deadline = time.monotonic() + timeout
    last = ""
    while True:
        try:
            if check():
                return
        except ClusterError:
            raise
        except Exception as exc:
            last = f" (last read: {type(exc).__name__}: {exc})"
        if time.monotonic() > deadline:
            raise ClusterError(f"reset: {what} did not happen within {timeout:.0f}s{last}")
        time.sleep(0.1)


def _live(cluster: Cluster) -> set[int]:
    view = cluster.metadata()
    try:
        return set(view.live_brokers())
    finally:
        view.close()


def _restart(cluster: Cluster, names: list[str], done: list[str], why: str = "") -> None:
    """Start ``names`` again (SIGKILL first if running) and wait until all are live."""
    ids = {n: s.broker_id for n, s in cluster.brokers.items()}
    for name in names:
        if cluster.is_running(name):
            cluster.signal(name, signal.SIGKILL)
            cluster.wait_exit(name, 30)
        # A crashed broker's registration outlives it (ZooKeeper: its session; KRaft: its
        # heartbeat session), and a broker started meanwhile is refused (0.10: it shuts
        # down; KRaft: DuplicateBrokerRegistrationException): end it first, as ``detect``.
        with contextlib.suppress(Exception):
            cluster.declare_dead(name)
        _wait(partial(_not_live, cluster, ids[name]), f"{name}'s old registration to go")
        cluster.start_broker(name)
        done.append(f"restarted {name}" + (f" {why}" if why else ""))
    cluster.expected_down.clear()

    def back() -> bool:
        gone = [n for n in cluster.brokers if not cluster.is_running(n)]
        if gone:
            raise ClusterError(f"reset: {', '.join(gone)} exited after the restart")
        return set(ids.values()) <= _live(cluster)

    if names:
        _wait(back, "every broker to be live again")


def _halted(cluster: Cluster, name: str) -> bool:
    """Broker ``name`` logged that it exits (a halt), whether or not its JVM is gone."""
    return dying_line(read_rotated(cluster.broker_log(name))) is not None


def _not_live(cluster: Cluster, broker_id: int) -> bool:
    return broker_id not in _live(cluster)


def _empty_logs(cluster: Cluster) -> None:
    """Empty every node's log files in place (the JVMs append: O_APPEND writes follow the
    new end) and remove the files rotated out of them, so the next run's fences, which read
    whole logs (``Truncating``, a halt's dying line), see its lines alone."""
    for name in cluster.nodes:
        logs = cluster.workdir / name / "logs"
        if not logs.is_dir():
            continue
        for f in logs.iterdir():
            if not f.is_file():
                continue
            if f.name.endswith(".log") or f.name.endswith(".out"):
                with contextlib.suppress(OSError):
                    os.truncate(f, 0)
            else:
                with contextlib.suppress(OSError):
                    f.unlink()


def _deletion_halted(cluster: Cluster, topic: str) -> bool:
    """Some node's controller.log says the deletion of ``topic`` was halted (:data:`HALTED`).

    The reset empties every log before the next run, and each run has its own topic, so a
    line naming ``topic`` is this deletion's.
    """
    for name in cluster.nodes:
        text = read_rotated(cluster.workdir / name / "logs" / "controller.log")
        for m in HALTED.finditer(text):
            if topic in m.group(1).split(","):
                return True
    return False


def _controller_has(cluster: Cluster, topic: str) -> bool:
    view = cluster.metadata()
    try:
        return view.partition(topic) is not None or topic in view.pending_deletions()
    finally:
        view.close()


def reset(cluster: Cluster, topic: str) -> list[str]:
    """Put a cluster a run has used back as a fresh one; returns what was done.

    Heal, resume, restart what the run stopped (and nothing else), delete the run's topic
    and wait until the controller and every broker's disk no longer have it, empty the
    logs. Raises ClusterError when the cluster does not come back (the caller closes it).
    """
    done: list[str] = []
    cluster.mode.keep_alive(cluster, set())  # KRaft: the session keeper keeps nobody alive
    if cluster.network is not None:
        healed = cluster.network.heal()
        if healed:
            done.append(f"healed {len(healed)} cut link(s)")
    for name in cluster.nodes:
        pid = cluster.host_pid(name)
        if pid is not None and _proc_state(pid) in ("T", "t"):
            cluster.signal(name, signal.SIGCONT)
            done.append(f"resumed {name}")
    for name in list(cluster.nodes):
        if name not in cluster.brokers and not cluster.is_running(name):
            raise ClusterError(f"reset: {name} (not a broker) is down; a fresh cluster is needed")
    ids = {n: s.broker_id for n, s in cluster.brokers.items()}
    down = [n for n in cluster.brokers if not cluster.is_running(n)]
    # a running broker the controller does not count live (its session dropped): restart it
    if not down:
        with contextlib.suppress(Exception):
            _wait(lambda: set(ids.values()) <= _live(cluster), "every broker live", 5.0)
    live = _live(cluster)
    stale = [n for n in cluster.brokers if n not in down and ids[n] not in live]
    # a broker that logged its halt and hangs in its shutdown hook (KAFKA-4039, before 0.11)
    hung = [n for n in cluster.brokers if n not in down + stale and _halted(cluster, n)]
    _restart(cluster, down, done)
    _restart(cluster, stale, done, "(running, but not live for the controller)")
    _restart(cluster, hung, done, "(it halted)")
    # the run's doorbell (playbook/bell.py), when it had one, goes with its topic
    topics = [topic] + [t for t in [bell_topic(topic)] if _controller_has(cluster, t)]
    try:
        for t in topics:
            cluster.delete_topic(t)
    except Exception as exc:
        raise ClusterError(f"reset: {exc}") from None

    def on_disk(n: str) -> bool:
        return any(cluster.partition_dir(n, t).exists() for t in topics)

    def gone() -> bool:
        view = cluster.metadata()
        try:
            pending = view.pending_deletions()
            if any(view.partition(t) is not None or t in pending for t in topics):
                return False
        finally:
            view.close()
        return not any(on_disk(n) for n in cluster.brokers)

    halted_at: list[float] = []

    def gone_or_halted() -> bool:
        if gone():
            return True
        if not halted_at and any(_deletion_halted(cluster, t) for t in topics):
            halted_at.append(time.monotonic())
        return bool(halted_at) and time.monotonic() - halted_at[0] >= HALT_GRACE

    with contextlib.suppress(ClusterError):
        _wait(gone_or_halted, f"topic {topic} to be deleted", DELETE_STALL)
    if not gone():
        # A ZooKeeper-mode controller can hold replicas of live brokers as offline after
        # the run's restarts (seen on 0.10.2.1 after kip966-last-replica-standing: "Dead
        # Replicas ... found", "Halted deletion"); a broker's startup resumes the deletion.
        # Restart the brokers that still have the partition (observed on disk), once: as
        # soon as the controller logged the halt (it cost 15 s a reset before), else after
        # DELETE_STALL.
        stuck = [n for n in cluster.brokers if on_disk(n)]
        why = f"halted the deletion of {topic}" if halted_at else f"had not deleted {topic} there"
        _restart(cluster, stuck, done, f"(the controller {why})")
    try:
        _wait(gone, f"topic {topic} to be deleted")
    except ClusterError:
        view = cluster.metadata()
        try:
            state = view.partition(topic)
        finally:
            view.close()
        dirs = [n for n in cluster.brokers if on_disk(n)]
        raise ClusterError(
            f"reset: topic {topic} not deleted within {RESET_TIMEOUT:.0f}s "
            f"(controller: {state.describe() if state else 'gone'}; dirs on {dirs or 'none'})"
        ) from None
    if len(topics) > 1:
        done.append(f"deleted the doorbell {topics[1]}")
    done.append(f"deleted topic {topic}")
    _empty_logs(cluster)
    return done
