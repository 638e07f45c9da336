"""What a state means: lost acknowledged writes, divergent offsets, invariant violations.

Definitions are docs/background.md's "What counts as lost": a write is lost when it was
acknowledged and the partition's final leader does not hold it at the acknowledged offset.
When the partition is offline the replica a clean election would pick when it returns (the
first ISR member; under KIP-966 with an empty ISR, the first ELR member) stands in for the
leader; with neither, nothing can be read.
"""

from __future__ import annotations

from reference_model.state import ACKED, NO_LEADER, Config, PartitionState, Replica


def effective_leader(st: PartitionState) -> int:
    """The replica consumers read from now, or would after a clean election."""
    ctrl = st.controller
    if ctrl.leader != NO_LEADER:
        return ctrl.leader
    if ctrl.isr:
        return min(ctrl.isr)
    return min(ctrl.elr) if ctrl.elr else NO_LEADER  # KIP-966: an ELR member may lead


def _holds(rep: Replica, offset: int, record: str) -> bool:
    return 0 <= offset < len(rep.log) and rep.log[offset].record == record


def lost_acked(st: PartitionState) -> list[str]:
    """Acknowledged records the effective leader does not hold at their offset."""
    lead = effective_leader(st)
    out = []
    for w in st.writes:
        if w.status == ACKED and (
            lead == NO_LEADER or not _holds(st.replicas[lead], w.offset, w.record)
        ):
            out.append(w.record)
    return out


def divergent_offsets(st: PartitionState) -> list[int]:
    """Offsets at which two replicas hold different records."""
    out = []
    longest = max(len(r.log) for r in st.replicas)
    for off in range(longest):
        seen = {r.log[off].record for r in st.replicas if off < len(r.log)}
        if len(seen) > 1:
            out.append(off)
    return out


def outcomes(cfg: Config, st: PartitionState) -> list[str]:
    """Results beyond loss and divergence that a verdict must name."""
    out = []
    if st.controller.leader == NO_LEADER:
        out.append("offline")
    for name, rep in zip(cfg.brokers, st.replicas, strict=True):
        if rep.halted:
            out.append(f"broker_halted:{name}")
    return out


def durability_checked(cfg: Config) -> bool:
    """Settings under which Kafka *promises* no acknowledged write is lost.

    Informational (``hwchaos advise`` says whether a loss breaks a promise or is the
    settings' documented price); the explorer judges ``acked_lost`` under every setting,
    since an acks=1 write lost to a leader crash is just as lost (issue 21).
    """
    return cfg.acks == "all" and cfg.min_insync >= 2 and not cfg.unclean


def violations(cfg: Config, prev: PartitionState | None, st: PartitionState) -> list[str]:
    """Invariants the explorer checks after every transition ``prev -> st``.

    - ``acked_lost``: every acknowledged write is on the current leader at its offset,
      whatever the settings (acks=1 and unclean election included: the loss is real even
      where Kafka does not promise otherwise).
    - ``replicas_disagree_below_hw``: two live replicas that are not waiting to truncate hold
      the same records below the smaller of their HWs.
    - ``leader_missing_committed``: a cleanly elected new leader holds everything the old
      leader had committed (below its HW).
    """
    out = []
    ctrl = st.controller
    if ctrl.leader != NO_LEADER:
        lead = st.replicas[ctrl.leader]
        for w in st.writes:
            if w.status == ACKED and not _holds(lead, w.offset, w.record):
                out.append("acked_lost")
                break
    settled = [r for r in st.replicas if r.alive and not r.needs_truncation]
    for a in range(len(settled)):
        for b in range(a + 1, len(settled)):
            ra, rb = settled[a], settled[b]
            low = min(ra.hw, rb.hw)
            if ra.log[:low] != rb.log[:low] and _records(ra, low) != _records(rb, low):
                out.append("replicas_disagree_below_hw")
                break
        else:
            continue
        break
    if (
        prev is not None
        and not cfg.unclean
        and ctrl.leader != NO_LEADER
        and prev.controller.leader not in (NO_LEADER, ctrl.leader)
    ):
        old = prev.replicas[prev.controller.leader]
        new = st.replicas[ctrl.leader]
        if _records(new, old.hw) != _records(old, old.hw):
            out.append("leader_missing_committed")
    return out


def _records(rep: Replica, upto: int) -> tuple[str, ...]:
    return tuple(e.record for e in rep.log[:upto])
