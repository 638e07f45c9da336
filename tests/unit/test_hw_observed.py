"""The per-step HW check and its source: each broker's own replication-offset-checkpoint.

The mutation tests are the proof the check is not circular: a prediction with one HW
changed must fail at exactly that step, naming the replica and both values.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from harness.checker.diff import Verdict
from harness.checker.hw import hw_check, judge_hw
from harness.checker.realised import realised_hws
from harness.generator.scenarios import load_scenario
from harness.readback.checkpoints import write_offset_checkpoint
from harness.readback.hw import NO_HW, checkpointed_hw, stable_hw, stable_hws
from reference_model.run import run_scenario

ROOT = Path(__file__).resolve().parents[2]
CKPT = "replication-offset-checkpoint"


@dataclass
class Obs:
    step: int
    event: str
    hw: dict[str, int]
    leader: str = ""
    leader_hw_wire: int = -1
    hw_stable: dict[str, bool] = field(default_factory=dict)


def _verdict() -> Verdict:
    return Verdict("match", True, [], [], [], [])


def test_checkpointed_hw_reads_the_partition_entry(tmp_path: Path) -> None:
    write_offset_checkpoint(tmp_path / CKPT, {("hwchaos", 0): 7, ("other", 0): 3})
    assert checkpointed_hw(tmp_path, "hwchaos", 0) == 7
    assert checkpointed_hw(tmp_path, "hwchaos", 1) == NO_HW


def test_checkpointed_hw_missing_or_torn_file_is_no_hw(tmp_path: Path) -> None:
    assert checkpointed_hw(tmp_path, "hwchaos", 0) == NO_HW
    (tmp_path / CKPT).write_text("0\n2\nhwchaos 0 5\n")  # count says 2, one entry: torn
    assert checkpointed_hw(tmp_path, "hwchaos", 0) == NO_HW


def _writer(
    path: Path, values: list[int], stop: threading.Event, done: list[int] | None = None
) -> None:
    """Write a checkpoint like Kafka's timer: tmp + rename, one value per tick; ``done``
    holds the writes begun (noted before each write: a reader can see a write only once it
    is noted, so the count is never below what it saw)."""
    for v in values:
        if stop.wait(0.03):
            return
        if done is not None:
            done.append(v)
        write_offset_checkpoint(path, {("hwchaos", 0): v})


def test_stable_hw_waits_for_two_fresh_writes_that_agree(tmp_path: Path) -> None:
    path = tmp_path / CKPT
    write_offset_checkpoint(path, {("hwchaos", 0): 0})
    stop = threading.Event()
    done: list[int] = []
    t = threading.Thread(target=_writer, args=(path, [1, 2, 3, 3, 3, 3, 3, 3], stop, done))
    t.start()
    try:
        r = stable_hw(tmp_path, "hwchaos", 0, timeout=5.0, poll=0.005)
        made = len(done)  # the writes begun when the reader answered
    finally:
        stop.set()
        t.join()
    assert (r.hw, r.stable) == (3, True)
    # Two fresh writes agreeing on 3 exist only from the 4th write (1, 2, 3, 3). Counted on
    # the writer's side: the reader may miss a write between two polls on a loaded machine
    # (it saw 3 of them at load ~30 in a CI trial, 7 Dec 2026), which is allowed.
    assert made >= 4, (made, r)


def test_stable_hw_is_bounded_on_stability_not_on_a_value(tmp_path: Path) -> None:
    """A file nobody rewrites (a broker that stopped checkpointing) is not 'stable'."""
    write_offset_checkpoint(tmp_path / CKPT, {("hwchaos", 0): 4})
    r = stable_hw(tmp_path, "hwchaos", 0, timeout=0.3)
    assert (r.hw, r.stable, r.writes) == (4, False, 0)


def test_stable_hws_waits_for_each_broker_in_one_loop(tmp_path: Path) -> None:
    """Two running brokers read together: each gets its own two agreeing writes, and one
    that stopped writing is returned unstable at the bound, not waited for forever."""
    a, b, c = (tmp_path / n for n in "abc")
    for d, v in ((a, 0), (b, 5), (c, 9)):
        d.mkdir()
        write_offset_checkpoint(d / CKPT, {("hwchaos", 0): v})
    stop = threading.Event()
    ts = [
        threading.Thread(target=_writer, args=(a / CKPT, [1, 2, 2, 2, 2, 2, 2], stop)),
        threading.Thread(target=_writer, args=(b / CKPT, [6, 6, 6, 6, 6, 6, 6], stop)),
    ]
    for t in ts:
        t.start()
    try:
        r = stable_hws({"A": a, "B": b, "C": c}, "hwchaos", 0, timeout=0.6, poll=0.005)
    finally:
        stop.set()
        for t in ts:
            t.join()
    assert (r["A"].hw, r["A"].stable) == (2, True)
    assert (r["B"].hw, r["B"].stable) == (6, True)
    assert (r["C"].hw, r["C"].stable, r["C"].writes) == (9, False, 0)


def test_stable_hws_runs_meanwhile_once_after_noting_the_current_writes(tmp_path: Path) -> None:
    """``meanwhile`` (the observation's wire reads) runs once, after the files' current
    writes are noted: a write made while it runs is a fresh one, and one fresh write alone
    is not a stable reading."""
    write_offset_checkpoint(tmp_path / CKPT, {("hwchaos", 0): 0})
    calls: list[int] = []

    def meanwhile() -> None:
        calls.append(1)
        time.sleep(0.01)  # a new inode and mtime for the write below
        write_offset_checkpoint(tmp_path / CKPT, {("hwchaos", 0): 7})

    r = stable_hws({"A": tmp_path}, "hwchaos", 0, timeout=0.3, meanwhile=meanwhile)
    assert calls == [1]
    assert (r["A"].hw, r["A"].stable, r["A"].writes) == (7, False, 1)


def _kip101() -> tuple[list[str], list[list[int]], list[Obs]]:
    """kip101-scenario1 under 0.10.2.1, with observations equal to the model's HWs."""
    sc = load_scenario(ROOT / "scenarios" / "kip101-scenario1.yaml")
    pred = run_scenario(sc, "hw")
    names = list(sc.brokers)
    hws = realised_hws(pred)
    obs = [
        Obs(k, s.text, dict(zip(names, hws[k - 1], strict=True)))
        for k, s in enumerate(pred.steps[1:], start=1)
    ]
    return names, hws, obs


def test_observed_equal_to_the_model_agrees_at_every_step() -> None:
    names, hws, obs = _kip101()
    res = hw_check(names, hws, obs)
    assert res.match and res.steps_compared == len(obs) == res.steps_agreeing


def test_mutation_one_hw_changed_fails_at_that_step() -> None:
    """One HW changed in a copy of the model's output: the run fails there, named."""
    names, hws, obs = _kip101()
    for step in range(1, len(hws) + 1):
        for i, name in enumerate(names):
            wrong = [list(row) for row in hws]
            wrong[step - 1][i] += 1
            v = _verdict()
            res = judge_hw(v, names, wrong, obs)
            assert v.verdict == "model_mismatch" and not v.model_match
            assert res.first is not None
            assert (res.first.step, res.first.replica) == (step, name)
            assert v.first_differing_step == step
            assert f"step {step} (" in v.reason and f"{name}'s HW" in v.reason


def test_replica_without_a_checkpoint_entry_is_not_compared() -> None:
    res = hw_check(["A", "B"], [[1, 1]], [Obs(1, "fetch A", {"A": -1, "B": 1})])
    assert res.match and res.replicas_compared == 1


def test_wire_and_checkpoint_disagreeing_on_the_leader_is_recorded() -> None:
    obs = [Obs(1, "fetch A", {"A": 1, "B": 1}, leader="B", leader_hw_wire=2)]
    res = hw_check(["A", "B"], [[1, 1]], obs)
    assert res.wire_vs_checkpoint == [{"step": 1, "leader": "B", "wire": 2, "checkpoint": 1}]


def test_realised_model_holds_the_follower_one_round_behind_the_leader() -> None:
    """kip101-scenario1 on 0.10.2.1 as played: the leader's HW moves with the follower's
    next Fetch (steps 2 and 5), the follower's only when it next runs (step 3); the
    scenario's own fetch_request (step 7) finds that request already in flight. These are
    the HWs the brokers checkpointed, step by step, in a local run on 0.10.2.1."""
    _names, hws, _obs = _kip101()
    a = [row[0] for row in hws]
    b = [row[1] for row in hws]
    assert a == [0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1]
    assert b == [0, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2, 2]


def test_as_played_ends_as_written_except_where_kafka_own_checkpoint_decides() -> None:
    """The extra rounds and Kafka's own HW checkpoints mostly move HWs earlier: the final
    logs are the scenario's own prediction, except in one pre-0.11 cell where a restart
    truncates to the HW, and the HW the broker checkpointed itself is not the one the
    scenario's explicit checkpoint steps left: kip279-fast-leader-change (B restarts with
    HW 1 and keeps m3 rather than m2: a divergence)."""
    from harness.checker.realised import differences, realised_run
    from harness.generator.scenarios import catalogue

    differ = set()
    for path in catalogue():
        sc = load_scenario(path)
        for gen in ("0.10.2.1", "2.1.1", "3.3.1", "3.3.1-kraft", "4.0.0", "4.0.0-elr"):
            pred = run_scenario(sc, gen)
            if differences(pred, realised_run(pred)):
                differ.add((sc.name, gen))
    assert differ == {("kip279-fast-leader-change", "0.10.2.1")}


def test_a_crashed_broker_restarts_with_the_hw_it_checkpointed_itself() -> None:
    """acks-all-min-isr2-one-crash on 0.10.2.1: no checkpoint step, yet the broker's own
    timer wrote A's HW (2) before the crash; the restart reads 2 (as the brokers did)."""
    from harness.checker.realised import realised_run

    sc = load_scenario(ROOT / "scenarios" / "acks-all-min-isr2-one-crash.yaml")
    pred = run_scenario(sc, "0.10.2.1")
    assert pred.steps[11].state.replicas[0].hw == 0  # the scenario as written
    assert realised_run(pred).steps[11].state.replicas[0].hw == 2


def test_a_mismatch_says_why_when_the_controller_decided_otherwise() -> None:
    """The step's observed ISR differs from the model's: named beside the HW values."""
    obs = [Obs(1, "isr_shrink B", {"A": 2, "B": 1, "C": 1}, leader="A")]
    obs[0].isr = ["A"]  # type: ignore[attr-defined]
    res = hw_check(["A", "B", "C"], [[1, 1, 1]], obs, [("A", ["A", "C"])])
    assert res.first is not None
    assert "ISR is ['A'], the model's ['A', 'C']" in res.first.describe()
    same = hw_check(["A", "B", "C"], [[1, 1, 1]], obs, [("A", ["A"])])
    assert same.first is not None and same.first.hint == ""


# The HW a Fetch answer carries: read before the fetch offset is counted
# (``initialHighWatermark``), in every release from 0.10.2.1 to 4.0.
# C's checkpointed HW, per version, in local runs of acks-all-min-isr2-one-crash
# (2026-11-27): step 9 (`fetch followers` after the new leader B appended m3) C had m3 and
# HW 1 on 0.10.2.1, 3.3.1, 3.3.1-kraft, 4.0.0 and 4.0.0-elr; step 10 HW 3.
OBSERVED_C_HW_STEPS_7_TO_10 = [1, 1, 1, 3]


def test_an_answer_carrying_records_carries_the_hw_from_before_the_fetch() -> None:
    """B leads with HW 1 and LEO 3; C fetches from 2: the answer brings m3 with HW 1, while
    B's own HW moves to 2. The next, empty, answer is parked and re-read after the move."""
    from harness.checker.realised import realised_run

    sc = load_scenario(ROOT / "scenarios" / "acks-all-min-isr2-one-crash.yaml")
    for gen in ("0.10.2.1", "2.1.1", "3.3.1", "3.3.1-kraft", "4.0.0", "4.0.0-elr"):
        played = realised_run(run_scenario(sc, gen))
        c = [s.state.replicas[2].hw for s in played.steps[7:11]]
        assert c == OBSERVED_C_HW_STEPS_7_TO_10, gen
        assert played.steps[9].state.replicas[1].hw == 3  # B, once C's next Fetch counted


def test_fetch_request_answer_hw_before_with_records_after_without() -> None:
    """The rule itself, on one Fetch round of C to the new leader B: the answer carrying m3
    has B's HW from before the fetch (1) while B's moves to 2; the model's old rule (the HW
    after) gave C 2 at step 9, which no broker showed. The next, empty, answer is parked
    and re-read after the move: HW 3."""
    from harness.checker.realised import realised_run
    from reference_model.broker import fetch_request
    from reference_model.events import Event
    from reference_model.transitions import apply

    sc = load_scenario(ROOT / "scenarios" / "acks-all-min-isr2-one-crash.yaml")
    for gen in ("2.1.1", "3.3.1", "4.0.0"):
        played = realised_run(run_scenario(sc, gen))
        cfg = played.config
        st = played.steps[8].state  # after `produce m3`: B leads, LEO 3, HW 1; C at 2
        assert (st.replicas[1].hw, len(st.replicas[1].log), len(st.replicas[2].log)) == (1, 3, 2)
        st, _ = apply(cfg, st, Event("fetch_response", 2))  # the stale answer from A: dropped

        def keep(_c: object, ctrl: object, _i: object) -> object:
            return ctrl

        st, _ = fetch_request(cfg, st, Event("fetch_request", 2), keep)  # type: ignore[arg-type]
        resp = st.inflight[2]
        assert resp is not None and [e.record for e in resp.entries] == ["m3"], gen
        assert (resp.hw, st.replicas[1].hw) == (1, 2), gen
        st, _ = apply(cfg, st, Event("fetch_response", 2))
        assert st.replicas[2].hw == 1
        st, _ = fetch_request(cfg, st, Event("fetch_request", 2), keep)  # type: ignore[arg-type]
        empty = st.inflight[2]
        assert empty is not None and empty.entries == () and empty.hw == 3, gen


def test_a_late_pause_the_harness_noted_is_named_in_the_mismatch() -> None:
    """A follower paused past its parked Fetch (a loaded machine) may apply a second round:
    the playbook notes it, and the HW difference at that step carries the note."""
    late = (
        "harness: B (or its leader) paused 1.30s after its fetch round, past "
        "replica.fetch.wait.max.ms=1000"
    )
    obs = Obs(2, "fetch B", {"A": 1, "B": 1})
    obs.notes = [f"B joined the ISR; {late}"]  # type: ignore[attr-defined]
    res = hw_check(["A", "B"], [[0, 0], [1, 0]], [obs])
    assert res.first is not None and res.first.hint == late
    assert late in res.first.describe()


def test_an_answer_unread_at_the_leaders_kill_explains_that_followers_later_hw() -> None:
    """A killed leader's answer left in a paused follower's socket is applied when the
    follower next runs (a later step): the playbook notes it at the kill, and the first HW
    difference of that follower, not of another, carries the note."""
    from harness.generator.playbook.crash import unread_note

    note = unread_note(["B"], "A")
    crash = Obs(6, "crash leader", {"A": 2, "B": 1, "C": 1})
    crash.notes = ["", note]  # type: ignore[attr-defined]
    detect = Obs(7, "detect leader", {"A": 2, "B": 2, "C": 2})
    hws = [[0, 0, 0]] * 5 + [[2, 1, 1], [2, 1, 1]]
    res = hw_check(["A", "B", "C"], hws, [crash, detect])
    by_replica = {m.replica: m for m in res.mismatches}
    assert set(by_replica) == {"B", "C"}
    assert by_replica["B"].hint == f"step 6: {note}"
    assert by_replica["C"].hint == ""
    both = Obs(6, "crash leader", {"A": 2, "B": 1, "C": 1})
    both.notes = [unread_note(["B", "C"], "A")]  # type: ignore[attr-defined]
    res = hw_check(["A", "B", "C"], hws, [both, detect])
    assert all(m.hint.startswith("step 6: harness: B,C held A's") for m in res.mismatches)
