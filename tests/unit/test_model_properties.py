"""Random event sequences never break the model's own consistency (hypothesis)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from reference_model.events import Event
from reference_model.kinds import KINDS
from reference_model.profiles import GENERATIONS, generation
from reference_model.state import NO_LEADER, Config, PartitionState, initial_state
from reference_model.transitions import apply

KIND_NAMES = sorted(k for k in KINDS if k != "produce")
# Release profiles whose rules the era aliases lack (backports, KRaft, ELR, KAFKA-15583).
PROFILES = ["2.0.1", "3.7.1", "3.3.1-kraft", "4.0.0", "4.0.0-elr"]


@st.composite
def scripts(draw: st.DrawFn) -> tuple[Config, list[Event]]:
    n = draw(st.integers(2, 4))
    cfg = Config(
        tuple("ABCD"[:n]),
        generation(draw(st.sampled_from([*GENERATIONS, *PROFILES]))),
        acks=draw(st.sampled_from(["0", "1", "all"])),
        min_insync=draw(st.integers(1, n)),
        unclean=draw(st.booleans()),
    )
    events = []
    for k in range(draw(st.integers(1, 60))):
        if draw(st.integers(0, 3)) == 0:
            to = draw(st.integers(-1, n - 1))
            events.append(Event("produce", replica=to, record=f"r{k}"))
            continue
        kind = draw(st.sampled_from(KIND_NAMES))
        hold = frozenset(draw(st.sets(st.integers(0, n - 1), max_size=1)))
        events.append(
            Event(
                kind,
                replica=draw(st.integers(0, n - 1)),
                value=draw(st.integers(0, 3)) if kind == "stale_checkpoint" else -1,
                hold=hold,
                unclean=draw(st.booleans()) if kind == "elect" else False,
            )
        )
    return cfg, events


def check(cfg: Config, prev: PartitionState, s: PartitionState) -> None:
    ctrl = s.controller
    assert ctrl.epoch >= prev.controller.epoch, "controller epoch went backwards"
    if ctrl.leader != NO_LEADER:
        assert ctrl.leader in ctrl.isr, "leader outside the ISR"
    if cfg.generation.elr:  # KIP-966: ELR and ISR are disjoint; an empty ISR only with ELR
        assert not ctrl.elr & ctrl.isr, "replica both in ISR and ELR"
        if ctrl.elr:
            assert len(ctrl.isr) < cfg.min_insync, "ELR kept while ISR >= min.insync.replicas"
    else:
        if cfg.generation.kraft:  # PartitionChangeBuilder never empties the ISR without ELR
            assert ctrl.isr, "ISR emptied without ELR"
        assert not ctrl.elr and not ctrl.last_known_elr, "ELR outside KIP-966"
    seen = set()
    for rep in s.replicas:
        assert rep.hw >= 0, "HW below 0"
        if cfg.generation.hw_in_log:
            # Before 2.4 (rule hw_in_log, PR #7055) Log.truncateTo left a follower's HW where
            # it was until the next Fetch answer (min(leader HW, LEO)): HW above the LEO is
            # Kafka's own state there, found by this property on the hw profile (a follower's
            # out-of-range truncation after an unclean election), so it is checked from 2.4.
            assert rep.hw <= rep.leo, "HW above the LEO (2.4 on: truncation clamps it)"
        assert rep.flushed <= rep.leo, "recovery point beyond LEO"
        starts = [o for _, o in rep.epochs]
        eps = [e for e, _ in rep.epochs]
        assert eps == sorted(set(eps)), "epochs not strictly increasing"
        assert starts == sorted(starts), "epoch start offsets decrease"
        assert all(o <= rep.leo for o in starts), "epoch starts beyond LEO"
        g = cfg.generation
        if not g.epoch_in_log:
            assert rep.epochs == (), "pre-0.11 replicas keep no epoch cache"
        elif g.truncate_cleans_epoch_cache or not g.epoch_cache_replaces:
            # From KAFKA-7415 until KAFKA-10706 Kafka itself could leave the cache naming no
            # epoch for the start of the log (a no-op truncation kept an entry of an epoch
            # led without appending, which the next older batch then replaced, (0, 0)
            # included): tests/unit/test_profiles.py::test_kafka_10706_boundary.
            log_epochs = [e.epoch for e in rep.log]
            assert log_epochs == sorted(log_epochs), "batch epochs decrease along the log"
            for off, entry in enumerate(rep.log):  # the cache maps every offset to its epoch
                owner = max((e for e, o in rep.epochs if o <= off), default=None)
                assert owner == entry.epoch, f"cache says epoch {owner} at {off}"
        seen.update(e.record for e in rep.log)
    produced = {r for w in s.writes for r in [w.record]}
    assert seen <= produced, "a replica holds a record nobody produced"
    for w in s.writes:
        if w.status == "acked" and cfg.acks == "all":
            assert w.offset >= 0


@settings(max_examples=300, deadline=None)
@given(scripts())
def test_random_sequences_keep_model_consistent(script: tuple[Config, list[Event]]) -> None:
    cfg, events = script
    s = initial_state(cfg, 0)
    for ev in events:
        nxt, note = apply(cfg, s, ev)
        assert isinstance(note, str)
        check(cfg, s, nxt)
        s = nxt


@settings(max_examples=100, deadline=None)
@given(scripts())
def test_model_is_deterministic(script: tuple[Config, list[Event]]) -> None:
    cfg, events = script
    a = b = initial_state(cfg, 0)
    for ev in events:
        a, _ = apply(cfg, a, ev)
        b, _ = apply(cfg, b, ev)
    assert a == b and hash(a) == hash(b)
