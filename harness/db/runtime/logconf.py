"""The brokers' log configuration: the release's own, plus the loggers the fences read.

Why: some of what a fetch step must wait for is said only in a broker's own log. A follower
sends its next Fetch as soon as it has appended, and the model's ``fetch`` ends with that
request at the leader (``fetch_request``): the leader then knows the follower's LEO and
moves its HW by it. On a loaded machine the harness can pause the follower after Kafka's
``NetworkClient`` queued that request but before its bytes left (seen in CI on 4.0.1,
kraft-isr-shrink-epoch on a reused cluster: B's Fetch at offset 1 was "in flight" 45 s
in B's own log, A never recorded it, and A's HW stayed 0 when C's fetch should have made
it 1). When the ISR's slowest member is another follower the leader's HW cannot show it;
the leader's ``kafka.cluster.Partition`` at DEBUG does, on every version:
``Partition.updateReplicaLogReadResult`` (0.10.2: "Recorded replica 2 log end offset (LEO)
position 1 for partition hwchaos-0."; 2.1: "[Partition hwchaos-0 broker=1] Recorded replica
2 log end offset (LEO) position 1.") and ``Partition.updateFollowerFetchState`` (3.3, 4.0:
"... position 1 and log start offset 0."). A few lines a second per partition.

Before 0.11 ``kafka.server.ReplicaFetcherThread`` at TRACE also says the HW each round gave
the follower (see ``harness.generator.playbook.fetch``), on the local backend.

The release's file is the base (its appenders name the files the harness reads) and is never
written: the copy goes in the cluster's work dir, a container gets it bind-mounted over its
image's.
"""

from __future__ import annotations

import re

PARTITION_LOGGER = "kafka.cluster.Partition"
FETCHER_LOGGER = "kafka.server.ReplicaFetcherThread"

_LOG4J2_LOGGERS = re.compile(r"^(\s*)Logger:\s*\n", re.MULTILINE)


def log4j_properties(base: str, fetcher_trace: bool) -> str:
    """A log4j 1 configuration (0.10 to 3.x): ``base`` with the harness's loggers."""
    extra = "\n# hwchaos: the leader's record of each follower's fetch position (fetch fence)\n"
    extra += f"log4j.logger.{PARTITION_LOGGER}=DEBUG\n"
    if fetcher_trace:
        extra += "# hwchaos: the follower's HW after each fetch round (fetch fence)\n"
        extra += f"log4j.logger.{FETCHER_LOGGER}=TRACE\n"
    return base.rstrip("\n") + "\n" + extra


def log4j2_yaml(base: str) -> str:
    """A log4j2 YAML configuration (4.x): ``base`` with the harness's logger first in its
    ``Loggers: Logger:`` list. ValueError when the file has no such list (a release that
    changed its layout: said, not guessed)."""
    m = _LOG4J2_LOGGERS.search(base)
    if m is None:
        raise ValueError("log4j2.yaml has no 'Logger:' list to add kafka.cluster.Partition to")
    indent = m.group(1) + "  "
    entry = f"{indent}# hwchaos: the leader's record of each follower's fetch position\n"
    entry += f"{indent}- name: {PARTITION_LOGGER}\n{indent}  level: DEBUG\n"
    return base[: m.end()] + entry + base[m.end() :]


def with_harness_loggers(base: str, log4j2: bool, fetcher_trace: bool = False) -> str:
    """The release's configuration ``base`` with the loggers the fences read."""
    return log4j2_yaml(base) if log4j2 else log4j_properties(base, fetcher_trace)
