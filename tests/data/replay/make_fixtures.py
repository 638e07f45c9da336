"""How the fixtures here were cut from our own broker runs (``hwchaos run ... --json``).

Keeps every line the replay parser recognises for the test partition, the broker-level
lines, the config lines naming the broker id / protocol, the version line, and one in
``--noise`` of the other lines, so each fixture stays a few KB. The run's outcome
(acks, producer deliveries, verdict, observed final logs) goes to ``expected.json``.

    python tests/data/replay/make_fixtures.py RUN_FOLDER tests/data/replay/NAME
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from harness.replay.parse import LOG_KINDS, PartitionMatcher, _facts, parse_ts

KEEP_CONF = ("broker.id =", "node.id =", "inter.broker.protocol.version =", "process.roles =")


def cut(run: Path, dest: Path, noise: int = 40) -> None:
    match = PartitionMatcher("hwchaos", 0)
    for broker in sorted((run / "logs").iterdir()):
        if broker.name == "zookeeper":
            continue
        for kind in (*LOG_KINDS, "stdout.log"):
            src = broker / kind
            if not src.is_file():
                continue
            kept, k = [], 0
            for line in src.read_text(errors="replace").splitlines():
                ts = parse_ts(line)
                if kind == "stdout.log":
                    if "Kafka version" in line:
                        kept.append(line)
                    continue
                if ts is None:
                    if line.strip().startswith(KEEP_CONF):
                        kept.append(line)
                    continue
                if _facts(line, ts, 0, broker.name, kind, match) or "Kafka version" in line:
                    kept.append(line[:1500])
                else:
                    k += 1
                    if k % noise == 0:
                        kept.append(line[:300])
            if kept:
                (dest / broker.name).mkdir(parents=True, exist_ok=True)
                (dest / broker.name / kind).write_text("\n".join(kept) + "\n")
    v = json.loads((run / "verdict.json").read_text())
    import pyarrow.parquet as pq

    df = pq.read_table(run / "replicas.parquet").to_pandas()
    obs = df[df.source == "observed"].sort_values(["replica", "offset"])
    expected = {
        "version": v["version"],
        "acks": v["acks"],
        "min_insync": v["min_insync"],
        "deliveries": v["extra"]["deliveries"],
        "lost_acked": v["lost_acked"],
        "divergent_offsets": v["divergent_offsets"],
        "replicas": {str(n): list(g.record) for n, g in obs.groupby("replica")},
    }
    (dest / "expected.json").write_text(json.dumps(expected, indent=1) + "\n")


if __name__ == "__main__":
    cut(Path(sys.argv[1]), Path(sys.argv[2]))
