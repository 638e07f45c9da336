"""Play one scenario on real brokers: cluster, playbook, read-back, into a :class:`RunRecord`.

The runner plays and records; it judges nothing (:func:`harness.checker.judge.judge` does)
and writes only the broker logs (:mod:`harness.checker.store` writes the run folder;
:func:`harness.trial.trial` calls the three). Whatever happens (a fence times out, a step is
prevented, Ctrl-C), every JVM/container is stopped before :func:`play` returns or raises.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable
from pathlib import Path

from harness import timing
from harness.db import BrokerUnavailable, Cluster, ClusterError
from harness.db.catalogue.versions import KafkaVersion
from harness.db.mode import check_controllers
from harness.db.mode.base import SPARE_CONTROLLER
from harness.db.names import TOPIC
from harness.db.runtime.docker import DockerCluster, docker_available
from harness.db.runtime.linkcuts import network_available
from harness.db.runtime.local import LocalCluster
from harness.generator.playbook import Playbook
from harness.generator.playbook.fences import FenceTimeout, StepPrevented
from harness.generator.realise import configure, needs, network_unavailable
from harness.generator.record import RunRecord
from harness.generator.warm import Reuse, WarmClusters, warm_key
from harness.nemesis import failover
from harness.readback.checkpoints import read_leader_epoch_checkpoint
from reference_model.events import Event
from reference_model.run import RunResult, run_scenario
from reference_model.scenario import Scenario


def make_cluster(
    version: KafkaVersion,
    backend: str,
    names: list[str],
    workdir: Path,
    run_id: str,
    controllers: int = 1,
    network: bool = False,
) -> Cluster:
    """A cluster of ``version`` on ``backend``; ``controllers`` is the KRaft quorum size.

    ``network``: the scenario cuts links (see harness.generator.realise.needs): the local
    backend runs every node in its own network namespace, which needs root; without it
    this raises BrokerUnavailable with the reason, before anything starts.
    """
    check_controllers(version, controllers)
    if backend == "local":
        if network:
            reason = network_available()
            if reason is not None:
                raise BrokerUnavailable(f"the scenario needs network partitions: {reason}")
        return LocalCluster(version, names, workdir, controllers=controllers, network=network)
    if backend == "docker":
        reason = docker_available()
        if reason is not None:
            raise BrokerUnavailable(reason)
        cluster: Cluster = DockerCluster(version, names, workdir, run_id, controllers=controllers)
        return cluster
    raise ValueError(f"unknown backend {backend!r} (local, docker)")


def cluster_builder(
    scenario: Scenario,
    version: KafkaVersion,
    prediction: RunResult,
    backend: str,
    run_id: str,
    progress: Callable[[str], None],
    controllers: int = 1,
) -> Callable[[Path], Cluster]:
    """How this run's cluster is made (not started) in a given work dir: the broker names,
    the quorum, the run network and the per-broker settings its steps need, a spare
    controller broker if a step fails the controller over. The runner's, and the warm
    pool's for a cluster it starts ahead of its run (:func:`prestart_next`)."""
    want = needs(scenario, prediction)

    def build(where: Path) -> Cluster:
        made = make_cluster(
            version,
            backend,
            list(scenario.brokers),
            where,
            run_id,
            controllers=controllers,
            network=want.network,
        )
        failover.prepare(made, prediction)  # a spare controller broker if a step needs one
        for line in configure(made, want):
            progress(f"network steps: {line}")
        return made

    return build


def prestart_next(
    warm: WarmClusters,
    scenario: Scenario,
    version: KafkaVersion,
    backend: str,
    run_id: str,
    controllers: int = 1,
    playing_key: str | None = None,
) -> None:
    """Tell ``warm`` which run comes after the one about to play, so a fresh cluster it
    will need starts in the background meanwhile (:meth:`WarmClusters.prestart`; nothing
    when a kept cluster serves it). ``matrix``, the benchmark, the pytest plugin and
    ``explore --confirm`` call it; they know which run comes next.

    ``playing_key``: the configuration of the run about to play; a next run of the same
    one starts nothing. The local runtime only: a docker cluster started on a helper
    thread would share the Docker client with the run playing on the main thread, a path
    no test covers."""
    if backend != "local":
        return
    prediction = run_scenario(scenario, version.generation)
    key = warm_key(scenario, prediction, version.name, backend, controllers)
    if key is not None and key == playing_key:
        return  # the next run takes the playing run's cluster once that run is done
    # built on the main thread while another run plays: its "network steps" lines would
    # land in that run's output; the run that takes it says where its cluster came from
    build = cluster_builder(
        scenario, version, prediction, backend, run_id, lambda _m: None, controllers
    )
    warm.prestart(key, build, run_id)


def play(
    scenario: Scenario,
    version: KafkaVersion,
    prediction: RunResult,
    backend: str,
    folder: Path,
    run_id: str,
    progress: Callable[[str], None],
    controllers: int = 1,
    warm: WarmClusters | None = None,
) -> RunRecord:
    """Play ``scenario`` on a fresh cluster; returns what happened, judged by nobody.

    ``prediction`` drives the playbook's fences and says which step, if any, this version
    refuses (the run stops before it). The broker logs are copied into ``folder/logs``.
    With ``warm``, the run plays on a clean cluster of the same configuration an earlier
    run left running, if there is one (harness.generator.warm), and leaves its cluster
    reset and running for the next; ``record.cluster`` says which.
    """
    folder.mkdir(parents=True, exist_ok=True)
    record = RunRecord(
        run_id=run_id,
        scenario=scenario,
        version=version,
        backend=backend,
        folder=folder,
        stop_before=predicted_prevention(prediction),
    )
    stop_at = record.stop_before
    workdir = folder / "cluster"
    t0 = time.perf_counter()
    cpu0 = timing.cpu_seconds()
    timings = timing.Timings()
    want = needs(scenario, prediction)
    build = cluster_builder(scenario, version, prediction, backend, run_id, progress, controllers)

    if warm is None:
        cluster, reuse = build(workdir), Reuse(False, TOPIC, why_fresh="fresh clusters asked for")
    else:
        key = warm_key(scenario, prediction, version.name, backend, controllers)
        # the reset of the run before (deferred to here: harness.generator.warm) and the
        # clean check are this run's time
        with timing.recording(timings), timing.phase("cluster_reset"):
            cluster, reuse = warm.acquire(key, build, run_id)
        workdir = cluster.workdir
    record.cluster = reuse
    recording = timing.recording(timings)
    recording.__enter__()  # until the cluster is stopped: the phases below add to ``timings``
    try:
        if reuse.reused:
            progress(
                f"reusing the {backend} cluster of {reuse.before[-1]} "
                f"({len(reuse.before)} run(s) before), topic {reuse.topic}"
            )
        else:
            progress(
                f"starting {backend} cluster: Kafka {version.name} "
                f"({version.generation}), brokers {list(scenario.brokers)}"
                + (f" ({reuse.why_fresh})" if warm is not None else "")
            )
            with timing.phase("cluster_start"):
                if reuse.prestarted and warm is not None:
                    # started in the background while the run before played: what is left
                    # of the start is this run's; the start's own phase is kept beside it
                    timings.phases[:0] = warm.ready(cluster, reuse).phases
                else:
                    cluster.start()
            for why in cluster.failed_starts:  # set-up, not judged: said, and kept aside
                progress(f"a first start failed and was retried on fresh ports: {why}")
        record.timings["cluster_up"] = round(time.perf_counter() - t0, 3)
        progress(f"cluster up in {record.timings['cluster_up']:.1f}s")
        if warm is not None:
            warm.kick(run_id)  # the next run's fresh cluster, if asked for, starts now
        missing = network_unavailable(cluster, want)
        if missing is not None:
            raise BrokerUnavailable(missing)
        book = Playbook(cluster, scenario, version, prediction, progress=progress)
        try:
            with timing.phase("setup"):
                book.setup()
            for k, ev in enumerate(scenario.steps, start=1):
                if stop_at is not None and k >= stop_at[0]:
                    # The model says this version makes step k impossible: it is not played
                    # (even where the harness could force it), the run ends before it.
                    record.status = "prevented"
                    with timing.phase(f"prevention check {k}"):
                        record.harness_note = _harness_note(book, k, ev, stop_at[1])
                    progress(f"step {k:>2}/{len(scenario.steps)} prevented: {stop_at[1]}")
                    break
                with timing.phase(f"step {k}"):
                    record.observations.append(book.step(k, ev))
            with timing.phase("finish"):
                finish = book.finish()
            record.deliveries = finish.pop("deliveries", {})
            record.final = finish
        except StepPrevented as exc:
            record.status, record.failure = "step_prevented", str(exc)
        except FenceTimeout as exc:
            record.status, record.failure = "fence_timeout", str(exc)
        finally:
            record.file_writes = list(book.file_writes)
            record.reads = list(book.reads)
            record.doorbell = book.bell.to_json() if book.bell is not None else {}
            if book.bell_declined:
                record.doorbell = {"declined": book.bell_declined}
            with timing.phase("readback"):
                record.logs = {n: book.log(n) for n in scenario.brokers}
                record.epoch_files = {n: _epoch_checkpoint(cluster, n) for n in scenario.brokers}
                book.close()
    except ClusterError as exc:
        record.status, record.failure = "error", str(exc)
    finally:
        if warm is None:
            with timing.phase("cluster_stop"):
                cluster.close()
                record.files += _copy_broker_logs(workdir, folder / "logs", list(scenario.brokers))
        else:
            # the logs first: the reset (when the next run takes the cluster) empties them
            record.files += _copy_broker_logs(workdir, folder / "logs", list(scenario.brokers))
            warm.release(cluster, reuse)
        recording.__exit__(None, None, None)
    record.timings["total"] = time.perf_counter() - t0
    cpu1 = timing.cpu_seconds()
    # where the wall time went (harness.timing) and the CPU it cost: the harness's own and
    # its reaped JVMs', to tell a slow broker from a loaded machine
    record.phases = {
        **timings.to_json(),
        "cpu_seconds": {
            "harness": round(cpu1[0] - cpu0[0], 2),
            "jvms": round(cpu1[1] - cpu0[1], 2),
        },
    }
    return record


def predicted_prevention(prediction: RunResult) -> tuple[int, str] | None:
    """The step the model says this version makes impossible, and why (None: none).

    ``RunResult.prevented`` (issue 9): 1-based step index and a one-line reason naming the
    Kafka change and broker method.
    """
    value = prediction.prevented
    if value is None:
        return None
    step, reason = value
    return int(step), str(reason)


def _harness_note(book: Playbook, k: int, ev: Event, reason: str) -> str:
    """What the harness saw of a prevention the model predicted, for the run folder.

    Where it can cheaply (for example: cut the follower off and see the ISR does not shrink
    within the lag time), the playbook checks that the broker really refuses the step
    (:meth:`Playbook.check_prevented`); otherwise it says the harness only stopped there.
    """
    try:
        return book.check_prevented(k, ev, reason)
    except (FenceTimeout, StepPrevented) as exc:
        return f"the broker check of the prevention did not conclude: {exc}"


def _epoch_checkpoint(cluster: Cluster, name: str) -> list[tuple[int, int]]:
    """Broker ``name``'s leader-epoch-checkpoint for the test partition ([] if absent)."""
    path = cluster.partition_dir(name) / "leader-epoch-checkpoint"
    try:
        return read_leader_epoch_checkpoint(path) if path.exists() else []
    except Exception:  # a torn file after a crash is an observation of its own
        return [(-1, -1)]


def _copy_broker_logs(workdir: Path, dest: Path, names: list[str]) -> list[str]:
    """Copy every node's logs out of the cluster folder; returns the copies, run-relative."""
    copied = []
    for name in ["zookeeper", "controller", SPARE_CONTROLLER, *names]:
        src = workdir / name / "logs"
        if src.is_dir():
            shutil.copytree(src, dest / name, dirs_exist_ok=True)
            copied.append(f"{dest.name}/{name}")
    return copied
