"""The model run on the events the harness really plays; what a broker run is judged on.

Two things Kafka does on its own in a hwchaos run, which a scenario does not spell out:

- **A follower never stops after one round.** As soon as it appended what a Fetch brought
  it sends its next Fetch, and that request moves the leader's HW (the follower's fetch
  offset is its new LEO). The harness pauses the follower while the answer to that request
  is parked at the leader (``replica.fetch.wait.max.ms``), so the answer, with the new HW,
  is applied only when the follower next runs. In the model's own events a played
  ``fetch F`` step is therefore::

      fetch_response F   (the answer parked since F's last fetch step, if any)
      fetch F            (one request/response round, as the scenario says)
      fetch_request F    (the next request; its answer stays in flight)

  and ``leader_epoch_request F`` from 0.11 is a whole fetch round too (the playbook's
  ``do_leader_epoch_request``). A scenario's own ``fetch_request F`` finds a request in
  flight and leaves the state alone, as the playbook does (``do_fetch_request``).
- **Every running broker checkpoints its HW itself**, every 10 ms
  (``replica.high.watermark.checkpoint.interval.ms``, harness.readback.hw): after every
  event, each running replica's ``checkpoint`` is applied, so a crash leaves the HW it had,
  unless a ``stale_checkpoint`` fault set the file (kept until that broker restarts).

Nothing here reads a broker: this is the model's prediction (the same transition rules) of
the sequence really played. The scenario's own prediction is kept in ``model.json``;
:func:`differences` says where the two end differently.
"""

from __future__ import annotations

from reference_model.events import Event
from reference_model.run import RunResult, Step, expand
from reference_model.state import PartitionState, Replica, initial_state
from reference_model.transitions import apply


def _played(st: PartitionState, e: Event, epoch_truncation: bool) -> list[Event]:
    """The model events one expanded scenario event stands for on real brokers."""
    whole = e.kind == "fetch" or (e.kind == "leader_epoch_request" and epoch_truncation)
    if not whole:
        return [e]
    out = []
    if st.inflight[e.replica] is not None:
        out.append(e._replace(kind="fetch_response"))
    if e.kind == "leader_epoch_request":
        out.append(e)
    out += [e._replace(kind="fetch"), e._replace(kind="fetch_request")]
    return out


def realised_run(prediction: RunResult) -> RunResult:
    """The model run on the events played (same steps, same prevention stop)."""
    cfg = prediction.config
    sc = prediction.scenario
    st = initial_state(cfg, sc.leader)
    steps = [prediction.steps[0]]
    stale: set[int] = set()  # replicas whose checkpoint file a fault set
    for step in prediction.steps[1:]:
        ev = sc.steps[step.index - 1]
        events = expand(cfg, st, ev, sc.records_per_produce)
        notes: list[str] = []
        for e in events:
            for played in _played(st, e, cfg.generation.epoch_truncation):
                if played.kind == "stale_checkpoint":
                    stale.add(played.replica)
                if played.kind == "restart":
                    stale.discard(played.replica)
                st, note = apply(cfg, st, played)
                notes.append(note)
                for i, r in enumerate(st.replicas):
                    if r.alive and not r.paused and i not in stale and r.checkpoint_hw != r.hw:
                        st = apply(cfg, st, Event("checkpoint", i))[0]
        steps.append(Step(step.index, step.text, tuple(events), tuple(notes), st))
    return RunResult(sc, cfg, tuple(steps), prediction.prevented)


def realised_states(prediction: RunResult) -> list[PartitionState]:
    """The model's state after every played step (index k-1 for step k)."""
    return [s.state for s in realised_run(prediction).steps[1:]]


def file_hw(rep: Replica) -> int:
    """What the model says the replica's ``replication-offset-checkpoint`` holds.

    A running broker checkpoints its in-memory HW continuously, so the file is its HW; a
    stopped broker has no in-memory HW, its file is whatever it last wrote (or a fault
    wrote): the model's ``checkpoint_hw``. A power loss cuts the log, not this file (Kafka
    fsyncs it), so the two can differ until the restart clamps the HW to the log.
    """
    return int(rep.hw if rep.alive else rep.checkpoint_hw)


def step_hws(run: RunResult) -> list[list[int]]:
    """:func:`file_hw` of every replica after every step of ``run`` (steps[1:])."""
    return [[file_hw(r) for r in s.state.replicas] for s in run.steps[1:]]


def realised_hws(prediction: RunResult) -> list[list[int]]:
    """The model's HW file of every replica after every played step."""
    return step_hws(realised_run(prediction))


def differences(scenario_run: RunResult, realised: RunResult) -> list[str]:
    """Where the run as played ends otherwise than the scenario as written (one line each)."""
    out = []
    a, b = scenario_run.to_json(), realised.to_json()
    for key in ("lost_acked", "divergent_offsets", "outcomes"):
        if a.get(key) != b.get(key):
            out.append(f"{key}: as written {a.get(key)}, as played {b.get(key)}")
    names = scenario_run.config.brokers
    fa, fb = scenario_run.steps[-1].state, realised.steps[-1].state
    for n, ra, rb in zip(names, fa.replicas, fb.replicas, strict=True):
        la, lb = [e.record for e in ra.log], [e.record for e in rb.log]
        if la != lb:
            out.append(f"{n}'s final log: as written {la}, as played {lb}")
    return out
