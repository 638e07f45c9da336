"""Cost of a run network: build (bridge + one namespace per node), cut, heal, close, reap.

Also how long an established TCP connection takes to carry data again after a heal (TCP's
retransmission backoff decides it), which bounds how soon a healed follower fetches again.

Run (root): .venv/bin/python benchmarks/bench_network.py [--repeat 10] [--nodes 5]
"""

from __future__ import annotations

import argparse
import socket
import statistics
import subprocess
import sys
import textwrap
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from harness.nemesis.network import RunNetwork, network_available, reap_leftovers

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


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--repeat", type=int, default=10)
    p.add_argument("--nodes", type=int, default=5, help="brokers + controller + ZooKeeper")
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


if __name__ == "__main__":
    main()
