"""Named faults on a stopped broker's files: what the harness writes into them, as a rule.

A fault here is something the scenario names and the harness does to a broker's files
(``harness.nemesis.faults``), listed in the run folder; never a value the model computed.
Each rule says what the broker's disk holds afterwards; what the broker makes of it when it
starts again is ``broker.start`` (Kafka's log recovery and checkpoint reading).
"""

from __future__ import annotations

from reference_model.broker import OK, Outcome, truncate
from reference_model.events import Event
from reference_model.kinds import handles
from reference_model.state import Config, PartitionState, with_replica


@handles("stale_checkpoint")
def stale_checkpoint(cfg: Config, st: PartitionState, ev: Event) -> Outcome:
    """A named fault: the replication-offset-checkpoint file holds ``ev.value``."""
    rep = st.replicas[ev.replica]
    return with_replica(st, ev.replica, rep._replace(checkpoint_hw=ev.value)), OK


@handles("torn_write")
def torn_write(cfg: Config, st: PartitionState, ev: Event) -> Outcome:
    """A named fault: broker ``ev.replica`` is down and the last batch of its log is torn.

    What a power cut in the middle of a write leaves: the active segment ends with part of
    its last batch (a torn sector). Kafka finds it at the next start, since a broker that
    died has no clean-shutdown marker: log recovery (0.10.2 ``Log.recoverLog``, 3.x/4.x
    ``LogLoader.recoverLog``) runs ``LogSegment.recover``, which reads the segment's batches
    through ``FileRecords.batches`` (``FileLogInputStream.nextBatch`` yields nothing for a
    batch whose size field runs past the end of the file), and cuts the segment to the
    bytes of the complete batches (``FileRecords.truncateTo(validBytes)``). So the broker
    restarts one batch shorter; the HW it reads from replication-offset-checkpoint is then
    clamped to that LEO (``broker.start``). hwchaos writes one record per batch, so the
    batch is the last record. Whatever the broker wrote last, torn means it died unclean:
    no clean-shutdown marker (KIP-966 sees an unclean shutdown), as after ``power_loss``.

    A running broker's files are not torn (the fault is a power cut's): the step does
    nothing then, and nothing to an empty log.
    """
    i = ev.replica
    rep = st.replicas[i]
    name = cfg.brokers[i]
    if rep.alive:
        return st, f"{name} is running: a torn write needs it down (crash or power_loss first)"
    if not rep.log:
        return st, f"{name}'s log is empty: nothing to tear"
    torn = rep.log[-1].record
    rep = truncate(rep, len(rep.log) - 1)
    if cfg.generation.unclean_shutdown_detection:
        rep = rep._replace(unclean_stop=True)  # the harness removes .kafka_cleanshutdown
    return with_replica(st, i, rep), f"last batch ({torn}) torn: recovery drops it"
