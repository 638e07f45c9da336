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

from harness.db.catalogue.versions import CATALOGUE
from harness.replay.parse import BrokerLogs, Fact, ReplayError
from reference_model.events import Event
from reference_model.profiles import generation
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
class VersionInfo:
    name: str  # as read from the logs (catalogue name when known)
    release: str
    generation: str
    kraft: bool = False
    ibp: str = ""


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


def _era(release: str) -> str:
    nums = [int(x) for x in re.findall(r"\d+", release)[:2]] + [0, 0]
    major, minor = nums[0], nums[1]
    if (major, minor) < (0, 11):
        return "hw"
    if (major, minor) < (2, 0):
        return "kip101"
    if (major, minor) == (2, 0):
        return "kip279"
    return "kip320"


def _number(text: str) -> tuple[int, ...]:
    m = re.match(r"\d+(?:\.\d+)*", text)
    return tuple(int(x) for x in m.group(0).split(".")) if m else ()


def _profile(release: str, kraft: bool, ibp: str) -> tuple[str, str]:
    """(version name, model generation) for a release the catalogue may not list.

    Tries the version profiles (``3.4.0``, ``3.5.1-kraft``, ``2.8.2-ibp0.10``) and falls back
    to the era aliases (``hw``, ``kip101``, ``kip279``, ``kip320``).
    """

    rel = _number(release)
    names = []
    if kraft and rel < (4, 0):
        names.append(f"{release}-kraft")
    ib = _number(ibp)
    if ib and not kraft and ib[:2] < rel[:2]:
        names.append(f"{release}-ibp{'.'.join(str(x) for x in ib[:2])}")
    names.append(release)
    for n in names:
        if n in CATALOGUE:
            return n, CATALOGUE[n].generation
    try:
        for n in names:
            try:
                generation(n)
                return n, n
            except ValueError:
                continue
    except ImportError:  # pragma: no cover - older model without profiles
        pass
    gen = _era(ibp) if ib and ib[:2] < rel[:2] else _era(release)
    return names[0], gen


def detect_version(brokers: Sequence[BrokerLogs], override: str | None) -> VersionInfo:
    """The Kafka version the logs were written by, and the model generation for it."""

    if override:
        if override in CATALOGUE:
            v = CATALOGUE[override]
            return VersionInfo(override, v.release, v.generation, "kraft" in override)
        name, gen = _profile(override, "kraft" in override, "")
        return VersionInfo(override, override, gen, "kraft" in override)
    replicas = [b for b in brokers if any(f.kind in _PARTITION_KINDS for f in b.facts)]
    seen = [b.version for b in (replicas or list(brokers)) if b.version]
    release = max(set(seen), key=seen.count) if seen else ""
    kraft = any(b.kraft for b in brokers)
    ibps = [b.ibp for b in replicas if b.ibp] or [b.ibp for b in brokers if b.ibp]
    ibp = ibps[0] if ibps else ""
    if not release and ibp:
        # No "Kafka version" line: the inter-broker protocol in the config dump
        # (e.g. 0.10.2-IV0) names the release line; take its catalogue entry.
        stem = ".".join(str(x) for x in _number(ibp))
        known = [v for v in CATALOGUE.values() if stem and v.release.startswith(stem)]
        if known:
            release = known[-1].release
    if not release:
        return VersionInfo("unknown", "", "kip320", kraft, ibp)
    name, gen = _profile(release, kraft, ibp)
    return VersionInfo(name, release, gen, kraft, ibp)


_PARTITION_KINDS = {
    "log_loaded",
    "log_recovery",
    "hw_loaded",
    "become_leader",
    "become_follower",
    "leader_and_isr",
    "become_leader_010",
    "become_follower_010",
    "truncate",
    "isr_change",
}


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
        self.why.append(why)
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
) -> Reconstruction:
    """One reconstruction. ``power_loss_first`` picks the other reading of a follower that
    comes back with fewer records than its leader wrote: it copied them and lost the
    unflushed tail to a power failure (instead of: it never copied them). ``append_unsure``
    reads a record the producer saw fail, that no later fact places, as appended by the
    leader of the first moment that could hold it (instead of: never appended)."""
    names = {b.broker_id: b.name for b in brokers if b.broker_id >= 0}
    facts = sorted((f for b in brokers for f in b.facts), key=lambda f: (f.ts, f.broker, f.seq))
    replicas = sorted(
        {f.broker for f in facts if f.kind in _PARTITION_KINDS and f.kind != "isr_change"}
    )
    if not replicas:
        raise ReplayError("no broker log mentions the partition: wrong --topic/--partition?")
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
        while target is not None and leo < target:
            rec = f"o{leo}e{st.replicas[lead].epoch}"
            synth_n[0] += 1
            pending.append(Acked(rec, leo, "acked"))
            leo += 1
        if pending:
            _produce(pos)

    def produce_pending(pos: int) -> None:
        if synth:
            synthesize(pos)
        else:
            _produce(pos)

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
            capped = cap is not None and cap <= a.offset and not (acks_v == "all" and all_lower)
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

    restarted: set[str] = set()
    registering: set[str] = set()  # started again, not yet registered with the controller
    # Before KIP-101 a follower truncates to its HW (after a restart: the checkpoint's).
    hw_truncation = not b.scenario().config(version.generation).generation.epoch_truncation
    for pos, f in enumerate(facts):
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
                b.emit(b.ev("detect", x), f"controller: broker {by_name.get(x, x)} failed")
        elif f.kind == "truncate" and x in restarted and "high watermark (pre-0.11" not in f.detail:
            if "no effect" in f.detail or "epoch" in f.detail.lower() or "Offsets" in f.detail:
                fetch(x, f"{x} truncation decision: {f.detail or 'truncate'} to {f.offset}")
        elif f.kind == "isr_change" and f.detail in ("expanding", "updated"):
            for i in f.isr:
                n = names.get(i)
                if n is not None and n in b.idx and n != f.broker:
                    st = b.state()
                    if b.idx[n] not in st.controller.isr:
                        fetch(n, f"{n} rejoins the ISR")
        elif f.kind == "become_leader" and f.offset >= 0:
            st = b.state()
            lead = st.controller.leader
            if lead != b.idx.get(f.broker, -9):
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


def _initial_leader(facts: list[Fact], names: dict[int, str], replicas: list[str]) -> str:
    for f in facts:
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


def _outcome(rec: Reconstruction) -> tuple[Any, ...]:
    res = rec.result
    return (
        tuple(sorted(rec.lost_acked)),
        tuple(res.divergent_offsets),
        tuple(tuple(e.record for e in r.log) for r in res.final.replicas),
    )


def explain(
    brokers: Sequence[BrokerLogs],
    version: VersionInfo,
    acked: list[Acked] | None,
    acks: str | None,
    min_insync: int | None,
    name: str = "replay",
) -> Reconstruction:
    """The reconstruction, with the other reading of the logs listed when it fits too.

    A follower whose recovered LEO is below what its leader wrote either never copied the
    tail or copied it and lost it unflushed; the logs cannot tell (acks=1 acknowledges
    before followers copy). Both are played; when their verdicts differ, the ambiguity
    names both, with the steps of the second.
    """
    main = reconstruct(brokers, version, acked, acks, min_insync, name)
    alt = reconstruct(brokers, version, acked, acks, min_insync, name, power_loss_first=True)
    if _outcome(alt) != _outcome(main) and len(alt.ambiguities) <= len(main.ambiguities):
        a = alt.result
        steps = "; ".join(e.describe(a.config.brokers) for e in alt.scenario.steps)
        main.ambiguities.append(
            "two orderings fit the logs: the one above (followers never copied what they "
            "lack after restart), or they copied it and lost it unflushed to a power failure "
            f"- then lost acknowledged writes {alt.lost_acked or 'none'}, divergent offsets "
            f"{a.divergent_offsets or 'none'}; its steps: {steps}"
        )
        main.alternatives.append(alt)
    if any("not placed by any fact" in a for a in main.ambiguities):
        alt = reconstruct(brokers, version, acked, acks, min_insync, name, append_unsure=True)
        if _outcome(alt) != _outcome(main):
            a = alt.result
            steps = "; ".join(e.describe(a.config.brokers) for e in alt.scenario.steps)
            logs = {
                n: [e.record for e in r.log]
                for n, r in zip(a.config.brokers, a.final.replicas, strict=True)
            }
            main.ambiguities.append(
                "or they were appended: then final logs "
                f"{logs}, lost acknowledged writes {alt.lost_acked or 'none'}, divergent "
                f"offsets {a.divergent_offsets or 'none'}; its steps: {steps}"
            )
            main.alternatives.append(alt)
    return main
