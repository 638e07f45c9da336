"""Prevention rules (issue 9, ``reference_model.prevention``): steps a version makes impossible.

Each boundary test plays one ordering on the last release without the rule and the first
release with it (or, for rules every release has, on the mode it belongs to and with the rule
switched off), and checks ``RunResult.prevented`` and the JSON. The explorer tests check that
a prevented transition is never taken under the profile explored.
"""

from __future__ import annotations

import json

import pytest

from explorer.search import Bounds, explore
from harness.cli import main as cli_main
from harness.generator.scenarios import SCENARIO_DIR
from reference_model.events import CONTROLLER_NODE, ZOOKEEPER_NODE, Event
from reference_model.prevention import CHECKS, prevented, rule_of
from reference_model.profiles import Generation, generation, with_rule
from reference_model.rules import PREVENTION_RULES, RULES
from reference_model.run import RunResult, run_scenario
from reference_model.scenario import Scenario
from reference_model.state import Config, initial_state
from reference_model.transitions import apply

A, B, C = 0, 1, 2


def E(kind: str, replica: int = -1, record: str = "", unclean: bool = False) -> Event:
    return Event(kind, replica, record, unclean=unclean)


def cut(src: int, *dst: int) -> Event:
    links = frozenset((src, d) for d in dst) | frozenset((d, src) for d in dst)
    return Event("partition", src, links=links)


def ordering(
    events: list[Event], brokers: int = 2, acks: str = "1", unclean: bool = False
) -> Scenario:
    return Scenario(
        name="prevention",
        source="prevention",
        description="",
        fixed_by="",
        brokers=tuple("ABC"[:brokers]),
        leader=0,
        acks=acks,
        min_insync=1,
        unclean=unclean,
        steps=tuple(events),
    )


def play(events: list[Event], gen: str | Generation, brokers: int = 2, **kw: object) -> RunResult:
    return run_scenario(ordering(events, brokers, **kw), gen)  # type: ignore[arg-type]


def rule_at(r: RunResult) -> tuple[int, str] | None:
    return None if r.prevented is None else (r.prevented[0], rule_of(r.prevented[1]))


REPLICATED = [E("produce", record="m1"), E("fetch", B), E("fetch", B)]


# ------------------------------------------------------------------------ the rules


def test_every_prevention_rule_is_checked_and_documented() -> None:
    checked = {RULES[name].prevents for name in PREVENTION_RULES}
    assert all(checked)
    kinds = {k for p in checked for k in p}
    assert kinds <= set(CHECKS)
    for name in PREVENTION_RULES:
        r = RULES[name]
        assert r.change and r.since and r.mirrors and r.boundary, name


@pytest.mark.parametrize("version", ["0.10.2.1", "2.1.1", "3.3.1", "3.3.1-kraft", "4.0.0"])
def test_detect_of_a_running_broker(version: str) -> None:
    """A running broker that reaches ZooKeeper (KRaft: the controller) keeps its session."""
    r = play([*REPLICATED, E("detect", A)], version)
    assert rule_at(r) == (4, "session_expiry_needs_cut")
    assert r.to_json()["leader"] == "A"
    # Dead, paused, or cut from its session node: the controller acts.
    for before in (E("crash", A), E("pause", A)):
        assert play([*REPLICATED, before, E("detect", A)], version).prevented is None
    node = CONTROLLER_NODE if generation(version).kraft else ZOOKEEPER_NODE
    r = play([*REPLICATED, cut(A, node), E("detect", A)], version)
    assert r.prevented is None and r.to_json()["leader"] == "B"
    # The rule, not the transition, refuses it: switched off, the model's no-op remains.
    off = with_rule(generation(version), "session_expiry_needs_cut", False)
    r = play([*REPLICATED, E("detect", A)], off)
    assert r.prevented is None and "session does not expire" in r.steps[-1].notes[0]


def test_unnoticed_restart_next_to_another_dead_broker() -> None:
    """ZooKeeper mode plays an unnoticed restart by a controller failover. Another broker
    that is dead but not noticed still has its registration (its session has not expired),
    so the new controller counts it live and leaves leader and ISR alone: no prevention.
    Played on real 0.10.2.1, 2.1.1 and 3.3.1 (tests/test_failover_brokers.py)."""
    follower_dead = [*REPLICATED, E("fetch", C), E("fetch", C), E("crash", C), E("crash", B)]
    follower_dead += [E("restart", B)]
    for version in ("0.10.2.1", "2.2.2", "2.3.0", "3.3.1"):
        assert play(follower_dead, version, 3).prevented is None
    leader_dead = [*REPLICATED, E("crash", B), E("crash", A), E("restart", B)]
    for version in ("0.10.2.1", "2.2.2", "3.3.1"):
        assert play(leader_dead, version).prevented is None
    # KRaft has no failover route at all (next test).
    assert rule_at(play(leader_dead, "3.3.1-kraft"))[1] == "registration_needs_expired_session"  # type: ignore[index]


@pytest.mark.parametrize("version", ["3.3.1-kraft", "3.8.1-kraft", "4.0.0", "4.0.0-elr"])
def test_kraft_restart_before_the_controller_noticed(version: str) -> None:
    steps = [*REPLICATED, E("crash", A), E("restart", A)]
    r = play(steps, version)
    assert rule_at(r) == (5, "registration_needs_expired_session")
    assert "DuplicateBrokerRegistrationException" in r.prevented[1]  # type: ignore[index]
    assert len(r.steps) == 5  # initial state + the four steps played
    assert play([*steps[:4], E("detect", A), E("restart", A)], version).prevented is None
    # ZooKeeper mode of the same release plays it by a controller failover.
    if version.endswith("-kraft"):
        assert play(steps, version.removesuffix("-kraft")).prevented is None


def test_kip380_counterexample_is_real_on_zookeeper_and_prevented_on_kraft() -> None:
    """The explorer's kip320 counterexample: the leader loses power and restarts before the
    controller noticed. A failed-over ZooKeeper controller keeps A as leader (m1 lost); the
    KRaft controller refuses A's registration until it fenced A."""
    steps = [*REPLICATED, E("power_loss", A), E("restart", A), E("fetch", B)]
    for version in ("2.1.1", "2.2.2", "3.3.1", "kip320"):
        j = play(steps, version, acks="all").to_json()
        assert j["prevented"] is None
        assert (j["leader"], j["lost_acked"]) == ("A", ["m1"]), version
    for version in ("3.3.1-kraft", "4.0.0", "4.0.0-elr"):
        j = play(steps, version, acks="all").to_json()
        assert j["prevented"]["step"] == 5
        assert "[registration_needs_expired_session:" in j["prevented"]["reason"]


def test_kafka_7152_boundary() -> None:
    """From 2.1 a follower the leader knows to be at its LEO never leaves the ISR."""
    steps = [*REPLICATED, E("isr_shrink", B)]
    assert play(steps, "2.0.1").prevented is None
    assert play(steps, "2.0.1").to_json()["isr"] == ["A"]
    r = play(steps, "2.1.0")
    assert rule_at(r) == (4, "caught_up_stays_in_isr")
    off = with_rule(generation("2.1.0"), "caught_up_stays_in_isr", False)
    assert play(steps, off).to_json()["isr"] == ["A"]
    # Behind the leader's LEO (m2 not fetched yet) the shrink is allowed on every release.
    lagging = [*REPLICATED, E("produce", record="m2"), E("isr_shrink", B)]
    for version in ("2.0.1", "2.1.0", "3.3.1", "3.3.1-kraft", "4.0.0"):
        assert play(lagging, version).to_json()["isr"] == ["A"], version
    # The leader's view counts, not the follower's log: B has m1 but A never saw it ask past.
    half = [E("produce", record="m1"), E("fetch", B), E("isr_shrink", B)]
    assert play(half, "2.1.0").prevented is None


def test_kip460_boundary() -> None:
    """Unclean election on demand: ElectLeaders UNCLEAN from 2.4, only without a live leader."""
    offline = [*REPLICATED, E("crash", B), E("detect", B), E("produce", record="m2")]
    offline += [E("crash", A), E("detect", A), E("restart", B), E("elect", B, unclean=True)]
    r = play(offline, "2.3.1")
    assert rule_at(r) == (10, "elect_leaders_unclean")
    on = with_rule(generation("2.3.1"), "elect_leaders_unclean", True)
    assert play(offline, on).prevented is None
    for version in ("2.4.0", "3.3.1", "3.3.1-kraft", "4.0.0"):
        j = play(offline, version).to_json()
        assert j["prevented"] is None, version
        assert (j["leader"], j["lost_acked"]) == ("B", ["m2"]), version
    # With a live leader the answer is ELECTION_NOT_NEEDED on every release.
    led = [*REPLICATED, E("produce", record="m2"), E("isr_shrink", B), E("elect", B, unclean=True)]
    for version in ("0.10.2.1", "2.4.0", "3.3.1", "3.3.1-kraft", "4.0.0"):
        r = play(led, version)
        assert rule_at(r) == (6, "unclean_election_needs_offline"), version
        assert "ELECTION_NOT_NEEDED" in r.prevented[1]  # type: ignore[index]
    # A clean (preferred) election of an ISR member is what every release offers.
    clean = [*REPLICATED, E("elect", B, unclean=True)]
    for version in ("0.10.2.1", "2.1.1", "3.3.1"):
        j = play(clean, version).to_json()
        assert (j["prevented"], j["leader"]) == (None, "B"), version


# ------------------------------------------------------------------ run and JSON


def test_prevented_run_stops_before_the_step_and_says_so_in_json_and_table(
    capsys: pytest.CaptureFixture[str],
) -> None:
    scen = str(SCENARIO_DIR / "kip101-scenario1-kip-text.yaml")
    assert cli_main(["model", scen, "--kafka", "4.0.0", "--json"]) == 0
    j = json.loads(capsys.readouterr().out)
    assert j["prevented"]["step"] == 9
    assert j["prevented"]["reason"].startswith("restart A before the controller fenced it")
    assert [s["step"] for s in j["steps"]] == list(range(1, 9))
    assert cli_main(["model", scen, "--kafka", "0.10.2.1", "--json"]) == 0
    j = json.loads(capsys.readouterr().out)
    assert j["prevented"] is None and j["lost_acked"] == ["m2"]
    assert cli_main(["model", scen, "--kafka", "3.3.1-kraft"]) == 0
    assert "prevented at step 9 (restart A):" in capsys.readouterr().out


def test_explain_lists_prevention_rules_and_the_rule_that_prevented(
    capsys: pytest.CaptureFixture[str],
) -> None:
    scen = str(SCENARIO_DIR / "acks1-unclean-election.yaml")
    assert cli_main(["model", scen, "--kafka", "2.1.1", "--explain", "--json"]) == 0
    j = json.loads(capsys.readouterr().out)
    kinds = {r["rule"]: r["kind"] for r in j["profile"]}
    assert kinds["caught_up_stays_in_isr"] == "prevention" and kinds["fencing"] == "behaviour"
    last = j["explain"][-1]
    assert last["step"] == 4 and last["prevented"].startswith("isr_shrink B")
    assert [r["rule"] for r in last["rules"]] == ["caught_up_stays_in_isr"]
    assert last["rules"][0]["change"] == "KAFKA-7152" and last["rules"][0]["in_profile"]
    assert cli_main(["model", scen, "--kafka", "2.1.1", "--explain"]) == 0
    text = capsys.readouterr().out
    assert "caught_up_stays_in_isr" in text and "prevented by caught_up_stays_in_isr" in text


# ------------------------------------------------------------------------ explorer


def _replay_never_prevented(gen: Generation, events: list[Event]) -> None:
    cfg = Config(("A", "B"), gen, "all", 2, False)
    st = initial_state(cfg, 0)
    for ev in events:
        assert prevented(cfg, st, ev) is None, (gen.name, ev)
        st = apply(cfg, st, ev)[0]


@pytest.mark.parametrize("protocol", ["kip320", "3.3.1", "4.0.0"])
def test_explorer_never_takes_a_prevented_transition(protocol: str) -> None:
    gen = generation(protocol)
    res = explore(gen, Bounds(records=1, power_losses=1, crashes=1))
    assert res.exhausted
    for cx in res.counterexamples:
        _replay_never_prevented(gen, cx.events)
    found = {tuple(e.describe(("A", "B")) for e in cx.events) for cx in res.counterexamples}
    kip380 = ("produce m1", "fetch B", "fetch B", "power_loss A", "restart A")
    assert (kip380 in found) == (not gen.kraft), found


def test_explorer_with_prevention_off_finds_the_kraft_restart_again() -> None:
    """The filter is what removes it: the same search under 4.0.0 without the rule finds an
    ordering that restarts a broker the controller still counts live."""
    gen = with_rule(generation("4.0.0"), "registration_needs_expired_session", False)
    res = explore(gen, Bounds(records=1, power_losses=1, crashes=1))
    cfg = Config(("A", "B"), generation("4.0.0"), "all", 2, False)
    hits = 0
    for cx in res.counterexamples:
        st = initial_state(cfg, 0)
        for ev in cx.events:
            if prevented(cfg, st, ev) is not None:
                hits += 1
                break
            st = apply(cfg, st, ev)[0]
    assert hits >= 1
