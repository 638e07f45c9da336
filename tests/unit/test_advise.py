"""``hwchaos advise`` agrees with ``hwchaos explore`` and ``hwchaos model`` on a config grid.

The grid is acks x min.insync x replication factor x unclean x three releases (one per
era: 0.10.2.1 ZooKeeper without leader epochs, 3.3.1 ZooKeeper with KIP-320, 4.0.0 KRaft).
For each config: advise's verdict (loses or not) equals a direct explorer search with the
same replication factor, settings and release; its shortest ordering, replayed through the
model, loses what advise says; acks=1 is never called safe.
"""

from __future__ import annotations

import itertools
import json

import pytest

from explorer.search import Bounds, counterexample_scenario, explore
from harness.cli.advise import DEFAULT_RELEASE, advise, main, render
from reference_model.profiles import generation
from reference_model.run import run_scenario

RELEASES = ("0.10.2.1", "3.3.1", "4.0.0")
BOUNDS = Bounds(records=2, crashes=1)
GRID = [
    (acks, isr, rf, unclean, release)
    for acks, isr, rf, unclean, release in itertools.product(
        ("1", "all"), (1, 2), (1, 2), (False, True), RELEASES
    )
    if isr <= rf and not (rf == 1 and unclean)
]


def test_the_grid_is_big_enough() -> None:
    assert len(GRID) >= 20
    assert {g[0] for g in GRID} == {"1", "all"} and {g[4] for g in GRID} == set(RELEASES)


@pytest.mark.parametrize(("acks", "isr", "rf", "unclean", "release"), GRID)
def test_advise_agrees_with_explore_and_model(
    acks: str, isr: int, rf: int, unclean: bool, release: str
) -> None:
    out = advise(acks, isr, rf, unclean, release, BOUNDS, max_states=20_000)
    direct = explore(
        generation(release), Bounds(**{**BOUNDS.__dict__, "replicas": rf}), acks, isr, unclean
    )
    direct_loss = {
        cx.invariant
        for cx in direct.counterexamples
        if cx.invariant in ("acked_lost", "leader_missing_committed", "replicas_disagree_below_hw")
    }
    said = {f["invariant"] for f in out["explorer"]}
    assert said == direct_loss, (out["sentence"], direct.counterexamples)
    # the settings asked are the settings answered, and the search used the asked RF
    assert out["settings"]["rf"] == rf == out["search"]["bounds"]["replicas"]
    sentence = out["sentence"]
    assert sentence.startswith(
        f"acks={acks} with min.insync.replicas={isr}, replication factor {rf}"
    )
    assert f"on Kafka {release}" in sentence and "safe" not in sentence.replace("unsafe", "")
    if said:
        first = out["explorer"][0]
        assert "loses acknowledged writes" in sentence or "divergent" in sentence
        # the shortest ordering, replayed by the model under the same settings, loses
        cx = next(c for c in direct.counterexamples if c.invariant == first["invariant"])
        sc = counterexample_scenario(cx, generation(release), acks, isr, unclean, rf, "x")
        model = run_scenario(sc, release).to_json()
        assert model["lost_acked"] == first["lost_acked"]
        assert model["divergent_offsets"] == first["divergent_offsets"]
        assert len(first["ordering"]) <= len(cx.events)
        mine = next(r for r in first["releases"] if r["release"] == release)
        assert mine["outcome"] == "loses" or first["invariant"] != "acked_lost"
    else:
        assert "no losing ordering found" in sentence


def test_acks1_loses_to_a_plain_leader_crash_on_the_newest_release() -> None:
    """Issue 21's false answer: advise --acks 1 --rf 3 --unclean found no loss."""
    out = advise("1", 1, 3, True, DEFAULT_RELEASE, BOUNDS, max_states=50_000)
    text = "\n".join(render(out))
    assert text.splitlines()[0].startswith(
        f"acks=1 with min.insync.replicas=1, replication factor 3, unclean election on, on "
        f"Kafka {DEFAULT_RELEASE} loses acknowledged writes when the leader crashes before a "
        "follower fetches"
    )
    first = out["explorer"][0]
    # with three replicas the third must follow the new leader before the state settles
    assert first["ordering"][:3] == ["produce m1", "crash A", "detect A"]
    fixes = {c["change"]: c["outcome"] for c in first["prevented_by_settings"]}
    assert fixes["acks=all"] == "no loss"
    assert fixes["unclean.leader.election.enable=false"] == "loses"
    assert " safe" not in text


def test_prevented_is_not_no_loss() -> None:
    """kip966-last-replica-standing on 4.0.0-elr: an ordering a release refuses is named
    'prevented' with the step and reason; one that plays and keeps the data 'no loss'."""
    out = advise("all", 2, 3, False, "4.0.0", None)
    rows = {r["scenario"]: r for r in out["scenarios"]}
    assert rows["kip966-last-replica-standing"]["outcome"] == "loses"
    assert rows["acks-all-min-isr2-one-crash"]["outcome"] == "no loss"
    prevented = [r for r in out["scenarios"] if r["outcome"] == "prevented"]
    assert prevented and all("refused" in r["why"] for r in prevented)
    assert out["not_checked"] == [
        "the explorer did not run: only the catalogue orderings were replayed"
    ]


def test_cli_defaults_and_bad_input(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--acks", "1", "--rf", "2", "--explore", "0", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    # acks=1: min.insync defaults to 1 (it has no effect), release to the newest known
    assert out["settings"] == {
        "acks": "1",
        "min_insync": 1,
        "rf": 2,
        "unclean": False,
        "release": DEFAULT_RELEASE,
        "mode": "kraft",
        "kafka": DEFAULT_RELEASE,
    }
    assert main(["--rf", "2", "--min-insync", "3"]) == 2
    assert capsys.readouterr().err.strip() == (
        "hwchaos advise: need 1 <= --min-insync (3) <= --rf (2) <= 5"
    )
    assert main(["--acks", "0", "--rf", "2", "--explore", "0", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert any("acks=0 acknowledges nothing" in n for n in out["notes"])


def test_an_era_alias_is_answered_in_release_numbers() -> None:
    out = advise("1", 1, 2, False, "hw", None)
    assert "on Kafka 0.8 - 0.10.2 (the 'hw' profile)" in out["sentence"]
