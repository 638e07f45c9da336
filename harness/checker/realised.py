"""The model run on the events the harness really plays, for the per-step HW check.

A Kafka follower never stops after one round: as soon as it appended what a Fetch
brought, it sends its next Fetch, and that request moves the leader's HW (the follower's
fetch offset is its new LEO). The harness pauses the follower while the answer to that
request is parked at the leader (``replica.fetch.wait.max.ms``), so the answer, carrying the
new HW, is applied only when the follower next runs. In the model's own events, a played
``fetch F`` step is therefore::

    fetch_response F   (the answer parked since F's last fetch step, if any)
    fetch F            (one request/response round, as the scenario says)
    fetch_request F    (the next request; its answer stays in flight)

and ``leader_epoch_request F`` from 0.11 is a whole fetch round too (the playbook's
``do_leader_epoch_request``). A scenario's ``fetch_request F`` is the model's own event:
when a request is already in flight the model leaves the state alone, as the playbook
does (``do_fetch_request``). Nothing here reads a broker: this is the model's prediction
of the realised sequence, which the observed HW is compared with step by step. The final
logs are still judged against the scenario's own prediction.
"""

from __future__ import annotations

from reference_model.events import Event
from reference_model.generations import Generation
from reference_model.run import RunResult, expand
from reference_model.state import PartitionState, initial_state
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


def realised_states(prediction: RunResult) -> list[PartitionState]:
    """The model's state after every played step (index k-1 for step k)."""
    cfg = prediction.config
    gen: Generation = cfg.generation
    sc = prediction.scenario
    st = initial_state(cfg, sc.leader)
    out: list[PartitionState] = []
    for step in prediction.steps[1:]:
        ev = sc.steps[step.index - 1]
        for e in expand(cfg, st, ev, sc.records_per_produce):
            for played in _played(st, e, gen.epoch_truncation):
                st, _note = apply(cfg, st, played)
        out.append(st)
    return out


def realised_hws(prediction: RunResult) -> list[list[int]]:
    """The model's HW of every replica after every played step."""
    return [[int(r.hw) for r in s.replicas] for s in realised_states(prediction)]
