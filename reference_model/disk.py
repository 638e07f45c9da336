"""Named faults on a stopped broker's files: what the harness writes into them, as a rule.

A fault here is something the scenario names and the harness does to a broker's files
(``harness.nemesis.faults``), listed in the run folder; never a value the model computed.
Each rule says what the broker's disk holds afterwards; what the broker makes of it when it
starts again is ``broker.start`` (Kafka's log recovery and checkpoint reading).
"""

from __future__ import annotations

from reference_model.broker import OK, Outcome
from reference_model.events import Event
from reference_model.kinds import handles
from reference_model.state import Config, PartitionState, with_replica


@handles("stale_checkpoint")
def stale_checkpoint(cfg: Config, st: PartitionState, ev: Event) -> Outcome:
    """A named fault: the replication-offset-checkpoint file holds ``ev.value``."""
    rep = st.replicas[ev.replica]
    return with_replica(st, ev.replica, rep._replace(checkpoint_hw=ev.value)), OK
