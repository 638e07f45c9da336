"""Version profiles: name resolution, era agreement, and one ordering per rule boundary.

Each boundary test plays one ordering on the last release without the rule and the first
release with it, asserts the outcome on each side, and checks that switching only that rule
off in the newer profile gives back the older outcome (so the difference is the rule's).
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from harness.cli import main as cli_main
from harness.generator.scenarios import SCENARIO_DIR, catalogue, load_scenario
from reference_model.events import Event
from reference_model.profiles import (
    GENERATIONS,
    Generation,
    generation,
    in_release,
    parse_version,
    with_rule,
)
from reference_model.rules import PREVENTION_RULES, RULES
from reference_model.run import run_scenario
from reference_model.scenario import Scenario
from reference_model.transitions import apply

OUTCOME = (
    "replicas",
    "hw",
    "leo",
    "epochs",
    "checkpoint_hw",
    "leader",
    "leader_epoch",
    "isr",
    "elr",
    "last_known_elr",
    "writes",
    "lost_acked",
    "divergent_offsets",
    "outcomes",
)


def outcome(scenario: Scenario, gen: Generation | str) -> dict[str, Any]:
    j = run_scenario(scenario, gen).to_json()
    return {k: j[k] for k in OUTCOME}


def ordering(
    events: list[Event], brokers: int = 2, acks: str = "1", min_insync: int = 1
) -> Scenario:
    names = tuple("ABCD"[:brokers])
    return Scenario(
        name="boundary",
        source="boundary",
        description="",
        fixed_by="",
        brokers=names,
        leader=0,
        acks=acks,
        min_insync=min_insync,
        unclean=False,
        steps=tuple(events),
    )


def E(kind: str, replica: int = -1, record: str = "") -> Event:
    return Event(kind, replica, record)


A, B, C, D = 0, 1, 2, 3


def cat(name: str) -> Scenario:
    return load_scenario(SCENARIO_DIR / f"{name}.yaml")


# ----------------------------------------------------------------------- resolution


@pytest.mark.parametrize(
    ("name", "mode", "has", "lacks"),
    [
        ("hw", "zk", set(), {"epoch_truncation"}),
        ("kip320", "zk", {"fencing", "assign_epoch_on_leader"}, {"hw_needs_min_isr", "kraft"}),
        ("kraft", "kraft", {"kraft", "no_epoch_bump_on_isr_shrink"}, {"elr"}),
        ("kraft-elr", "kraft", {"elr", "unclean_shutdown_detection"}, set()),
        ("0.10.0.0", "zk", set(), {"epoch_in_log"}),
        ("0.10.2.1", "zk", set(), {"epoch_in_log"}),
        ("0.11.0.3", "zk", {"epoch_truncation"}, {"epoch_walkback"}),
        ("2.0.0", "zk", {"epoch_walkback"}, {"assign_epoch_on_leader"}),
        ("2.0.1", "zk", {"assign_epoch_on_leader", "isr_join_epoch_start"}, {"fencing"}),
        ("2.1.1", "zk", {"fencing", "out_of_range_truncates"}, {"kraft"}),
        ("2.8.2", "zk", {"fencing"}, {"hw_needs_min_isr"}),
        ("3.3.1", "zk", {"fencing"}, {"kraft"}),
        ("3.3.1-kraft", "kraft", {"kraft"}, {"no_epoch_bump_on_isr_shrink"}),
        ("3.6.0-kraft", "kraft", {"no_epoch_bump_on_isr_shrink"}, {"hw_needs_min_isr"}),
        ("3.7.1", "zk", {"hw_needs_min_isr"}, {"kraft"}),
        ("3.8.1-kraft", "kraft", {"hw_needs_min_isr"}, {"kraft_unclean_from_config"}),
        ("3.9.0-kraft", "kraft", {"kraft_unclean_from_config"}, {"elr"}),
        ("4.0.0", "kraft", {"kraft_unclean_from_config"}, {"elr"}),
        ("4.0.0-elr", "kraft", {"elr", "unclean_shutdown_detection"}, set()),
        ("4.1.0", "kraft", {"elr"}, set()),
        ("4.1.x", "kraft", {"elr"}, set()),
        ("4.1.0-no-elr", "kraft", set(), {"elr"}),
        ("3.3.1-ibp0.10", "zk", set(), {"epoch_in_log", "epoch_truncation", "fencing"}),
        ("2.8.2-ibp2.0", "zk", {"epoch_walkback"}, {"fencing"}),
    ],
)
def test_names_resolve_to_profiles(name: str, mode: str, has: set[str], lacks: set[str]) -> None:
    g = generation(name)
    assert g.mode == mode
    assert has <= g.rules, has - g.rules
    assert not lacks & g.rules, lacks & g.rules
    for rule in RULES:  # flags and rule set agree
        assert getattr(g, rule) == (rule in g.rules)


@pytest.mark.parametrize(
    ("name", "says"),
    [
        ("kip999", "unknown protocol or Kafka version"),
        ("9.9.9", "not a Kafka release"),
        ("2.9.0", "not a Kafka release"),
        ("0.9.0.1", "not a Kafka release"),
        ("2.8", "not a Kafka release"),
        ("4.0.0-zk", "no ZooKeeper mode"),
        ("3.2.3-kraft", "KRaft mode is modelled from 3.3"),
        ("3.7.1-elr", "ELR needs KRaft"),
        ("3.9.0-kraft-elr", "ELR is available from 4.0"),
        ("4.0.0-ibp0.10", "ZooKeeper mode only"),
        ("3.3.1-foo", "unknown suffix"),
    ],
)
def test_bad_names_fail_in_one_line_listing_the_forms(name: str, says: str) -> None:
    with pytest.raises(ValueError) as exc:
        generation(name)
    msg = str(exc.value)
    assert says in msg and "\n" not in msg
    assert "3.3.1-kraft" in msg and "kip320" in msg  # lists the valid forms


def test_backports_count_from_the_bug_fix_release() -> None:
    r = RULES["assign_epoch_on_leader"]  # KAFKA-7415: 2.0.1 and 2.1.0
    assert not in_release(r, parse_version("1.1.1"))
    assert not in_release(r, parse_version("2.0.0"))
    assert in_release(r, parse_version("2.0.1"))
    assert in_release(r, parse_version("2.1.0"))
    assert in_release(r, parse_version("3.9.0"))
    assert parse_version("0.10.2.1") < parse_version("0.11.0.0") < parse_version("1.0.0")


# Releases that an era alias stands for agree with it on every catalogue scenario.
ERA_RELEASES = [
    ("0.10.0.0", "hw"),
    ("0.10.2.1", "hw"),
    ("0.11.0.3", "kip101"),
    ("1.1.1", "kip101"),
    ("2.0.0", "kip279"),
    ("2.1.1", "kip320"),
    ("2.8.2", "kip320"),
    ("3.3.1", "kip320"),
    ("3.6.2", "kip320"),
    ("4.0.0", "kraft"),
    ("4.0.0-elr", "kraft-elr"),
]


# Era members that differ from their alias in the leader-epoch caches only: KAFKA-10706
# (2.6.1/2.7.0) cleans a cache entry the kip320 era (from 2.1) keeps; logs, HWs, losses and
# divergence agree (test_kafka_10706_boundary shows the difference).
CACHE_ONLY = {("2.8.2", "kip320"), ("3.3.1", "kip320"), ("3.6.2", "kip320")}


@pytest.mark.parametrize(("release", "era"), ERA_RELEASES)
def test_release_agrees_with_its_era_alias(release: str, era: str) -> None:
    for path in catalogue():
        s = load_scenario(path)
        got, want = outcome(s, release), outcome(s, era)
        if (release, era) in CACHE_ONLY:
            got, want = dict(got, epochs=None), dict(want, epochs=None)
        assert got == want, path.stem


def test_ibp_pinned_modern_broker_replicates_like_hw() -> None:
    """3.3.1 with inter.broker.protocol.version 0.10: the epoch rules are off; only the
    broker-code fixes that need no new protocol (KAFKA-7128/7164/7414, hw_in_log) and the
    controller's (KAFKA-5642) remain, and they change nothing in the pre-KRaft catalogue's
    outcomes."""
    g = generation("3.3.1-ibp0.10")
    behaviour = g.rules - set(PREVENTION_RULES)
    assert behaviour == {
        "controller_queue",  # ZooKeeper mode on every release, as in hw
        "isr_join_epoch_start",
        "truncate_on_missed_epoch",
        "out_of_range_truncates",
        "hw_in_log",  # broker code (2.4): a truncation lowers the HW, whatever the IBP
        "keep_last_isr",  # controller code (1.1, KAFKA-5642), whatever the IBP
    }
    assert "caught_up_stays_in_isr" in g.rules  # KAFKA-7152 is broker code: no IBP needed
    for path in catalogue():
        if path.stem.startswith(("kip966", "kraft")):
            continue
        s = load_scenario(path)
        stopped = run_scenario(s, g).prevented
        if stopped is not None:
            assert "[caught_up_stays_in_isr:" in stopped[1], path.stem
            continue
        assert outcome(s, g) == outcome(s, "hw"), path.stem


def test_era_aliases_are_unchanged() -> None:
    assert list(GENERATIONS) == ["hw", "kip101", "kip279", "kip320"]
    assert generation("kip320") is GENERATIONS["kip320"]


# ---------------------------------------------------------------- rule boundaries


def test_kip101_boundary() -> None:
    s = cat("kip101-scenario1")
    assert outcome(s, "0.10.2.1")["lost_acked"] == ["m2"]
    assert outcome(s, "0.11.0.0")["lost_acked"] == []
    assert outcome(s, with_rule(generation("0.11.0.0"), "epoch_truncation", False))[
        "lost_acked"
    ] == ["m2"]
    s2 = cat("kip101-scenario2")
    assert {e["epoch"] for e in outcome(s2, "0.10.2.1")["replicas"]["A"]} == {-1}  # format v1
    assert min(e["epoch"] for e in outcome(s2, "0.11.0.0")["replicas"]["A"]) >= 0


def test_kip279_boundary() -> None:
    s = cat("kip279-fast-leader-change")
    assert outcome(s, "1.1.1")["divergent_offsets"] == [1]
    assert outcome(s, "2.0.0")["divergent_offsets"] == []
    off = with_rule(generation("2.0.0"), "epoch_walkback", False)
    assert outcome(s, off)["divergent_offsets"] == [1]


def test_kafka_5642_boundary() -> None:
    """kip279-fast-leader-change step 9: B, the last ISR member, fails with unclean election
    enabled. From 1.1 the ZooKeeper controller keeps it in the ISR (seen on real 2.1.1 and
    3.3.1: leader -1, isr [B]); 0.10.2.1 empties the ISR, as it still does (and every
    release does) with unclean election disabled."""
    s = cat("kip279-fast-leader-change")

    def isr_after_step_9(gen: Generation | str) -> list[str]:
        run = run_scenario(s, gen)
        return sorted(s.brokers[i] for i in run.steps[9].state.controller.isr)

    assert isr_after_step_9("0.10.2.1") == [] and isr_after_step_9("1.0.2") == []
    assert isr_after_step_9("1.1.0") == ["B"] and isr_after_step_9("3.3.1") == ["B"]
    off = with_rule(generation("2.1.1"), "keep_last_isr", False)
    assert isr_after_step_9(off) == []
    assert outcome(s, "1.0.2")["lost_acked"] == outcome(s, "1.1.0")["lost_acked"]


def test_kafka_7415_boundary() -> None:
    """A new leader caches (epoch, LEO): leader-epoch-checkpoint of a leader that never
    wrote in its epoch differs (2.0.0 vs 2.0.1)."""
    s = cat("kip101-scenario1")
    assert outcome(s, "2.0.0")["epochs"]["A"] == [[0, 0]]
    assert outcome(s, "2.0.1")["epochs"]["A"] == [[0, 0], [2, 2]]
    off = with_rule(generation("2.0.1"), "assign_epoch_on_leader", False)
    assert outcome(s, off)["epochs"]["A"] == [[0, 0]]


def test_kafka_7415_cache_boundary() -> None:
    """controller-queue-two-leader-changes: B led epoch 1 without appending (cache (1, 1)),
    then fetched m2 of epoch 0 at offset 1 after a no-op truncation to 1. From 2.0.1
    (KAFKA-7415 ``truncateAndAppend``) that batch replaces the conflicting entries, (0, 0)
    included: B ends with [(0, 1)]; before, the older epoch was ignored: [(0, 0), (1, 1)]
    (2.0.0 has no (1, 1) at all: no entry on election). Off on 2.1.1 gives that back."""
    s = cat("controller-queue-two-leader-changes")
    assert outcome(s, "2.1.1")["epochs"]["B"] == [[0, 1]]
    off = with_rule(generation("2.1.1"), "epoch_cache_replaces", False)
    assert outcome(s, off)["epochs"]["B"] == [[0, 0], [1, 1]]


def test_kafka_10706_boundary() -> None:
    """The same ordering: from 2.6.1/2.7.0 (KAFKA-10706) the no-op truncation to B's LEO 1
    still drops (1, 1), so m2's epoch 0 extends (0, 0): B ends with [(0, 0)], what a real
    3.3.1 broker's leader-epoch-checkpoint held in this run; 2.6.0 keeps the KAFKA-7415
    outcome [(0, 1)]. Off on 2.7.0 gives that back."""
    s = cat("controller-queue-two-leader-changes")
    assert outcome(s, "2.6.0")["epochs"]["B"] == [[0, 1]]
    assert outcome(s, "2.6.1")["epochs"]["B"] == [[0, 0]]
    assert outcome(s, "2.7.0")["epochs"]["B"] == [[0, 0]]
    assert outcome(s, "3.3.1")["epochs"]["B"] == [[0, 0]]
    off = with_rule(generation("2.7.0"), "truncate_cleans_epoch_cache", False)
    assert outcome(s, off)["epochs"]["B"] == [[0, 1]]


KAFKA_7128 = [
    E("produce", record="m1"),
    *(E("fetch", f) for f in (B, C, D, B, C, D)),  # m1 committed everywhere
    E("crash", C),
    E("detect", C),  # ISR {A, B, D}
    E("produce", record="m2"),
    E("fetch", B),  # B and D copy m2
    E("fetch", D),
    E("fetch_request", B),  # A sees B and D at 2: HW 2, m2 acknowledged; B's HW stays 1
    E("fetch_request", D),
    E("crash", A),
    E("detect", A),  # B leads from offset 2 with HW 1 (it does not know D's LEO yet)
    E("restart", C),  # C [m1] follows B
    E("fetch_request", C),  # fetch offset 1 >= HW 1, but < B's epoch start 2
    E("crash", B),
    E("detect", B),  # the first live ISR member is elected: C if it joined, else D
]


def test_kafka_7128_boundary() -> None:
    s = ordering(KAFKA_7128, brokers=4, acks="all", min_insync=2)
    before, after = outcome(s, "2.0.0"), outcome(s, "2.0.1")
    assert before["lost_acked"] == ["m2"] and before["leader"] == "C"
    assert after["lost_acked"] == [] and after["leader"] == "D"
    off = with_rule(generation("2.0.1"), "isr_join_epoch_start", False)
    assert outcome(s, off)["lost_acked"] == ["m2"]


KAFKA_7164 = [
    E("produce", record="m1"),
    E("fetch", B),
    E("isr_shrink", B),  # B holds m1 but leaves the ISR
    E("pause", B),  # B hears no LeaderAndIsr from here: they queue for it
    E("power_loss", A),  # m1 unflushed on A
    E("detect", A),  # offline, epoch 1
    E("restart", A),  # A leads again, epoch 2, empty log
    # the queue dies with the controller (controller_queue): B misses epoch 1
    E("controller_failover", B),
    E("resume", B),  # B sees leader A (unchanged) at epoch 2
    E("produce", record="m2"),
    E("fetch", B),
]


def test_kafka_7164_boundary() -> None:
    s = ordering(KAFKA_7164)
    # Without the failover B hears both queued LeaderAndIsr (offline, then A at epoch 2)
    # and truncates on every release: the miss needs the controller's queue to be lost.
    queued = ordering([e for e in KAFKA_7164 if e.kind != "controller_failover"])
    assert outcome(queued, "2.0.0")["divergent_offsets"] == []
    assert outcome(s, "2.0.0")["divergent_offsets"] == [0]  # B kept m1 under A's m2
    assert outcome(s, "2.0.1")["divergent_offsets"] == []
    off = with_rule(generation("2.0.1"), "truncate_on_missed_epoch", False)
    assert outcome(s, off)["divergent_offsets"] == [0]


KAFKA_7414 = [
    E("produce", record="m1"),
    E("fetch", B),
    E("fetch", B),
    E("flush", A),
    E("produce", record="m2"),
    E("fetch", B),
    E("fetch", B),
    E("power_loss", A),  # A loses m2
    E("restart", A),  # the controller never noticed: A leads again with [m1]
    E("fetch", B),  # B fetches at 2 > leader LEO 1
]


def test_kafka_7414_boundary() -> None:
    s = ordering(KAFKA_7414)
    assert outcome(s, "2.0.1")["outcomes"] == ["broker_halted:B"]
    after = outcome(s, "2.1.0")
    assert after["outcomes"] == [] and after["leo"]["B"] == 1
    off = with_rule(generation("2.1.0"), "out_of_range_truncates", False)
    assert outcome(s, off)["outcomes"] == ["broker_halted:B"]


def test_kafka_10554_boundary() -> None:
    """kip101-scenario1 in KRaft 3.x, which ignores unclean.leader.election.enable: before
    2.8 A only truncates and stays out of the ISR, so B's fencing leaves the partition
    offline; from 2.8 the truncation rides on a Fetch that puts A back in the ISR, and A is
    elected cleanly (seen on real 3.3.1-kraft brokers)."""
    s = cat("kip101-scenario1")
    assert outcome(s, "3.3.1-kraft")["leader"] == "A"
    off = with_rule(generation("3.3.1-kraft"), "truncate_in_fetch", False)
    assert outcome(s, off)["leader"] is None


def test_kip320_boundary() -> None:
    s = cat("kip320-zombie-follower")
    assert outcome(s, "2.0.1")["lost_acked"] == ["m3"]
    assert outcome(s, "2.1.0")["lost_acked"] == []
    assert outcome(s, with_rule(generation("2.1.0"), "fencing", False))["lost_acked"] == ["m3"]


KAFKA_15583 = [
    E("produce", record="m1"),
    E("fetch", B),
    E("fetch", B),
    E("crash", B),
    E("detect", B),  # ISR {A} < min.insync.replicas 2
    E("produce", record="m2"),  # acks=1: appended and acknowledged
]


@pytest.mark.parametrize(
    ("version", "window"),
    [
        ("2.7.2", False),  # no truncation on fetch yet (KAFKA-10554, 2.8)
        ("2.8.2", True),
        ("3.3.1", True),
        ("3.3.1-kraft", True),
        ("3.4.0", True),
        ("3.4.1", False),  # KAFKA-14704 backported
        ("3.5.0", False),
        ("4.0.0", False),
    ],
)
def test_kafka_14704_boundary(version: str, window: bool) -> None:
    """jepsen-2013-zombie-leader, step 9: ex-leader A (divergent m2) fetches from B. Before
    the fix A applies B's HW 2 before truncating to 1, so m2 is readable from A meanwhile;
    the state after the step is the same on both sides."""
    sc = cat("jepsen-2013-zombie-leader")
    r = run_scenario(sc, version)
    step = r.steps[9]
    noted = [n for n in step.notes if "KAFKA-14704" in n]
    assert bool(noted) == window, step.notes
    if window:
        assert "['m2'] readable from A" in noted[0]
    a = step.state.replicas[0]
    assert [e.record for e in a.log] == ["m1", "m3"] and a.hw <= 2


@pytest.mark.parametrize("mode", ["", "-kraft"])
def test_kafka_15583_boundary(mode: str) -> None:
    s = ordering(KAFKA_15583, acks="1", min_insync=2)
    assert outcome(s, f"3.6.2{mode}")["hw"]["A"] == 2
    assert outcome(s, f"3.7.0{mode}")["hw"]["A"] == 1  # the HW waits for the ISR to grow
    off = with_rule(generation(f"3.7.0{mode}"), "hw_needs_min_isr", False)
    assert outcome(s, off)["hw"]["A"] == 2


def test_kraft_restart_without_detect() -> None:
    """A bounce the controller never noticed: ZooKeeper keeps A as leader (a failed-over
    controller cannot know A bounced). KRaft refuses the new registration until A's old
    session expired and fenced A, so the step is prevented (rule
    ``registration_needs_expired_session``); the transition itself, applied anyway, ends A's
    previous incarnation first, so B takes over."""
    s = ordering([E("produce", record="m1"), E("fetch", B), E("fetch", B), E("crash", A)])
    s = ordering([*s.steps, E("restart", A)])
    zk = outcome(s, "3.3.1")
    assert (zk["leader"], zk["leader_epoch"]) == ("A", 0)
    kraft = run_scenario(s, "3.3.1-kraft")
    assert kraft.prevented is not None and kraft.prevented[0] == 5
    assert "registration_needs_expired_session" in kraft.prevented[1]
    st, _ = apply(kraft.config, kraft.final, E("restart", A))
    assert (st.controller.leader, st.controller.epoch, st.controller.isr) == (B, 1, {B})


def test_kafka_15021_boundary() -> None:
    s = cat("kraft-isr-shrink-epoch")
    assert outcome(s, "3.5.2-kraft")["epochs"]["C"] == [[0, 0], [1, 1]]
    assert outcome(s, "3.6.0-kraft")["epochs"]["C"] == [[0, 0]]
    off = with_rule(generation("3.6.0-kraft"), "no_epoch_bump_on_isr_shrink", False)
    assert outcome(s, off)["epochs"]["C"] == [[0, 0], [1, 1]]
    assert outcome(s, "3.6.0")["epochs"]["C"] == [[0, 0], [1, 1]]  # ZooKeeper mode bumps


def lagging_b_then_unclean() -> Scenario:
    """acks1-unclean-election with m2 written before B leaves the ISR: from 2.1 (KAFKA-7152)
    the catalogue order (shrink while B is caught up, then m2) is prevented."""
    s = cat("acks1-unclean-election")
    steps = [E("produce", record="m1"), E("fetch", B), E("fetch", B), E("produce", record="m2")]
    steps += [E("isr_shrink", B), E("crash", A), E("detect", A)]
    return dataclasses.replace(s, steps=tuple(steps))


def test_kafka_12670_boundary() -> None:
    """Before 3.9 the KRaft controller ignores unclean.leader.election.enable."""
    s = lagging_b_then_unclean()
    assert s.unclean
    before, after = outcome(s, "3.8.1-kraft"), outcome(s, "3.9.0-kraft")
    assert before["leader"] is None and before["lost_acked"] == []
    assert after["leader"] == "B" and after["lost_acked"] == ["m2"]
    assert outcome(s, "3.8.1")["lost_acked"] == ["m2"]  # ZooKeeper mode always honoured it
    off = with_rule(generation("3.9.0-kraft"), "kraft_unclean_from_config", False)
    assert outcome(s, off)["lost_acked"] == []


def test_kip966_boundary() -> None:
    s = cat("kip966-last-replica-standing")
    for no_elr in ("3.9.0-kraft", "4.0.0", "4.1.0-no-elr"):
        assert outcome(s, no_elr)["lost_acked"] == ["m1"], no_elr
    for elr in ("4.0.0-elr", "4.1.0"):
        j = outcome(s, elr)
        assert j["lost_acked"] == [] and j["leader"] == "C", elr
    # Without detecting A's unclean shutdown, A (an ELR member) would be elected empty.
    off = with_rule(generation("4.0.0-elr"), "unclean_shutdown_detection", False)
    j = outcome(s, off)
    assert j["lost_acked"] == ["m1"] and j["leader"] == "A"


def test_elr_empty_isr_keeps_last_known_elr() -> None:
    s = cat("kip966-last-replica-standing")
    steps = run_scenario(s, "4.0.0-elr").to_json()["steps"]
    detect = next(x for x in steps if x["event"] == "detect A")
    assert detect["isr"] == [] and detect["last_known_elr"] == ["A"]
    no_elr = run_scenario(s, "4.0.0").to_json()["steps"]
    detect = next(x for x in no_elr if x["event"] == "detect A")
    assert detect["isr"] == ["A"] and detect["elr"] == []  # last ISR member kept


def test_every_rule_has_a_boundary_test_or_scenario() -> None:
    here = Path(__file__).read_text()
    for r in RULES.values():
        assert r.boundary, r.name
        for ref in r.boundary.split(", "):
            path, _, test = ref.partition("::")
            assert (Path(__file__).resolve().parents[2] / path).exists(), ref
            if test and path.endswith("test_profiles.py"):
                assert f"def {test}(" in here, ref


# ------------------------------------------------------------------------------ CLI


def test_cli_model_kafka_json(capsys: pytest.CaptureFixture[str]) -> None:
    scen = str(SCENARIO_DIR / "kip966-last-replica-standing.yaml")
    assert cli_main(["model", scen, "--kafka", "4.0.0-elr", "--json"]) == 0
    j = json.loads(capsys.readouterr().out)
    assert j["protocol"] == "4.0.0-elr" and j["mode"] == "kraft" and "elr" in j["rules"]
    assert j["lost_acked"] == [] and j["elr"] == [] and j["leader"] == "C"
    assert cli_main(["model", scen, "--kafka", "2.8.2", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["mode"] == "zk"


def test_cli_model_explain_names_rules_and_references(capsys: pytest.CaptureFixture[str]) -> None:
    scen = str(SCENARIO_DIR / "kip966-last-replica-standing.yaml")
    assert cli_main(["model", scen, "--kafka", "4.0.0-elr", "--explain", "--json"]) == 0
    j = json.loads(capsys.readouterr().out)
    assert {r["rule"] for r in j["profile"]} == set(j["rules"])
    by_event = {s["event"]: {r["rule"]: r for r in s["rules"]} for s in j["explain"]}
    assert by_event["restart A"]["unclean_shutdown_detection"]["change"].startswith("KIP-966")
    assert by_event["restart C"]["elr"]["in_profile"]
    assert cli_main(["model", scen, "--kafka", "4.0.0", "--explain"]) == 0
    text = capsys.readouterr().out
    assert "would differ with elr (KIP-966" in text
    assert "KAFKA-15021" in text


def test_cli_rejects_unknown_version_in_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    scen = str(SCENARIO_DIR / "kip966-last-replica-standing.yaml")
    with pytest.raises(SystemExit) as exc:
        cli_main(["model", scen, "--kafka", "5.0.0"])
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert "not a Kafka release" in err and "5.0.0" in err


def elect(replica: int, unclean: bool) -> Event:
    return Event("elect", replica, unclean=unclean)


def test_kraft_unclean_election_only_through_elect_leaders() -> None:
    """3.3-3.8 KRaft: the config is ignored, ElectLeaders UNCLEAN (kafka-leader-election.sh
    --election-type unclean) elects a live replica of a leaderless partition."""
    steps = [
        E("produce", record="m1"),
        E("fetch", B),
        E("fetch", B),
        E("crash", B),
        E("detect", B),  # ISR {A}
        E("produce", record="m2"),  # acks=1: acknowledged by A alone
        E("crash", A),
        E("detect", A),  # offline, A stays the last ISR member
        E("restart", B),
    ]
    s = ordering(steps)
    offline = outcome(s, "3.3.1-kraft")
    assert offline["leader"] is None and offline["isr"] == ["A"]
    forced = outcome(ordering([*steps, elect(B, True)]), "3.3.1-kraft")
    assert (forced["leader"], forced["isr"], forced["lost_acked"]) == ("B", ["B"], ["m2"])
    # With a leader, ElectLeaders UNCLEAN is ELECTION_NOT_NEEDED: A cannot be elected.
    again = run_scenario(ordering([*steps, elect(B, True), elect(A, True)]), "3.3.1-kraft")
    assert again.prevented is not None and again.prevented[0] == 11
    assert "ELECTION_NOT_NEEDED" in again.prevented[1]
    assert again.to_json()["leader"] == "B"


def test_kraft_preferred_election_moves_leadership_within_the_isr() -> None:
    s = ordering([E("produce", record="m1"), E("fetch", B), E("fetch", B), elect(B, False)])
    j = outcome(s, "4.0.0")
    assert (j["leader"], j["leader_epoch"], j["isr"]) == ("B", 1, ["A", "B"])


def test_hw_in_log_boundary() -> None:
    """kip966-last-replica-standing, C's epoch truncation to 0 at step 13 (``fetch C``) on
    its own (the OffsetsForLeaderEpoch round, no Fetch answer yet): before 2.4 its HW stays
    1, above its LEO 0 (2.1.1 ``ReplicaFetcherThread.truncate`` only warns); from 2.4
    ``Log.truncateTo`` lowers it to 0. Off on 2.4 gives the old behaviour back."""
    from reference_model.broker import offsets_for_leader_epoch

    s = cat("kip966-last-replica-standing")

    def c_after_truncation(g: Generation) -> tuple[int, int]:
        pred = run_scenario(s, g)
        st = pred.steps[12].state  # after `restart C`: C must truncate m1
        assert st.replicas[2].needs_truncation
        st, _ = offsets_for_leader_epoch(pred.config, st, 2)
        c = st.replicas[2]
        return len(c.log), c.hw

    assert c_after_truncation(generation("2.3.1")) == (0, 1)
    assert c_after_truncation(generation("2.4.0")) == (0, 0)
    assert c_after_truncation(with_rule(generation("2.4.0"), "hw_in_log", False)) == (0, 1)
