"""The walk through the facts: each fact, in time order, becomes the scenario steps that
make the reference model agree with it (see :mod:`harness.replay.reconstruct` for the
readings). The state the walk keeps between facts (records still to place, followers out
of the ISR, brokers started) lives on :class:`Replay` so each handler names what it uses.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from harness.replay.factscan import (
    initial_leader,
    min_insync_from_logs,
    order_facts,
    restart_truncation,
    running_at_start,
    silent_after,
    unclean_from_config,
    unheard,
)
from harness.replay.parse import PARTITION_KINDS as _PARTITION_KINDS
from harness.replay.parse import BrokerLogs, Fact, ReplayError
from harness.replay.steps import (
    MAX_SYNTH,
    Acked,
    Reconstruction,
    StepBuilder,
    before_shrink,
    place_flush,
    uncopy,
)
from harness.replay.versions import VersionInfo
from reference_model.events import Event
from reference_model.state import NO_LEADER


class Replay:
    """One reconstruction in the making: the options of :func:`reconstruct` and the state
    carried from fact to fact."""

    def __init__(
        self,
        brokers: Sequence[BrokerLogs],
        version: VersionInfo,
        acked: list[Acked] | None,
        acks: str | None,
        min_insync: int | None,
        name: str,
        power_loss_first: bool,
        append_unsure: bool,
        order: Sequence[str] | None,
        copy_unsure: frozenset[str],
        split_at: int | None,
        copied_before: int,
    ) -> None:
        self.version = version
        self.acked = acked
        self.power_loss_first = power_loss_first
        self.append_unsure = append_unsure
        self.copy_unsure = copy_unsure
        self.split_at = split_at
        self.copied_before = copied_before
        self.names = {b.broker_id: b.name for b in brokers if b.broker_id >= 0}
        self.facts = order_facts(brokers, order)
        self.replicas = sorted(
            {
                f.broker
                for f in self.facts
                if (f.kind in _PARTITION_KINDS and f.kind != "isr_change")
                or f.kind in ("fatal_truncation", "out_of_order", "hw_regression", "epoch_error")
                or (f.kind == "isr_change" and f.detail in ("shrinking", "expanding"))
            }
            | {b.name for b in brokers if b.peer_only}
        )
        if not self.replicas:
            raise ReplayError(
                "the lines about the partition name no replica (only controller decisions): "
                "add a replica broker's server.log or state-change.log"
            )
        self.amb: list[str] = []
        self.by_name = {n: i for i, n in self.names.items()}

        leader0 = initial_leader(self.facts, self.names, self.replicas)
        conf_unclean = unclean_from_config(self.facts)
        unclean = bool(conf_unclean) or any(f.kind == "unclean_election" for f in self.facts)
        if conf_unclean is None and not unclean:
            self.amb.append("unclean.leader.election.enable not in the logs: assumed false")
        self.acks_v = acks or (
            "all" if self.acked and any(a.status == "refused" for a in self.acked) else "1"
        )
        mis = min_insync if min_insync is not None else min_insync_from_logs(self.facts) or 1
        mis = min(mis, len(self.replicas))
        self.b = StepBuilder(
            self.replicas, leader0, self.version.generation, self.acks_v, mis, unclean, name
        )
        self.pending = list(self.acked or [])

        # Brokers already running where the input begins: their first start line is a
        # restart, not their first start (see :func:`running_at_start`).
        self.started: set[str] = running_at_start(self.facts)
        self.down_fact: dict[str, Fact] = {}

        self.synth = self.acked is None
        self.synth_n = [0]

        self.last_fetch: dict[str, int] = {}

        self.logged = {f.broker for f in self.facts if f.kind in _PARTITION_KINDS}
        # Controller decisions (elections, failures seen) in the logs at all?
        self.has_controller = any(g.kind in ("election", "broker_failure") for g in self.facts)
        self.restarted: set[str] = set()
        # Followers a leader logged out of the ISR (until they rejoin).
        self.lagging: set[str] = set()
        self.copy_cap: dict[str, int] = {}  # follower -> LEO a shrink line states for it
        self.split_done: list[bool] = []
        # Unacknowledged records an ISR-shrink line places (record -> the producer's status):
        # played like acknowledged ones at the offset the line implies.
        self.unacked_at: dict[str, str] = {}
        self.registering: set[str] = set()  # started again, not yet registered with the controller
        # Before KIP-101 a follower truncates to its HW (after a restart: the checkpoint's).
        self.hw_truncation = (
            not self.b.scenario().config(self.version.generation).generation.epoch_truncation
        )

    def run(self) -> Reconstruction:
        """Play the facts in order; the reconstruction they lead to."""
        for pos, f in enumerate(self.facts):
            self.play(pos, f)
        self.produce_pending(len(self.facts))
        if self.synth:
            self.amb.append(
                "no --acked file: records are named by offset and leader epoch "
                "(o<offset>e<epoch>) and counted from the LEOs the logs state; which of them were "
                "acknowledged is unknown"
            )
        unsure = [a.record for a in self.pending if a.status != "acked"]
        if unsure:
            self.amb.append(
                f"not acknowledged and not placed by any fact: {', '.join(unsure)}; read as never "
                "appended (the producer's error does not say whether a leader appended them)"
            )
        for a in [a for a in self.pending if a.status == "acked"]:
            self.amb.append(
                f"record {a.record} acknowledged at offset {a.offset} fits no leader the logs show"
            )
        # A live follower whose last word is that it follows the current leader (and started
        # its fetcher) copies what that leader holds: the logs may end before any line says so.
        st = self.b.state()
        lead = st.controller.leader
        if lead != NO_LEADER:
            lid = self.by_name.get(self.replicas[lead], -9)
            for x in self.replicas:
                last = [
                    f
                    for f in self.facts
                    if f.broker == x
                    and f.kind in ("become_follower", "leader_and_isr", "become_leader", "start")
                ]
                if (
                    last
                    and last[-1].kind in ("become_follower", "leader_and_isr")
                    and last[-1].leader == lid
                ):
                    self.fetch(x, f"{x} follows {self.replicas[lead]} with its fetcher started")
        # Otherwise no catch-up at the end: a live follower that logged nothing since the last
        # leadership change (no truncation, no return to the ISR) may never have fetched from the
        # new leader (found by kip279 on 3.3.1-kraft: A kept m2 while B led with m3).
        sc = self.b.scenario()
        res = self.b.result()
        status = {a.record: a.status for a in self.acked} if self.acked is not None else None
        return Reconstruction(
            sc,
            res,
            self.version,
            self.facts,
            self.names,
            self.amb,
            list(self.b.why),
            producer=status,
        )

    def play(self, pos: int, f: Fact) -> None:
        """Play one fact: the steps that make the model agree with it."""
        self.b.cite = f.cite
        x = self.subject(f)
        if x is None or x not in self.b.idx:
            return
        if f.kind in ("start", "shutdown_begin", "broker_failure") and (
            f.kind != "start" or x in self.started
        ):
            # Records are produced as late as the term allows: just before the next
            # disruption, so that later facts bound what each replica copied.
            self.produce_pending(pos - 1)
        if f.kind == "start":
            if x not in self.started:
                self.started.add(x)
                return
            self.restarted.add(x)
            self.registering.add(x)
            self.crash(x, pos)
            if self.hw_truncation:
                trunc = restart_truncation(self.facts, pos, x)
                if trunc is not None:
                    self.b.emit(
                        Event("stale_checkpoint", replica=self.b.idx[x], value=trunc),
                        f"{x} truncates to {trunc} on restart: its "
                        f"replication-offset-checkpoint said {trunc}",
                    )
            self.b.emit(self.b.ev("restart", x), f"{x} starts again ({f.ts:%H:%M:%S})")
        elif f.kind == "shutdown_begin":
            st = self.b.state()
            if st.replicas[self.b.idx[x]].alive:
                self.b.emit(self.b.ev("clean_shutdown", x), f"{x} controlled shutdown")
        elif f.kind == "broker_added":
            self.registering.discard(x)
        elif f.kind == "broker_failure":
            if x in self.registering:
                # KRaft fences the previous incarnation's session after the broker started
                # again ("Fencing broker 1 at epoch 10 because its session has timed out").
                return
            self.down_fact[x] = f
            self.crash(x, pos)
            st = self.b.state()
            if self.b.idx[x] in st.controller.live:
                held = (
                    unheard(
                        self.facts,
                        pos,
                        x,
                        self.replicas,
                        st,
                        self.b.idx,
                        self.logged,
                        self.names,
                    )
                    if st.controller.leader == self.b.idx[x]
                    else frozenset()
                )
                why = f"controller: broker {self.by_name.get(x, x)} failed"
                if held:
                    why += (
                        f"; {', '.join(self.replicas[i] for i in sorted(held))} logs no "
                        "leader change "
                        "afterwards: its LeaderAndIsr never arrived (inferred)"
                    )
                self.b.emit(Event("detect", replica=self.b.idx[x], hold=held), why)
        if (
            f.kind in ("truncate", "become_follower", "leader_and_isr")
            and f.broker == x
            and not self.b.state().replicas[self.b.idx[x]].alive
        ):
            # It logs again without a start line: it was cut off (its session expired), not
            # dead; played as a crash whose restart keeps the log (page cache intact).
            self.b.emit(
                self.b.ev("restart", x),
                f"inferred: {x} logs again without starting: it was cut off, not dead",
            )
            self.restarted.add(x)
        if (
            f.kind == "truncate"
            and x in self.restarted
            and "high watermark (pre-0.11" not in f.detail
        ):
            if "no effect" in f.detail or "epoch" in f.detail.lower() or "Offsets" in f.detail:
                self.fetch(x, f"{x} truncation decision: {f.detail or 'truncate'} to {f.offset}")
        elif f.kind == "isr_change" and f.detail == "shrinking" and f.broker in self.b.idx:
            if f.offset >= 0 and self.split_at is None:
                # 2.x+ shrink lines state the leader's LEO and each dropped follower's: the
                # records below the leader's LEO were written before the shrink, and each
                # dropped follower held exactly its stated LEO.
                caps = {
                    self.names.get(int(i), ""): int(o)
                    for i, o in re.findall(r"brokerId: (\d+), endOffset: (\d+)", f.line)
                }
                before = self._before_shrink(f)
                rest = [a for a in self.pending if a.record not in {b.record for b in before}]
                if before and not self.synth:
                    self.pending[:] = before
                    self.copy_cap.update(caps)
                    self.produce_pending(pos - 1)
                    self.copy_cap.clear()
                    self.pending.extend(rest)
            if self.split_at is not None and not self.split_done:
                # The producer's records carry no times: ``split_at`` of them were written
                # before the leader dropped the follower, the rest after.
                # Of those, the dropped followers (which stopped fetching before the leader
                # noticed) copied the first ``copied_before``.
                self.split_done.append(True)
                rest = self.pending[self.split_at :]
                del self.pending[self.split_at :]
                if (
                    self.copied_before < len(self.pending)
                    and self.pending[self.copied_before].offset >= 0
                ):
                    cap = self.pending[self.copied_before].offset
                    for dropped in self.replicas:
                        if dropped != f.broker and self.by_name.get(dropped, -9) not in f.isr:
                            self.copy_cap[dropped] = cap
                self.produce_pending(pos - 1)
                self.copy_cap.clear()
                self.pending.extend(rest)
            st = self.b.state()
            for i in st.controller.isr:
                n = self.replicas[i]
                if (
                    n != f.broker
                    and self.by_name.get(n, -9) not in f.isr
                    and self.by_name.get(n, -9) >= 0
                ):
                    self.lagging.add(n)
                    if st.controller.leader == self.b.idx[f.broker]:
                        self.b.emit(
                            self.b.ev("isr_shrink", n), f"{f.broker} drops {n} from the ISR"
                        )
        elif f.kind == "isr_change" and f.detail in ("expanding", "updated"):
            for i in f.isr:
                n = self.names.get(i)
                if n is not None:
                    self.lagging.discard(n)
            for i in f.isr:
                n = self.names.get(i)
                if n is not None and n in self.b.idx and n != f.broker:
                    st = self.b.state()
                    if self.b.idx[n] not in st.controller.isr:
                        self.fetch(n, f"{n} rejoins the ISR")
        elif f.kind in ("become_leader", "become_leader_010") and (
            f.offset >= 0 or f.kind == "become_leader_010"
        ):
            st = self.b.state()
            lead = st.controller.leader
            me = self.b.idx.get(f.broker, -9)
            if lead != me and not self.has_controller and st.replicas[me].alive:
                # The controller's logs are missing: the election is known only from the new
                # leader's own line. The old leader either failed (its logs say nothing more
                # until it starts again) or was moved away while alive.
                old = self.replicas[lead] if lead != NO_LEADER else None
                self.produce_pending(pos - 1)
                if (
                    old is not None
                    and st.replicas[lead].alive
                    and silent_after(self.facts, pos, old)
                ):
                    self.crash(old, pos)
                    self.b.emit(
                        self.b.ev("detect", old),
                        f"inferred: {f.broker} leads from here but {old} logs nothing more "
                        "until "
                        "it starts again: it failed (no controller log says so)",
                    )
                if self.b.state().controller.leader != me:
                    self.b.emit(
                        self.b.ev("elect", f.broker),
                        f"inferred: {f.broker} logs becoming leader; no controller log says why",
                    )
                st = self.b.state()
                lead = st.controller.leader
            if lead != me and f.kind == "become_leader":
                self.amb.append(
                    f"{f.ts:%H:%M:%S} {f.broker} logged leadership (epoch {f.epoch}) while the "
                    f"model has {self.replicas[lead] if lead != NO_LEADER else 'no leader'}"
                )

    def _before_shrink(self, f: Fact) -> list[Acked]:
        """The records written before the ISR-shrink line ``f`` (see :func:`before_shrink`)."""
        st = self.b.state()
        lead = st.controller.leader
        if lead != self.b.idx[f.broker]:
            return [a for a in self.pending if 0 <= a.offset < f.offset]
        out, placed = before_shrink(self.pending, len(st.replicas[lead].log), f.offset)
        self.unacked_at.update(placed)
        return out

    def subject(self, f: Fact) -> str | None:
        if f.kind in ("broker_failure", "broker_added"):
            return self.names.get(f.broker_id)
        return f.broker

    def next_leo_fact(self, x: str, after: int, follower: bool = False) -> int | None:
        """The next LEO the logs state for ``x`` after fact ``after``: how far it got."""
        for f in self.facts[after + 1 :]:
            if f.broker != x:
                continue
            if f.kind == "log_loaded" and follower and self.power_loss_first:
                continue
            if f.kind == "log_loaded" or (f.kind == "become_leader" and f.offset >= 0):
                return f.offset
        return None

    def synthesize(self, pos: int) -> None:
        """Without --self.acked: write as many records as the next stated LEO says existed.

        The target is the leader's own next stated LEO (recovered on restart, or the offset
        it starts leading from again) or, failing that, the offset the next leader starts
        from. Records are named by offset and leader epoch (``o1e0``).
        """
        st = self.b.state()
        lead = st.controller.leader
        if lead == NO_LEADER:
            return
        lname = self.replicas[lead]
        target = self.next_leo_fact(lname, pos)
        if target is None:
            # What any replica states before leadership moves: the LEO it recovers on
            # restart or starts leading from cannot exceed what this leader wrote.
            lid = self.by_name.get(lname, -9)
            seen: list[int] = []
            for f in self.facts[pos + 1 :]:
                if f.kind == "election" and f.leader not in (lid, -1):
                    break
                if f.kind == "become_leader" and f.broker != lname:
                    if f.offset >= 0:
                        seen.append(f.offset)
                    break
                if f.kind == "log_loaded" and f.broker in self.b.idx:
                    seen.append(f.offset)
            target = max(seen) if seen else None
        leo = len(st.replicas[lead].log)
        if target is not None and target - leo > MAX_SYNTH:
            self.amb.append(
                f"{lname} holds {target} records by the logs: too many to play one by one "
                f"(more than {MAX_SYNTH}); the verdict rests on the logged offsets alone"
            )
            target = None
        while target is not None and leo < target:
            rec = f"o{leo}e{st.replicas[lead].epoch}"
            self.synth_n[0] += 1
            self.pending.append(Acked(rec, leo, "acked"))
            leo += 1
        if self.pending:
            self._produce(pos)

    def produce_pending(self, pos: int) -> None:
        # Produce and copy steps rest on the producer's outcomes (or the stated LEOs), not
        # on the line being played: they cite none, and the timeline shows them inferred.
        cite, self.b.cite = self.b.cite, ""
        if self.synth:
            self.synthesize(pos)
        else:
            self._produce(pos)
        self.b.cite = cite

    def _produce(self, pos: int) -> None:
        while self.pending:
            a = self.pending[0]
            st = self.b.state()
            lead = st.controller.leader
            if a.status != "acked" or a.offset < 0:
                # Not acknowledged: it may still have been appended (the leader died before
                # answering). It was, if the leader later states more records than it has.
                cap, leo, lname = None, -1, ""
                if lead != NO_LEADER:
                    lname = self.replicas[lead]
                    leo = len(st.replicas[lead].log)
                    cap = self.next_leo_fact(lname, pos)
                    if a.offset == leo or (a.offset < 0 and cap is not None and cap > leo):
                        self.pending.pop(0)
                        self.b.emit(
                            Event("produce", record=a.record),
                            f"producer: {a.record} {a.status}, but appended by {lname} "
                            f"(it later holds {cap} records)",
                        )
                        if self.copy_unsure:
                            # The other reading: live followers that log nothing against it
                            # copied the unacknowledged record before the leader failed.
                            for fname in self.replicas:
                                fi = self.b.idx[fname]
                                rep = self.b.state().replicas[fi]
                                if (
                                    fi != lead
                                    and fname in self.copy_unsure
                                    and rep.alive
                                    and not rep.paused
                                ):
                                    fcap = self.next_leo_fact(fname, pos, follower=True)
                                    if fcap is None or fcap > leo:
                                        self.b.emit(
                                            self.b.ev("fetch", fname), f"{fname} copies {a.record}"
                                        )
                        continue
                if self.append_unsure and lead != NO_LEADER and (cap is None or cap > leo):
                    self.pending.pop(0)
                    self.b.emit(
                        Event("produce", record=a.record),
                        f"producer: {a.record} {a.status}; read as appended by {lname}",
                    )
                    continue
                nxt = next((n for n in self.pending[1:] if n.status == "acked"), None)
                if (
                    nxt is not None
                    and lead != NO_LEADER
                    and nxt.offset == len(st.replicas[lead].log)
                ):
                    self.pending.pop(0)  # never appended: nothing of it reached a log
                    continue
                return
            if lead == NO_LEADER:
                return
            lname = self.replicas[lead]
            leo = len(st.replicas[lead].log)
            cap = self.next_leo_fact(lname, pos)
            # A leader whose next stated LEO is at or below the offset did not write it
            # (the record belongs to a later leader), unless acks=all and every other ISR
            # member also comes back below it: then all held it and lost the unflushed tail.
            others = [self.replicas[i] for i in st.controller.isr if i != lead]
            all_lower = bool(others) and all(
                (c := self.next_leo_fact(n, pos)) is not None and c <= a.offset for n in others
            )
            # A follower that later states more records than the offset holds it: the leader
            # wrote it and lost it unflushed (kip966 on 4.0.0: A power-lost m1, B and C
            # came back with it).
            any_higher = any(
                (c := self.next_leo_fact(n, pos)) is not None and c > a.offset for n in others
            )
            capped = (
                cap is not None
                and cap <= a.offset
                and not (self.acks_v == "all" and all_lower)
                and not any_higher
            )
            # The new leader copied less than assumed: its term's first record sits below
            # its LEO. Take back the copies of the previous term beyond it.
            if (
                a.offset < leo
                and not capped
                and self.acks_v != "all"
                and uncopy(self.b, lname, a.offset)
            ):
                continue
            if a.offset != leo or capped:
                return
            self.pending.pop(0)
            self.b.emit(
                Event("produce", record=a.record),
                f"producer: {a.record} {self.unacked_at[a.record]}, but appended by {lname} at "
                f"offset {a.offset}: its ISR-shrink line states that many records"
                if a.record in self.unacked_at
                else f"producer: {a.record} acknowledged at offset {a.offset} by {lname}",
            )
            for fname in self.replicas:
                i = self.b.idx[fname]
                st = self.b.state()
                rep = st.replicas[i]
                if i == lead or not rep.alive or rep.paused or rep.leader != lead:
                    continue
                must = self.acks_v == "all" and i in st.controller.isr
                fcap = self.next_leo_fact(fname, pos, follower=True)
                if fname in self.lagging and not must:
                    continue  # the leader logged it out of the ISR: it was not fetching
                if fname in self.copy_cap and a.offset >= self.copy_cap[fname]:
                    continue  # the shrink line states this follower's LEO below the offset
                if must or fcap is None or fcap > a.offset:
                    for _ in range(2):
                        self.b.emit(self.b.ev("fetch", fname), f"{fname} copies offset {a.offset}")

    def crash(self, x: str, pos: int) -> None:
        st = self.b.state()
        i = self.b.idx[x]
        if not st.replicas[i].alive:
            return
        recovered = None
        for f in self.facts[pos + 1 :]:
            if f.broker == x and f.kind == "log_loaded":
                recovered = f.offset
                break
            if f.broker == x and f.kind == "become_leader":
                break
        leo = len(st.replicas[i].log)
        if recovered is not None and recovered < leo:
            if st.replicas[i].flushed != recovered:
                place_flush(self.b, x, recovered, self.amb)
            self.b.emit(
                self.b.ev("power_loss", x),
                f"{x} restarts with LEO {recovered} < {leo}: the unflushed tail was lost",
            )
        else:
            if recovered is not None and recovered > leo:
                self.amb.append(
                    f"{x} recovered LEO {recovered} on restart but the reconstruction has it "
                    f"at {leo}: records it copied are missing from the acked list"
                )
            self.b.emit(self.b.ev("crash", x), f"{x} stopped without a clean shutdown")

    def fetch(self, x: str, why: str) -> None:
        st = self.b.state()
        i = self.b.idx[x]
        rep = st.replicas[i]
        lead = st.controller.leader
        if lead in (NO_LEADER, i) or not rep.alive or rep.paused:
            return
        if self.last_fetch.get(x) == len(self.b.steps):
            return
        for _ in range(2):
            self.b.emit(self.b.ev("fetch", x), why)
        self.last_fetch[x] = len(self.b.steps)
