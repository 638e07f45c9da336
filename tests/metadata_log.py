"""The KRaft controller's decisions on brokers, read from its metadata log, for broker tests.

What a test asserts about fencing must come from the controller itself: its
``__cluster_metadata`` log holds every registration and every fence or unfence it decided
(``RegisterBrokerRecord``; ``BrokerRegistrationChangeRecord.Fenced`` 1 / -1; before
metadata.version 3.3-IV2 ``FenceBrokerRecord`` / ``UnfenceBrokerRecord``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harness.readback.metadata_records import read_metadata_log


def broker_decisions(log_dir: Path, schemas: Any) -> list[tuple[int, int, int, str]]:
    """(offset, broker, epoch, "registered" | "fenced" | "unfenced") in log order."""
    out = []
    for rec in read_metadata_log(log_dir, schemas):
        d = rec.data
        broker, epoch = d.get("BrokerId", d.get("Id")), d.get("BrokerEpoch", d.get("Epoch"))
        if rec.name == "RegisterBrokerRecord":
            what = "registered"
        elif rec.name == "FenceBrokerRecord" or (
            rec.name == "BrokerRegistrationChangeRecord" and d.get("Fenced") == 1
        ):
            what = "fenced"
        elif rec.name == "UnfenceBrokerRecord" or (
            rec.name == "BrokerRegistrationChangeRecord" and d.get("Fenced") == -1
        ):
            what = "unfenced"
        else:
            continue
        out.append((rec.offset, int(broker), int(epoch), what))
    return out
