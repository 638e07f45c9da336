"""Cost of a run network: build (bridge + one namespace per node), cut, heal, close, reap.

Also how long an established TCP connection takes to carry data again after a heal (TCP's
retransmission backoff decides it), which bounds how soon a healed follower fetches again.

With ``--kafka VERSION[,VERSION]`` (release trees as for the local backend): on a real
cluster of two brokers, the time from cutting follower B from leader A until A shrinks the
ISR (``replica.lag.time.max.ms`` = ``--lag-ms``), and from the heal until B is back in it.

Run (root): .venv/bin/python benchmarks/bench_network.py [--repeat 10] [--nodes 5]
            [--kafka 0.10.2.1,2.1.1,3.3.1,3.3.1-kraft,4.0.0 --lag-ms 3000]
"""

from __future__ import annotations

import argparse
import contextlib
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from harness.db.runtime.linkcuts import network_available
from harness.db.runtime.netns import RunNetwork, reap_leftovers

SERVER = textwrap.dedent(
    """
    import socket, sys
    s = socket.socket(); s.bind(("0.0.0.0", 9099)); s.listen(1)
    print("ready", flush=True)
    c, _ = s.accept()
    while data := c.recv(64):
        c.sendall(data)
    """
)


def _stats(name: str, xs: list[float]) -> None:
    ms = [x * 1000 for x in xs]
    print(f"{name:<34} {statistics.mean(ms):>8.1f} {min(ms):>8.1f} {max(ms):>8.1f}")


def resume_after_heal(net: RunNetwork, cut_for: float) -> float:
    """Seconds from heal until an echo sent during the cut comes back."""
    srv = subprocess.Popen(
        net.wrap("A", [sys.executable, "-c", SERVER]), stdout=subprocess.PIPE, text=True
    )
    assert srv.stdout is not None and srv.stdout.readline().strip() == "ready"
    try:
        with socket.create_connection((net.address("A"), 9099), timeout=5) as s:
            s.sendall(b"x")
            s.recv(1)
            net.partition("client", "A")
            s.sendall(b"y")
            time.sleep(cut_for)  # the length of the partition is the variable measured
            t = time.perf_counter()
            net.heal()
            s.settimeout(120)
            s.recv(1)
            return time.perf_counter() - t
    finally:
        srv.kill()
        srv.wait()
        srv.stdout.close()


def isr_cycle(version: str, lag_ms: int) -> tuple[float, float, float]:
    """(cluster start s, partition -> ISR shrink s, heal -> ISR expand s) on real brokers."""
    from tenacity import retry, retry_if_result, stop_after_delay, wait_fixed

    from harness.db import TopicSpec
    from harness.db.catalogue.versions import resolve_version
    from harness.db.runtime.local import LocalCluster
    from harness.nemesis import faults

    work = Path(tempfile.mkdtemp(prefix="hwchaos-netbench-"))
    cluster = LocalCluster(resolve_version(version), ["A", "B"], work, network=True)
    for spec in cluster.brokers.values():
        spec.props["replica.lag.time.max.ms"] = str(lag_ms)
        spec.props["replica.socket.timeout.ms"] = "5000"
    a, b = cluster.brokers["A"].broker_id, cluster.brokers["B"].broker_id
    t = time.perf_counter()
    with cluster:
        started = time.perf_counter() - t
        cluster.create_topic(TopicSpec(["A", "B"], min_insync=1, unclean=False))
        with contextlib.closing(cluster.metadata()) as meta:

            def wait_isr(isr: tuple[int, ...]) -> float:
                t0 = time.perf_counter()

                @retry(
                    stop=stop_after_delay(120),
                    wait=wait_fixed(0.05),
                    retry=retry_if_result(lambda ok: not ok),
                )
                def poll() -> bool:
                    view = meta.partition()
                    return view is not None and view.isr == isr

                poll()
                return time.perf_counter() - t0

            wait_isr((a, b))
            faults.partition(cluster, "B", "A")
            shrink = wait_isr((a,))
            faults.heal(cluster)
            expand = wait_isr((a, b))
    shutil.rmtree(work, ignore_errors=True)
    return started, shrink, expand


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--repeat", type=int, default=10)
    p.add_argument("--nodes", type=int, default=5, help="brokers + controller + ZooKeeper")
    p.add_argument("--kafka", default="", help="comma-separated versions for the ISR cycle")
    p.add_argument("--lag-ms", type=int, default=3000)
    args = p.parse_args()
    reason = network_available()
    if reason:
        sys.exit(reason)
    nodes = [f"n{i}" for i in range(args.nodes - 1)] + ["A"]
    t_build, t_cut, t_heal, t_close, t_reap = [], [], [], [], []
    for _ in range(args.repeat):
        t = time.perf_counter()
        net = RunNetwork(nodes)
        t_build.append(time.perf_counter() - t)
        t = time.perf_counter()
        net.isolate("A")
        t_cut.append(time.perf_counter() - t)
        t = time.perf_counter()
        net.heal()
        t_heal.append(time.perf_counter() - t)
        t = time.perf_counter()
        net.close()
        t_close.append(time.perf_counter() - t)
        t = time.perf_counter()
        reap_leftovers()
        t_reap.append(time.perf_counter() - t)
    print(f"{args.nodes} nodes, {args.repeat} repeats")
    print(f"{'step':<34} {'mean ms':>8} {'min ms':>8} {'max ms':>8}")
    _stats("build network", t_build)
    _stats(f"isolate one node ({2 * (args.nodes - 1)} rules)", t_cut)
    _stats("heal all", t_heal)
    _stats("close", t_close)
    _stats("reap (nothing to reap)", t_reap)
    print(f"{'partition length s':<20} {'resume after heal s':>20}")
    for cut_for in (0.5, 2.0, 8.0):
        with RunNetwork(["A"]) as net:
            print(f"{cut_for:<20} {resume_after_heal(net, cut_for):>20.2f}")
    if args.kafka:
        print(f"replica.lag.time.max.ms={args.lag_ms}")
        print(f"{'version':<10} {'start s':>8} {'cut->shrink s':>14} {'heal->expand s':>15}")
        for version in args.kafka.split(","):
            started, shrink, expand = isr_cycle(version, args.lag_ms)
            print(f"{version:<10} {started:>8.1f} {shrink:>14.1f} {expand:>15.1f}")


if __name__ == "__main__":
    main()
