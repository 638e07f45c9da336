"""Every catalogue scenario shows its anomaly before the generation that fixes it, not after."""

from __future__ import annotations

import pytest

from harness.generator.scenarios import SCENARIO_DIR, load_scenario
from reference_model.run import run_scenario

# scenario -> generation -> (lost_acked, divergent_offsets)
EXPECTED: dict[str, dict[str, tuple[list[str], list[int]]]] = {
    "kip279-fast-leader-change": {
        "hw": (["m3"], []),
        "kip101": (["m3"], [1]),
        "kip279": (["m3"], []),
        "kip320": (["m3"], []),
    },
    "kip320-zombie-follower": {
        "hw": (["m3"], [1]),
        "kip101": (["m3"], [1]),
        "kip279": (["m3"], [1]),
        "kip320": ([], [1]),
    },
    # From 2.1 (KAFKA-7152) the caught-up follower never leaves the ISR: prevented below.
    # the followers lag (cut from the leader before m2): shrinkable on every version
    "jepsen-2013-isr-shrink": {
        **{g: (["m2"], []) for g in ("hw", "kip101", "kip279", "kip320", "3.3.1", "4.0.0")},
        "3.3.1-kraft": ([], []),  # no unclean election in KRaft before 3.9: offline
    },
    "jepsen-2013-zombie-leader": {
        g: (["m2"], []) for g in ("hw", "kip101", "kip279", "kip320", "3.3.1-kraft", "4.0.0")
    },
    "acks1-unclean-election": {g: (["m2"], []) for g in ("hw", "kip101", "kip279")},
    "acks-all-min-isr2-one-crash": {g: ([], []) for g in ("hw", "kip101", "kip279", "kip320")},
    "power-loss-all-replicas": {g: (["m2"], []) for g in ("hw", "kip101", "kip279", "kip320")},
    # KIP-966: the last ISR member loses m1 in a power loss; only ELR keeps it.
    "kip966-last-replica-standing": {
        **{g: (["m1"], []) for g in ("hw", "kip101", "kip279", "kip320", "3.3.1-kraft")},
        "4.0.0": (["m1"], []),
        "kraft": (["m1"], []),
        "4.0.0-elr": ([], []),
        "kraft-elr": ([], []),
        "4.1.0": ([], []),
    },
    "kraft-isr-shrink-epoch": {
        g: ([], []) for g in ("hw", "kip320", "3.3.1-kraft", "4.0.0", "4.0.0-elr")
    },
    "stale-hw-checkpoint": {
        "hw": (["m1", "m2"], []),
        "kip101": ([], []),
        "kip279": ([], []),
        "kip320": ([], []),
    },
}


# scenario -> generation -> (step, rule) of the step the version makes impossible
PREVENTED: dict[str, dict[str, tuple[int, str]]] = {
    "acks1-unclean-election": {
        g: (4, "caught_up_stays_in_isr") for g in ("kip320", "3.3.1", "3.3.1-kraft", "4.0.0")
    },
    "kip101-scenario1-kip-text": {
        g: (9, "registration_needs_expired_session") for g in ("3.3.1-kraft", "4.0.0")
    },
}


@pytest.mark.parametrize(("name", "gen"), [(n, g) for n, by in EXPECTED.items() for g in by])
def test_catalogue_outcome(name: str, gen: str) -> None:
    j = run_scenario(load_scenario(SCENARIO_DIR / f"{name}.yaml"), gen).to_json()
    assert j["prevented"] is None
    assert (j["lost_acked"], j["divergent_offsets"]) == EXPECTED[name][gen]


@pytest.mark.parametrize(("name", "gen"), [(n, g) for n, by in PREVENTED.items() for g in by])
def test_catalogue_prevention(name: str, gen: str) -> None:
    """The model predicts the step the version refuses, with the rule that refuses it."""
    j = run_scenario(load_scenario(SCENARIO_DIR / f"{name}.yaml"), gen).to_json()
    step, rule = PREVENTED[name][gen]
    assert j["prevented"]["step"] == step and f"[{rule}:" in j["prevented"]["reason"]
    assert len(j["steps"]) == step - 1  # the run stops before the prevented step


def test_zombie_follower_goes_offline_instead_under_kip320() -> None:
    j = run_scenario(load_scenario(SCENARIO_DIR / "kip320-zombie-follower.yaml"), "kip320")
    out = j.to_json()
    assert out["outcomes"] == ["offline"]
    fenced = [n for s in j.steps for n in s.notes if "FENCED_LEADER_EPOCH" in n]
    assert fenced, "C's stale fetch must be fenced"


def test_every_catalogue_file_says_what_it_shows_and_what_fixes_it() -> None:
    for path in SCENARIO_DIR.glob("*.yaml"):
        head = path.read_text().splitlines()[:12]
        assert any(line.startswith("# Shows:") for line in head), path.name
        assert any(line.startswith("# Fixed by:") for line in head), path.name


def test_kip966_elr_trace_names_the_elr_and_last_known_elr() -> None:
    """What the harness compares with __cluster_metadata after each step."""
    path = SCENARIO_DIR / "kip966-last-replica-standing.yaml"
    steps = run_scenario(load_scenario(path), "4.0.0-elr").to_json()["steps"]
    by_event = {s["event"]: s for s in steps}
    assert by_event["clean_shutdown C"]["isr"] == ["A"]
    assert by_event["clean_shutdown C"]["elr"] == ["C"]
    detect = by_event["detect A"]
    assert (detect["leader"], detect["isr"], detect["elr"]) == (None, [], ["A", "C"])
    assert detect["last_known_elr"] == ["A"]
    restart_a = by_event["restart A"]  # unclean shutdown: A leaves the ELR, stays leaderless
    assert (restart_a["leader"], restart_a["elr"]) == (None, ["C"])
    restart_c = by_event["restart C"]
    assert (restart_c["leader"], restart_c["isr"], restart_c["elr"]) == ("C", ["C"], [])
    assert restart_c["last_known_elr"] == []


def test_kraft_isr_shrink_epoch_differs_from_zookeeper_on_disk() -> None:
    s = load_scenario(SCENARIO_DIR / "kraft-isr-shrink-epoch.yaml")
    zk, old_kraft, kraft = (run_scenario(s, v).to_json() for v in ("3.3.1", "3.3.1-kraft", "4.0.0"))
    assert zk["epochs"]["C"] == old_kraft["epochs"]["C"] == [[0, 0], [1, 1]]
    assert kraft["epochs"]["C"] == [[0, 0]]
    assert [e["epoch"] for e in kraft["replicas"]["C"]] == [0, 0]
    assert [e["epoch"] for e in zk["replicas"]["C"]] == [0, 1]
