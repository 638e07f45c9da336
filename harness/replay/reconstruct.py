"""From facts to a scenario: the abstract ordering that leads to what the logs show.

Brokers log the controller's decisions and their own (start, truncation, leadership, ISR
changes, the LEO they recovered to) but never a produce or a fetch. The reconstruction
therefore walks the facts of all brokers in time order and, with the reference model
playing alongside, emits the scenario steps that make the model's state agree with each
fact:

- a broker's failure seen by the controller (``deleted brokers``, ``Fencing broker``) is a
  ``crash`` (or a ``power_loss`` when the LEO it recovers to on restart is below what it
  held: the unflushed tail was lost; a ``flush`` is placed where its LEO was that value)
  followed by ``detect``; a controlled shutdown is ``clean_shutdown``;
- a broker start after the first is a ``restart``; before 0.11 the offset it truncates to
  as a follower is its checkpointed HW, written as ``stale_checkpoint`` before the restart;
- acknowledged records (``--acked``) are produced to the model's leader when their offset
  is the leader's LEO (records whose offset does not fit wait for the next leader), and a
  live follower copies each record (two fetches: data, then the HW) unless a later fact
  about it (the offset it starts leading from, the LEO it recovers to) shows it never did;
  under acks=all an acknowledged record was copied by every in-sync follower;
- a follower's truncation after OffsetsForLeaderEpoch or its return to the ISR is a fetch;
- a follower is not assumed to catch up at the end: only logged evidence makes it fetch.

Every fact the model does not reproduce (another leader elected, another LEO) is recorded
as an ambiguity rather than forced.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from harness.replay.parse import PARTITION_KINDS as _PARTITION_KINDS
from harness.replay.parse import BrokerLogs, Fact, ReplayError
from harness.replay.versions import VersionInfo
from reference_model.events import Event
from reference_model.run import RunResult, run_scenario
from reference_model.scenario import Scenario
from reference_model.state import NO_LEADER


@dataclass(frozen=True)
class Acked:
    """One producer outcome: the record, the offset it was acknowledged at, its status."""

    record: str
    offset: int
    status: str = "acked"


@dataclass
class Reconstruction:
    scenario: Scenario
    result: RunResult
    version: VersionInfo
    facts: list[Fact]
    names: dict[int, str]  # broker id -> folder name
    ambiguities: list[str] = field(default_factory=list)
    step_facts: list[str] = field(default_factory=list)  # why each step is there
    alternatives: list[Reconstruction] = field(default_factory=list)  # other fitting orderings
    producer: dict[str, str] | None = None  # record -> status as the producer saw it

    @property
    def lost_acked(self) -> list[str]:
        """Lost writes the producer saw acknowledged (the model acks every acks=1 append,
        including one whose answer never reached the producer)."""
        lost = self.result.lost_acked
        if self.producer is None:
            return lost
        return [r for r in lost if self.producer.get(r, "acked") == "acked"]


MAX_SYNTH = 200
"""Records the model plays at most per term; incidents' offsets run to millions, and then
the logged numbers (LEOs, HWs, the halt line's offsets) carry the verdict alone."""


class _Builder:
    """Emits steps while the model plays them, so each decision sees the model's state."""

    def __init__(
        self,
        replicas: list[str],
        leader: str,
        gen: str,
        acks: str,
        min_insync: int,
        unclean: bool,
        name: str,
    ) -> None:
        self.replicas = replicas
        self.idx = {n: i for i, n in enumerate(replicas)}
        self.gen = gen
        self.base = Scenario(
            name=name,
            source=name,
            description="",
            fixed_by="",
            brokers=tuple(replicas),
            leader=self.idx[leader],
            acks=acks,
            min_insync=min_insync,
            unclean=unclean,
            steps=(Event("produce", record="_"),),
        )
        self.steps: list[Event] = []
        self.why: list[str] = []
        self.cite = ""  # file:line of the fact being played: each step cites it
        self._result: RunResult | None = None

    def scenario(self, steps: Sequence[Event] | None = None) -> Scenario:
        from dataclasses import replace

        return replace(self.base, steps=tuple(self.steps if steps is None else steps))

    def result(self) -> RunResult:
        if self._result is None:
            self._result = run_scenario(self.scenario(), self.gen)
        return self._result

    def emit(self, ev: Event, why: str) -> None:
        self.steps.append(ev)
        self.why.append(f"{why} [{self.cite}]" if self.cite else why)
        self._result = None

    def insert(self, at: int, ev: Event, why: str) -> None:
        self.steps.insert(at, ev)
        self.why.insert(at, why)
        self._result = None

    def state(self) -> Any:
        return self.result().final

    def ev(self, kind: str, name: str, **kw: Any) -> Event:
        return Event(kind, replica=self.idx[name], **kw)


def reconstruct(
    brokers: Sequence[BrokerLogs],
    version: VersionInfo,
    acked: list[Acked] | None,
    acks: str | None,
    min_insync: int | None,
    name: str = "replay",
    power_loss_first: bool = False,
    append_unsure: bool = False,
    order: Sequence[str] | None = None,
    copy_unsure: frozenset[str] = frozenset(),
    split_at: int | None = None,
    copied_before: int = 0,
) -> Reconstruction:
    """One reconstruction. ``power_loss_first`` picks the other reading of a follower that
    comes back with fewer records than its leader wrote: it copied them and lost the
    unflushed tail to a power failure (instead of: it never copied them). ``append_unsure``
    reads a record the producer saw fail, that no later fact places, as appended by the
    leader of the first moment that could hold it (instead of: never appended)."""
    names = {b.broker_id: b.name for b in brokers if b.broker_id >= 0}
    facts = order_facts(brokers, order)
    replicas = sorted(
        {
            f.broker
            for f in facts
            if (f.kind in _PARTITION_KINDS and f.kind != "isr_change")
            or f.kind in ("fatal_truncation", "out_of_order", "hw_regression", "epoch_error")
            or (f.kind == "isr_change" and f.detail in ("shrinking", "expanding"))
        }
        | {b.name for b in brokers if b.peer_only}
    )
    if not replicas:
        raise ReplayError(
            "the lines about the partition name no replica (only controller decisions): "
            "add a replica broker's server.log or state-change.log"
        )
    amb: list[str] = []
    by_name = {n: i for i, n in names.items()}

    def subject(f: Fact) -> str | None:
        if f.kind in ("broker_failure", "broker_added"):
            return names.get(f.broker_id)
        return f.broker

    leader0 = _initial_leader(facts, names, replicas)
    conf_unclean = _unclean_from_config(facts)
    unclean = bool(conf_unclean) or any(f.kind == "unclean_election" for f in facts)
    if conf_unclean is None and not unclean:
        amb.append("unclean.leader.election.enable not in the logs: assumed false")
    acks_v = acks or ("all" if acked and any(a.status == "refused" for a in acked) else "1")
    mis = min_insync if min_insync is not None else _min_insync_from_logs(facts) or 1
    mis = min(mis, len(replicas))
    b = _Builder(replicas, leader0, version.generation, acks_v, mis, unclean, name)
    pending = list(acked or [])

    started: set[str] = set()
    down_fact: dict[str, Fact] = {}

    def next_leo_fact(x: str, after: int, follower: bool = False) -> int | None:
        """The next LEO the logs state for ``x`` after fact ``after``: how far it got."""
        for f in facts[after + 1 :]:
            if f.broker != x:
                continue
            if f.kind == "log_loaded" and follower and power_loss_first:
                continue
            if f.kind == "log_loaded" or (f.kind == "become_leader" and f.offset >= 0):
                return f.offset
        return None

    synth = acked is None
    synth_n = [0]

    def synthesize(pos: int) -> None:
        """Without --acked: write as many records as the next stated LEO says existed.

        The target is the leader's own next stated LEO (recovered on restart, or the offset
        it starts leading from again) or, failing that, the offset the next leader starts
        from. Records are named by offset and leader epoch (``o1e0``).
        """
        st = b.state()
        lead = st.controller.leader
        if lead == NO_LEADER:
            return
        lname = replicas[lead]
        target = next_leo_fact(lname, pos)
        if target is None:
            # What any replica states before leadership moves: the LEO it recovers on
            # restart or starts leading from cannot exceed what this leader wrote.
            lid = by_name.get(lname, -9)
            seen: list[int] = []
            for f in facts[pos + 1 :]:
                if f.kind == "election" and f.leader not in (lid, -1):
                    break
                if f.kind == "become_leader" and f.broker != lname:
                    if f.offset >= 0:
                        seen.append(f.offset)
                    break
                if f.kind == "log_loaded" and f.broker in b.idx:
                    seen.append(f.offset)
            target = max(seen) if seen else None
        leo = len(st.replicas[lead].log)
        if target is not None and target - leo > MAX_SYNTH:
            amb.append(
                f"{lname} holds {target} records by the logs: too many to play one by one "
                f"(more than {MAX_SYNTH}); the verdict rests on the logged offsets alone"
            )
            target = None
        while target is not None and leo < target:
            rec = f"o{leo}e{st.replicas[lead].epoch}"
            synth_n[0] += 1
            pending.append(Acked(rec, leo, "acked"))
            leo += 1
        if pending:
            _produce(pos)

    def produce_pending(pos: int) -> None:
        # Produce and copy steps rest on the producer's outcomes (or the stated LEOs), not
        # on the line being played: they cite none, and the timeline shows them inferred.
        cite, b.cite = b.cite, ""
        if synth:
            synthesize(pos)
        else:
            _produce(pos)
        b.cite = cite

    def _produce(pos: int) -> None:
        while pending:
            a = pending[0]
            st = b.state()
            lead = st.controller.leader
            if a.status != "acked" or a.offset < 0:
                # Not acknowledged: it may still have been appended (the leader died before
                # answering). It was, if the leader later states more records than it has.
                cap, leo, lname = None, -1, ""
                if lead != NO_LEADER:
                    lname = replicas[lead]
                    leo = len(st.replicas[lead].log)
                    cap = next_leo_fact(lname, pos)
                    if a.offset == leo or (a.offset < 0 and cap is not None and cap > leo):
                        pending.pop(0)
                        b.emit(
                            Event("produce", record=a.record),
                            f"producer: {a.record} {a.status}, but appended by {lname} "
                            f"(it later holds {cap} records)",
                        )
                        if copy_unsure:
                            # The other reading: live followers that log nothing against it
                            # copied the unacknowledged record before the leader failed.
                            for fname in replicas:
                                fi = b.idx[fname]
                                rep = b.state().replicas[fi]
                                if (
                                    fi != lead
                                    and fname in copy_unsure
                                    and rep.alive
                                    and not rep.paused
                                ):
                                    fcap = next_leo_fact(fname, pos, follower=True)
                                    if fcap is None or fcap > leo:
                                        b.emit(b.ev("fetch", fname), f"{fname} copies {a.record}")
                        continue
                if append_unsure and lead != NO_LEADER and (cap is None or cap > leo):
                    pending.pop(0)
                    b.emit(
                        Event("produce", record=a.record),
                        f"producer: {a.record} {a.status}; read as appended by {lname}",
                    )
                    continue
                nxt = next((n for n in pending[1:] if n.status == "acked"), None)
                if (
                    nxt is not None
                    and lead != NO_LEADER
                    and nxt.offset == len(st.replicas[lead].log)
                ):
                    pending.pop(0)  # never appended: nothing of it reached a log
                    continue
                return
            if lead == NO_LEADER:
                return
            lname = replicas[lead]
            leo = len(st.replicas[lead].log)
            cap = next_leo_fact(lname, pos)
            # A leader whose next stated LEO is at or below the offset did not write it
            # (the record belongs to a later leader), unless acks=all and every other ISR
            # member also comes back below it: then all held it and lost the unflushed tail.
            others = [replicas[i] for i in st.controller.isr if i != lead]
            all_lower = bool(others) and all(
                (c := next_leo_fact(n, pos)) is not None and c <= a.offset for n in others
            )
            # A follower that later states more records than the offset holds it: the leader
            # wrote it and lost it unflushed (kip966 on 4.0.0: A power-lost m1, B and C
            # came back with it).
            any_higher = any(
                (c := next_leo_fact(n, pos)) is not None and c > a.offset for n in others
            )
            capped = (
                cap is not None
                and cap <= a.offset
                and not (acks_v == "all" and all_lower)
                and not any_higher
            )
            # The new leader copied less than assumed: its term's first record sits below
            # its LEO. Take back the copies of the previous term beyond it.
            if a.offset < leo and not capped and acks_v != "all" and _uncopy(b, lname, a.offset):
                continue
            if a.offset != leo or capped:
                return
            pending.pop(0)
            b.emit(
                Event("produce", record=a.record),
                f"producer: {a.record} acknowledged at offset {a.offset} by {lname}",
            )
            for fname in replicas:
                i = b.idx[fname]
                st = b.state()
                rep = st.replicas[i]
                if i == lead or not rep.alive or rep.paused or rep.leader != lead:
                    continue
                must = acks_v == "all" and i in st.controller.isr
                fcap = next_leo_fact(fname, pos, follower=True)
                if fname in lagging and not must:
                    continue  # the leader logged it out of the ISR: it was not fetching
                if fname in copy_cap and a.offset >= copy_cap[fname]:
                    continue  # the shrink line states this follower's LEO below the offset
                if must or fcap is None or fcap > a.offset:
                    for _ in range(2):
                        b.emit(b.ev("fetch", fname), f"{fname} copies offset {a.offset}")

    def crash(x: str, pos: int) -> None:
        st = b.state()
        i = b.idx[x]
        if not st.replicas[i].alive:
            return
        recovered = None
        for f in facts[pos + 1 :]:
            if f.broker == x and f.kind == "log_loaded":
                recovered = f.offset
                break
            if f.broker == x and f.kind == "become_leader":
                break
        leo = len(st.replicas[i].log)
        if recovered is not None and recovered < leo:
            if st.replicas[i].flushed != recovered:
                _place_flush(b, x, recovered, amb)
            b.emit(
                b.ev("power_loss", x),
                f"{x} restarts with LEO {recovered} < {leo}: the unflushed tail was lost",
            )
        else:
            if recovered is not None and recovered > leo:
                amb.append(
                    f"{x} recovered LEO {recovered} on restart but the reconstruction has it "
                    f"at {leo}: records it copied are missing from the acked list"
                )
            b.emit(b.ev("crash", x), f"{x} stopped without a clean shutdown")

    last_fetch: dict[str, int] = {}

    def fetch(x: str, why: str) -> None:
        st = b.state()
        i = b.idx[x]
        rep = st.replicas[i]
        lead = st.controller.leader
        if lead in (NO_LEADER, i) or not rep.alive or rep.paused:
            return
        if last_fetch.get(x) == len(b.steps):
            return
        for _ in range(2):
            b.emit(b.ev("fetch", x), why)
        last_fetch[x] = len(b.steps)

    logged = {f.broker for f in facts if f.kind in _PARTITION_KINDS}
    # Controller decisions (elections, failures seen) in the logs at all?
    has_controller = any(g.kind in ("election", "broker_failure") for g in facts)
    restarted: set[str] = set()
    lagging: set[str] = set()  # followers a leader logged out of the ISR (until they rejoin)
    copy_cap: dict[str, int] = {}  # follower -> LEO a shrink line states for it
    split_done: list[bool] = []
    registering: set[str] = set()  # started again, not yet registered with the controller
    # Before KIP-101 a follower truncates to its HW (after a restart: the checkpoint's).
    hw_truncation = not b.scenario().config(version.generation).generation.epoch_truncation
    for pos, f in enumerate(facts):
        b.cite = f.cite
        x = subject(f)
        if x is None or x not in b.idx:
            continue
        if f.kind in ("start", "shutdown_begin", "broker_failure") and (
            f.kind != "start" or x in started
        ):
            # Records are produced as late as the term allows: just before the next
            # disruption, so that later facts bound what each replica copied.
            produce_pending(pos - 1)
        if f.kind == "start":
            if x not in started:
                started.add(x)
                continue
            restarted.add(x)
            registering.add(x)
            crash(x, pos)
            if hw_truncation:
                trunc = _restart_truncation(facts, pos, x)
                if trunc is not None:
                    b.emit(
                        Event("stale_checkpoint", replica=b.idx[x], value=trunc),
                        f"{x} truncates to {trunc} on restart: its "
                        f"replication-offset-checkpoint said {trunc}",
                    )
            b.emit(b.ev("restart", x), f"{x} starts again ({f.ts:%H:%M:%S})")
        elif f.kind == "shutdown_begin":
            st = b.state()
            if st.replicas[b.idx[x]].alive:
                b.emit(b.ev("clean_shutdown", x), f"{x} controlled shutdown")
        elif f.kind == "broker_added":
            registering.discard(x)
        elif f.kind == "broker_failure":
            if x in registering:
                # KRaft fences the previous incarnation's session after the broker started
                # again ("Fencing broker 1 at epoch 10 because its session has timed out").
                continue
            down_fact[x] = f
            crash(x, pos)
            st = b.state()
            if b.idx[x] in st.controller.live:
                held = (
                    _unheard(facts, pos, x, replicas, st, b.idx, logged, names)
                    if st.controller.leader == b.idx[x]
                    else frozenset()
                )
                why = f"controller: broker {by_name.get(x, x)} failed"
                if held:
                    why += (
                        f"; {', '.join(replicas[i] for i in sorted(held))} logs no leader change "
                        "afterwards: its LeaderAndIsr never arrived (inferred)"
                    )
                b.emit(Event("detect", replica=b.idx[x], hold=held), why)
        if (
            f.kind in ("truncate", "become_follower", "leader_and_isr")
            and f.broker == x
            and not b.state().replicas[b.idx[x]].alive
        ):
            # It logs again without a start line: it was cut off (its session expired), not
            # dead; played as a crash whose restart keeps the log (page cache intact).
            b.emit(
                b.ev("restart", x),
                f"inferred: {x} logs again without starting: it was cut off, not dead",
            )
            restarted.add(x)
        if f.kind == "truncate" and x in restarted and "high watermark (pre-0.11" not in f.detail:
            if "no effect" in f.detail or "epoch" in f.detail.lower() or "Offsets" in f.detail:
                fetch(x, f"{x} truncation decision: {f.detail or 'truncate'} to {f.offset}")
        elif f.kind == "isr_change" and f.detail == "shrinking" and f.broker in b.idx:
            if f.offset >= 0 and split_at is None:
                # 2.x+ shrink lines state the leader's LEO and each dropped follower's: the
                # records below the leader's LEO were written before the shrink, and each
                # dropped follower held exactly its stated LEO.
                caps = {
                    names.get(int(i), ""): int(o)
                    for i, o in re.findall(r"brokerId: (\d+), endOffset: (\d+)", f.line)
                }
                before = [a for a in pending if 0 <= a.offset < f.offset]
                rest = [a for a in pending if a not in before]
                if before and not synth:
                    pending[:] = before
                    copy_cap.update(caps)
                    produce_pending(pos - 1)
                    copy_cap.clear()
                    pending.extend(rest)
            if split_at is not None and not split_done:
                # The producer's records carry no times: ``split_at`` of them were written
                # before the leader dropped the follower, the rest after.
                # Of those, the dropped followers (which stopped fetching before the leader
                # noticed) copied the first ``copied_before``.
                split_done.append(True)
                rest = pending[split_at:]
                del pending[split_at:]
                if copied_before < len(pending) and pending[copied_before].offset >= 0:
                    cap = pending[copied_before].offset
                    for dropped in replicas:
                        if dropped != f.broker and by_name.get(dropped, -9) not in f.isr:
                            copy_cap[dropped] = cap
                produce_pending(pos - 1)
                copy_cap.clear()
                pending.extend(rest)
            st = b.state()
            for i in st.controller.isr:
                n = replicas[i]
                if n != f.broker and by_name.get(n, -9) not in f.isr and by_name.get(n, -9) >= 0:
                    lagging.add(n)
                    if st.controller.leader == b.idx[f.broker]:
                        b.emit(b.ev("isr_shrink", n), f"{f.broker} drops {n} from the ISR")
        elif f.kind == "isr_change" and f.detail in ("expanding", "updated"):
            for i in f.isr:
                n = names.get(i)
                if n is not None:
                    lagging.discard(n)
            for i in f.isr:
                n = names.get(i)
                if n is not None and n in b.idx and n != f.broker:
                    st = b.state()
                    if b.idx[n] not in st.controller.isr:
                        fetch(n, f"{n} rejoins the ISR")
        elif f.kind in ("become_leader", "become_leader_010") and (
            f.offset >= 0 or f.kind == "become_leader_010"
        ):
            st = b.state()
            lead = st.controller.leader
            me = b.idx.get(f.broker, -9)
            if lead != me and not has_controller and st.replicas[me].alive:
                # The controller's logs are missing: the election is known only from the new
                # leader's own line. The old leader either failed (its logs say nothing more
                # until it starts again) or was moved away while alive.
                old = replicas[lead] if lead != NO_LEADER else None
                produce_pending(pos - 1)
                if old is not None and st.replicas[lead].alive and _silent_after(facts, pos, old):
                    crash(old, pos)
                    b.emit(
                        b.ev("detect", old),
                        f"inferred: {f.broker} leads from here but {old} logs nothing more until "
                        "it starts again: it failed (no controller log says so)",
                    )
                if b.state().controller.leader != me:
                    b.emit(
                        b.ev("elect", f.broker),
                        f"inferred: {f.broker} logs becoming leader; no controller log says why",
                    )
                st = b.state()
                lead = st.controller.leader
            if lead != me and f.kind == "become_leader":
                amb.append(
                    f"{f.ts:%H:%M:%S} {f.broker} logged leadership (epoch {f.epoch}) while the "
                    f"model has {replicas[lead] if lead != NO_LEADER else 'no leader'}"
                )
    produce_pending(len(facts))
    if synth:
        amb.append(
            "no --acked file: records are named by offset and leader epoch (o<offset>e<epoch>) "
            "and counted from the LEOs the logs state; which of them were acknowledged is unknown"
        )
    unsure = [a.record for a in pending if a.status != "acked"]
    if unsure:
        amb.append(
            f"not acknowledged and not placed by any fact: {', '.join(unsure)}; read as never "
            "appended (the producer's error does not say whether a leader appended them)"
        )
    for a in [a for a in pending if a.status == "acked"]:
        amb.append(
            f"record {a.record} acknowledged at offset {a.offset} fits no leader the logs show"
        )
    # A live follower whose last word is that it follows the current leader (and started
    # its fetcher) copies what that leader holds: the logs may end before any line says so.
    st = b.state()
    lead = st.controller.leader
    if lead != NO_LEADER:
        lid = by_name.get(replicas[lead], -9)
        for x in replicas:
            last = [
                f
                for f in facts
                if f.broker == x
                and f.kind in ("become_follower", "leader_and_isr", "become_leader", "start")
            ]
            if (
                last
                and last[-1].kind in ("become_follower", "leader_and_isr")
                and last[-1].leader == lid
            ):
                fetch(x, f"{x} follows {replicas[lead]} with its fetcher started")
    # Otherwise no catch-up at the end: a live follower that logged nothing since the last
    # leadership change (no truncation, no return to the ISR) may never have fetched from the
    # new leader (found by kip279 on 3.3.1-kraft: A kept m2 while B led with m3).
    sc = b.scenario()
    res = b.result()
    status = {a.record: a.status for a in acked} if acked is not None else None
    return Reconstruction(sc, res, version, facts, names, amb, list(b.why), producer=status)


_COPIES = re.compile(r"^(\S+) copies offset (\d+)$")


def _uncopy(b: _Builder, x: str, offset: int) -> bool:
    """Drop the fetch steps by which ``x`` copied offsets >= ``offset``; True if any."""
    keep = [
        k
        for k, why in enumerate(b.why)
        if not ((m := _COPIES.match(why)) and m.group(1) == x and int(m.group(2)) >= offset)
    ]
    if len(keep) == len(b.steps):
        return False
    b.steps = [b.steps[k] for k in keep]
    b.why = [b.why[k] for k in keep]
    b._result = None
    return True


_HEARD = (
    "become_follower",
    "become_leader",
    "leader_and_isr",
    "become_follower_010",
    "become_leader_010",
    "truncate",
)


def _unheard(
    facts: list[Fact],
    pos: int,
    failed: str,
    replicas: list[str],
    st: Any,
    idx: dict[str, int],
    logged: set[str],
    names: dict[int, str],
) -> frozenset[int]:
    """Live followers whose own logs never show the leader change that follows ``failed``'s
    failure (no follower/leader line, no truncation, up to its own next start) and that the
    controller never sees fail: the LeaderAndIsr was held back from them (the KIP-320
    zombie follower)."""
    ids = {n: i for i, n in names.items()}
    out = set()
    for r in replicas:
        i = idx[r]
        if r == failed or r not in logged or not st.replicas[i].alive:
            continue
        heard = False
        for f in facts[pos + 1 :]:
            if f.kind == "broker_failure" and f.broker_id == ids.get(r, -9):
                heard = True  # it died before it could log the change: not a zombie
                break
            if f.broker != r:
                continue
            if f.kind == "start":
                break
            if f.kind in _HEARD:
                heard = True
                break
        if not heard:
            out.add(i)
    return frozenset(out)


def _silent_after(facts: list[Fact], pos: int, x: str) -> bool:
    """``x`` logs nothing about the partition or itself after ``pos`` until it starts again."""
    for f in facts[pos + 1 :]:
        if f.broker != x:
            continue
        return f.kind == "start"
    return True


def _place_flush(b: _Builder, x: str, leo: int, amb: list[str]) -> None:
    """Insert ``flush x`` after the last step at which ``x`` held exactly ``leo`` records."""
    res = b.result()
    i = b.idx[x]
    at = None
    for s in res.steps:
        r = s.state.replicas[i]
        if r.alive and len(r.log) == leo:
            at = s.index
    if at is None:
        amb.append(f"{x} recovered to LEO {leo}, a length its log never had in the reconstruction")
        return
    b.insert(at, b.ev("flush", x), f"{x}'s log was durable up to offset {leo}")


def _restart_truncation(facts: list[Fact], pos: int, x: str) -> int | None:
    """The offset ``x`` truncated to as a follower right after (re)starting, if logged."""
    for f in facts[pos + 1 :]:
        if f.broker != x:
            continue
        if f.kind in ("start", "become_leader", "become_leader_010"):
            return None
        if f.kind == "truncate":
            return f.offset
    return None


def order_facts(brokers: Sequence[BrokerLogs], order: Sequence[str] | None) -> list[Fact]:
    """All brokers' facts in time order; with ``order`` (broker names), the facts of brokers
    whose lines carry no timestamp are played as blocks in that order (a gap the logs leave:
    each ordering that fits is played by :func:`explain`)."""
    key = lambda f: (f.ts, f.broker, f.seq)  # noqa: E731
    facts = sorted((f for b in brokers for f in b.facts), key=key)
    if order is None:
        return facts
    rank = {n: k for k, n in enumerate(order)}
    timed = [f for f in facts if f.timed]
    untimed = sorted(
        (f for f in facts if not f.timed), key=lambda f: (rank.get(f.broker, 99), f.seq)
    )
    return timed + untimed


def _initial_leader(facts: list[Fact], names: dict[int, str], replicas: list[str]) -> str:
    for f in facts:
        if f.kind == "fatal_truncation" and f.leader >= 0 and names.get(f.leader) in replicas:
            return names[f.leader]
        if f.kind in ("leader_and_isr", "election", "become_follower") and f.leader >= 0:
            n = names.get(f.leader)
            if n in replicas:
                return n
        if f.kind == "become_leader" and f.broker in replicas:
            return f.broker
    return replicas[0]


_UNCLEAN_CONF = re.compile(r"unclean\.leader\.election\.enable\s*(?:->|=)\s*(true|false)")
_MIN_ISR_CONF = re.compile(r"min\.insync\.replicas\s*(?:->|=)\s*(\d+)")


def _unclean_from_config(facts: Sequence[Fact]) -> bool | None:
    """unclean.leader.election.enable as the broker logged it when creating the log."""
    for f in facts:
        if f.kind == "log_created":
            m = _UNCLEAN_CONF.search(f.detail)
            if m:
                return m.group(1) == "true"
    return None


def _min_insync_from_logs(facts: Sequence[Fact]) -> int | None:
    for f in facts:
        if f.kind == "log_created":
            m = _MIN_ISR_CONF.search(f.detail)
            if m:
                return int(m.group(1))
    return None
