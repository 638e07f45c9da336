"""Scenarios as data: parsing and validating a scenario document (already loaded from YAML).

The model stays pure, so this module takes a mapping and a source name and never opens a
file; ``harness.generator.scenarios`` does the reading. Every error names the source, the
step and what is wrong, in one line.

Document shape::

    name: kip101-scenario1
    description: what it shows
    fixed_by: kip101              # generation that closes it (informational)
    brokers: [A, B]               # or omit and give topic.replication_factor
    leader: B                     # initial leader (default: first broker)
    topic: {replication_factor: 2, min_insync_replicas: 1, unclean_leader_election: false}
    producer: {acks: 1}           # 0 | 1 | all
    steps:
      - produce: m1               # or {record: m1, to: A}
      - fetch: A                  # broker, or an alias: leader | followers | all
      - crash: B
      - detect: {broker: B, hold: [C]}
      - stale_checkpoint: {broker: A, hw: 0}
      - elect: {broker: A, unclean: true}
      - partition: {from: A, to: [B, controller]}   # both ways; one_way: true for A->X only
      - heal: A                   # every cut link of A; 'heal: all', or {from: A, to: [B]}
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from reference_model.events import ALIAS_NAMES, NODE_NAMES, Event, node_name
from reference_model.kinds import KINDS
from reference_model.profiles import Generation, generation
from reference_model.state import Config

ALIASES = ("leader", "followers", "all")
_ALIAS_INDEX = {name: idx for idx, name in ALIAS_NAMES.items()}
_ACKS = {"0": "0", "1": "1", "all": "all", "-1": "all"}


class ScenarioError(ValueError):
    """A malformed scenario; the message is one line naming file, step and problem."""


@dataclass(frozen=True)
class Expect:
    """What a scenario file says must happen (``expect:``), checked by the pytest plugin.

    Each part is optional (None: not checked). ``replicas`` gives every named replica's
    final log as its records in offset order.
    """

    lost_acked: tuple[str, ...] | None = None
    divergent_offsets: tuple[int, ...] | None = None
    replicas: tuple[tuple[str, tuple[str, ...]], ...] | None = None

    def to_document(self) -> dict[str, Any]:
        doc: dict[str, Any] = {}
        if self.lost_acked is not None:
            doc["lost_acked"] = list(self.lost_acked)
        if self.divergent_offsets is not None:
            doc["divergent_offsets"] = list(self.divergent_offsets)
        if self.replicas is not None:
            doc["replicas"] = {n: list(r) for n, r in self.replicas}
        return doc


@dataclass(frozen=True)
class Scenario:
    """A validated scenario: topic/producer settings plus its ordered steps."""

    name: str
    source: str
    description: str
    fixed_by: str
    brokers: tuple[str, ...]
    leader: int
    acks: str
    min_insync: int
    unclean: bool
    steps: tuple[Event, ...]
    records_per_produce: int = 1
    rf_flexible: bool = False  # brokers not listed: steps use aliases, --rf may grow it
    raw_steps: tuple[str, ...] = field(default=())  # each step as written, for reports
    expect: Expect | None = None  # the file's ``expect:`` block (pytest plugin checks it)

    def config(self, gen: Generation | str) -> Config:
        g = generation(gen) if isinstance(gen, str) else gen
        return Config(self.brokers, g, self.acks, self.min_insync, self.unclean)

    @property
    def rf(self) -> int:
        return len(self.brokers)

    def settings_text(self) -> str:
        """The settings in force, in Kafka's own config names (printed by model and run)."""
        return (
            f"acks={self.acks} min.insync.replicas={self.min_insync} "
            f"unclean.leader.election.enable={str(self.unclean).lower()} "
            f"replication.factor={self.rf} (brokers {', '.join(self.brokers)}; "
            f"leader {self.brokers[self.leader]})"
        )

    def with_overrides(
        self,
        *,
        acks: str | None = None,
        min_insync: int | None = None,
        unclean: bool | None = None,
        rf: int | None = None,
        records: int | None = None,
    ) -> Scenario:
        """Apply command-line overrides (the matrix's config grid).

        The replication factor applies only to scenarios written with aliases
        (``leader``/``followers``/``all``, no ``brokers`` list): a scenario that names its
        brokers keeps its own, since extra replicas that no step drives would sit in the ISR
        and stall the HW. A smaller one is refused if a step names a broker that would
        disappear.
        """
        s = self
        if acks is not None:
            s = replace(s, acks=_parse_acks(acks, s.source))
        if min_insync is not None:
            s = replace(s, min_insync=min_insync)
        if unclean is not None:
            s = replace(s, unclean=unclean)
        if records is not None:
            if records < 1:
                raise ScenarioError(f"{s.source}: records must be >= 1, got {records}")
            s = replace(s, records_per_produce=records)
        if rf is not None and rf != len(s.brokers) and s.rf_flexible:
            if not 1 <= rf <= 5:
                raise ScenarioError(f"{s.source}: replication factor must be 1..5, got {rf}")
            used = {e.replica for e in s.steps if e.replica >= 0} | {s.leader}
            if rf < len(s.brokers) and max(used) >= rf:
                raise ScenarioError(
                    f"{s.source}: cannot lower replication factor to {rf}: steps name "
                    f"broker {s.brokers[max(used)]}"
                )
            if rf > len(s.brokers):
                extra = [n for n in _default_names(10) if n not in s.brokers]
                brokers = s.brokers + tuple(extra[: rf - len(s.brokers)])
            else:
                brokers = s.brokers[:rf]
            s = replace(s, brokers=brokers)
        if s.min_insync > len(s.brokers):
            raise ScenarioError(
                f"{s.source}: min.insync.replicas {s.min_insync} exceeds replication factor "
                f"{len(s.brokers)}"
            )
        return s


def _show(value: Any) -> str:
    """A value for an error message: scalars as written, containers by kind only.

    ``repr`` of a YAML document built from aliases can be exponentially large (nested
    ``*a`` references), so a one-line message never prints a container.
    """
    if value is None or isinstance(value, bool | int | float):
        return repr(value)
    if isinstance(value, str):
        return repr(value if len(value) <= 40 else value[:40] + "...")
    if isinstance(value, Mapping):
        return "a mapping"
    if isinstance(value, list | tuple):
        return "a list"
    return f"a {type(value).__name__}"


# The keys each level of a scenario file accepts. Kafka's own config names are accepted as
# aliases where they mean the same thing, so a file written by someone who knows the broker
# config (``min.insync.replicas: 2``) is read as they meant it instead of silently ignored.
TOP_KEYS = (
    "name",
    "description",
    "fixed_by",
    "brokers",
    "leader",
    "topic",
    "producer",
    "steps",
    "expect",
)
TOPIC_KEYS = ("replication_factor", "min_insync_replicas", "unclean_leader_election")
TOPIC_ALIASES = {
    "replication.factor": "replication_factor",
    "min.insync.replicas": "min_insync_replicas",
    "unclean.leader.election.enable": "unclean_leader_election",
}
PRODUCER_KEYS = ("acks",)
PRODUCER_ALIASES = {"request.required.acks": "acks"}  # the 0.8 producer's name
EXPECT_KEYS = ("lost_acked", "divergent_offsets", "replicas")
BROKER_STEP_KEYS = ("broker", "hold", "unclean", "hw")
PRODUCE_KEYS = ("record", "to")
LINK_KEYS = ("from", "to", "one_way")
# Where a key that belongs elsewhere usually ends up: named in the error so the fix is obvious.
_HOME = {
    **{k: "topic" for k in (*TOPIC_KEYS, *TOPIC_ALIASES)},
    **{k: "producer" for k in (*PRODUCER_KEYS, *PRODUCER_ALIASES)},
}


def _closest(key: Any, valid: Mapping[str, str] | tuple[str, ...] | list[str]) -> str:
    """`` (did you mean 'x'?)`` for the nearest valid key, else the list of valid keys."""
    names = list(valid)
    text = str(key) if isinstance(key, str | int | float | bool) or key is None else ""
    match = difflib.get_close_matches(text.lower(), names, n=1, cutoff=0.6) if text else []
    if not match and text:
        # ``min_insync`` or ``insync`` for ``min_insync_replicas``: a prefix/substring is as
        # good a hint as an edit distance.
        folded = text.lower().replace(".", "_").replace("-", "_")
        match = [n for n in names if folded and (folded in n or n in folded)][:1]
    if match:
        return f" (did you mean {match[0]!r}?)"
    return f" (valid: {', '.join(names)})"


def check_keys(
    raw: Mapping[Any, Any],
    valid: tuple[str, ...],
    where: str,
    aliases: Mapping[str, str] | None = None,
    level: str = "",
) -> dict[str, Any]:
    """``raw`` with every key known, Kafka aliases renamed to ours; else one-line error.

    The error names the first unknown key (sorted, so the message is stable), where it was
    found, and the closest valid key, or where the key belongs when it is a known key of
    another level (``acks`` under ``topic``).
    """
    aliases = aliases or {}
    out: dict[str, Any] = {}
    spelled: dict[str, Any] = {}
    for key in sorted(raw, key=str):
        name = aliases.get(key, key) if isinstance(key, str) else key
        if name not in valid:
            home = _HOME.get(key) if isinstance(key, str) else None
            if home is not None and home != level:
                hint = f" (it belongs under '{home}:')"
            else:
                hint = _closest(key, [*valid, *aliases])
            raise ScenarioError(f"{where}: unknown key {_show(key)}{hint}")
        if name in out:
            raise ScenarioError(
                f"{where}: {_show(name)} given twice (as {_show(spelled[name])} and "
                f"{_show(key)}); keep one"
            )
        out[name] = raw[key]
        spelled[name] = key
    return out


def _scalar(value: Any, where: str, what: str) -> str:
    """A name or record id: a string or number, never a container."""
    if value is None or isinstance(value, Mapping | list | tuple | set | bytes):
        raise ScenarioError(f"{where}: {what} must be a name, got {_show(value)}")
    text = str(value)
    if not text.strip():
        raise ScenarioError(f"{where}: {what} must not be empty")
    return text


def _default_names(n: int) -> list[str]:
    return [chr(ord("A") + i) for i in range(n)]


def _parse_acks(value: Any, source: str) -> str:
    key = str(value).strip().lower() if isinstance(value, str | int) else ""
    if key not in _ACKS:
        raise ScenarioError(f"{source}: producer.acks must be 0, 1 or all, got {_show(value)}")
    return _ACKS[key]


def _broker(value: Any, brokers: tuple[str, ...], where: str, alias_ok: bool = True) -> int:
    name = _scalar(value, where, "a broker")
    if alias_ok and name in _ALIAS_INDEX:
        return _ALIAS_INDEX[name]
    if name not in brokers:
        extra = f" or one of {', '.join(ALIASES)}" if alias_ok else ""
        raise ScenarioError(
            f"{where}: unknown broker {_show(name)} (brokers: {', '.join(brokers)}{extra})"
        )
    return brokers.index(name)


_NODE_INDEX = {name: idx for idx, name in NODE_NAMES.items()}


def _node(value: Any, brokers: tuple[str, ...], where: str) -> int:
    """A network node: a broker name or controller | zookeeper | client."""
    name = _scalar(value, where, "a node")
    if name in _NODE_INDEX:
        return _NODE_INDEX[name]
    if name not in brokers:
        raise ScenarioError(
            f"{where}: unknown node {_show(name)} (brokers: {', '.join(brokers)}, or one of "
            f"{', '.join(NODE_NAMES.values())})"
        )
    return brokers.index(name)


def _parse_links(kind: str, arg: Any, brokers: tuple[str, ...], where: str) -> Event:
    """``partition: {from: A, to: [B, controller], one_way: false}``; ``heal: A | all``."""
    if kind == "heal" and not isinstance(arg, Mapping):
        if arg == "all":
            return Event("heal")
        return Event("heal", replica=_broker(arg, brokers, where, alias_ok=False))
    if not isinstance(arg, Mapping):
        raise ScenarioError(f"{where}: {kind} takes {{from: A, to: [B, controller]}}")
    arg = check_keys(arg, LINK_KEYS, f"{where}: {kind}")
    if "from" not in arg or "to" not in arg:
        raise ScenarioError(f"{where}: {kind} needs 'from' and 'to'")
    src = _node(arg["from"], brokers, where)
    raw_to = arg["to"]
    if raw_to == "all":
        others = [*range(len(brokers)), *NODE_NAMES]
        dsts = [n for n in others if n != src]
    else:
        items = raw_to if isinstance(raw_to, list) else [raw_to]
        if not items:
            raise ScenarioError(f"{where}: {kind}: 'to' must name at least one node")
        dsts = [_node(x, brokers, where) for x in items]
    if src in dsts:
        raise ScenarioError(f"{where}: {kind}: {node_name(src, brokers)} cannot be cut from itself")
    one_way = arg.get("one_way", False)
    if not isinstance(one_way, bool):
        raise ScenarioError(f"{where}: {kind}: 'one_way' must be true or false")
    links = {(src, d) for d in dsts}
    if not one_way:
        links |= {(d, src) for d in dsts}
    return Event(kind, replica=src if src >= 0 else -1, links=frozenset(links))


def _parse_step(raw: Any, brokers: tuple[str, ...], where: str) -> Event:
    if not isinstance(raw, Mapping) or len(raw) != 1:
        raise ScenarioError(f"{where}: a step is a mapping with one key, e.g. 'crash: B'")
    ((kind, arg),) = raw.items()
    if not isinstance(kind, str) or kind not in KINDS:
        raise ScenarioError(f"{where}: unknown event {_show(kind)}{_closest(kind, sorted(KINDS))}")
    if kind in ("partition", "heal"):
        return _parse_links(kind, arg, brokers, where)
    declared = KINDS[kind]
    takes_replica, takes_record, takes_value = (
        declared.takes_replica,
        declared.takes_record,
        declared.takes_value,
    )
    if kind == "produce":
        if isinstance(arg, Mapping):
            arg = check_keys(arg, PRODUCE_KEYS, f"{where}: produce")
            if "record" not in arg:
                raise ScenarioError(f"{where}: produce takes a record id or {{record, to}}")
            to = _broker(arg["to"], brokers, where, alias_ok=False) if "to" in arg else -1
            return Event("produce", replica=to, record=_scalar(arg["record"], where, "record"))
        if arg is None or isinstance(arg, list | dict) or str(arg).strip() == "":
            raise ScenarioError(f"{where}: produce needs a record id, e.g. 'produce: m1'")
        return Event("produce", record=_scalar(arg, where, "record"))
    hold: frozenset[int] = frozenset()
    unclean = False
    value = -1
    if isinstance(arg, Mapping):
        arg = check_keys(arg, BROKER_STEP_KEYS, f"{where}: {kind}")
        if "broker" not in arg:
            raise ScenarioError(f"{where}: {kind}: missing 'broker'")
        target = _broker(arg["broker"], brokers, where)
        held = arg.get("hold", [])
        if not isinstance(held, list):
            raise ScenarioError(f"{where}: {kind}: 'hold' must be a list of brokers")
        hold = frozenset(_broker(b, brokers, where, alias_ok=False) for b in held)
        unclean = arg.get("unclean", False)
        if not isinstance(unclean, bool):
            raise ScenarioError(f"{where}: {kind}: 'unclean' must be true or false")
        if "hw" in arg:
            if not takes_value:
                raise ScenarioError(f"{where}: {kind} takes no 'hw'")
            value = _int(arg["hw"], where, "hw")
    elif arg is None:
        raise ScenarioError(f"{where}: {kind} needs a broker, e.g. '{kind}: B'")
    else:
        target = _broker(arg, brokers, where)
    if takes_value and value < 0:
        raise ScenarioError(f"{where}: {kind} needs {{broker: X, hw: N}}")
    if not takes_replica and not takes_record:
        raise ScenarioError(f"{where}: {kind} takes no argument")
    return Event(kind, replica=target, value=value, hold=hold, unclean=unclean)


def _int(value: Any, where: str, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ScenarioError(f"{where}: {what} must be a non-negative integer, got {_show(value)}")
    return value


def parse_scenario(doc: Any, source: str) -> Scenario:
    """Validate a loaded scenario document; ``source`` names it in every error."""
    if not isinstance(doc, Mapping):
        raise ScenarioError(f"{source}: a scenario is a mapping with 'steps'")
    doc = check_keys(doc, TOP_KEYS, source)
    topic = doc.get("topic") or {}
    producer = doc.get("producer") or {}
    if not isinstance(topic, Mapping) or not isinstance(producer, Mapping):
        raise ScenarioError(f"{source}: 'topic' and 'producer' must be mappings")
    topic = check_keys(topic, TOPIC_KEYS, f"{source}: topic", TOPIC_ALIASES, "topic")
    producer = check_keys(
        producer, PRODUCER_KEYS, f"{source}: producer", PRODUCER_ALIASES, "producer"
    )
    rf = topic.get("replication_factor")
    if "brokers" in doc:
        raw = doc["brokers"]
        if not isinstance(raw, list) or not all(isinstance(b, str) for b in raw):
            raise ScenarioError(f"{source}: 'brokers' must be a list of names")
        brokers = tuple(raw)
        if len(set(brokers)) != len(brokers):
            raise ScenarioError(f"{source}: duplicate broker names in {list(brokers)}")
        if rf is not None and rf != len(brokers):
            raise ScenarioError(
                f"{source}: topic.replication_factor {_show(rf)} != {len(brokers)} brokers listed"
            )
    else:
        if rf is None:
            raise ScenarioError(f"{source}: give 'brokers' or topic.replication_factor")
        n = _int(rf, source, "topic.replication_factor")
        if not 1 <= n <= 5:
            raise ScenarioError(f"{source}: 1 to 5 brokers supported, got {n}")
        brokers = tuple(_default_names(n))
    if not 1 <= len(brokers) <= 5:
        raise ScenarioError(f"{source}: 1 to 5 brokers supported, got {len(brokers)}")
    for b in brokers:
        if b in _ALIAS_INDEX:
            raise ScenarioError(f"{source}: {b!r} is reserved and cannot name a broker")
    leader = _broker(doc.get("leader", brokers[0]), brokers, source, alias_ok=False)
    min_insync = _int(topic.get("min_insync_replicas", 1), source, "min_insync_replicas")
    if not 1 <= min_insync <= len(brokers):
        raise ScenarioError(
            f"{source}: min_insync_replicas must be 1..{len(brokers)}, got {min_insync}"
        )
    unclean = topic.get("unclean_leader_election", False)
    if isinstance(unclean, str) and unclean.strip().lower() in ("true", "false"):
        unclean = unclean.strip().lower() == "true"  # Kafka's config files spell it so
    if not isinstance(unclean, bool):
        raise ScenarioError(f"{source}: unclean_leader_election must be true or false")
    acks = _parse_acks(producer.get("acks", "all"), source)
    steps_raw = doc.get("steps")
    if not isinstance(steps_raw, list) or not steps_raw:
        raise ScenarioError(f"{source}: 'steps' must be a non-empty list")
    steps = []
    for k, raw in enumerate(steps_raw, start=1):
        steps.append(_parse_step(raw, brokers, f"{source}: step {k}"))
    records = [e.record for e in steps if e.kind == "produce"]
    dup = {r for r in records if records.count(r) > 1}
    if dup:
        raise ScenarioError(f"{source}: record ids must be unique, repeated: {sorted(dup)}")
    expect = _parse_expect(doc.get("expect"), brokers, source) if "expect" in doc else None
    return Scenario(
        name=_text(doc, "name", source) or source,
        source=source,
        description=_text(doc, "description", source).strip(),
        fixed_by=_text(doc, "fixed_by", source),
        brokers=brokers,
        leader=leader,
        acks=acks,
        min_insync=min_insync,
        unclean=unclean,
        steps=tuple(steps),
        rf_flexible="brokers" not in doc,
        raw_steps=tuple(_raw_text(r) for r in steps_raw),
        expect=expect,
    )


def _text(doc: Mapping[str, Any], key: str, source: str) -> str:
    value = doc.get(key)
    if value is None:
        return ""
    if isinstance(value, Mapping | list):
        raise ScenarioError(f"{source}: '{key}' must be text, got {_show(value)}")
    return str(value)


def _parse_expect(raw: Any, brokers: tuple[str, ...], source: str) -> Expect:
    """``expect: {lost_acked: [m2], divergent_offsets: [1], replicas: {A: [m1, m2]}}``."""
    where = f"{source}: expect"
    if not isinstance(raw, Mapping):
        raise ScenarioError(f"{where}: a mapping of lost_acked, divergent_offsets, replicas")
    raw = check_keys(raw, EXPECT_KEYS, where)
    lost: tuple[str, ...] | None = None
    if "lost_acked" in raw:
        items = raw["lost_acked"] if raw["lost_acked"] is not None else []
        if not isinstance(items, list):
            raise ScenarioError(f"{where}.lost_acked: a list of record ids")
        lost = tuple(sorted(_scalar(r, where, "lost_acked entry") for r in items))
    div: tuple[int, ...] | None = None
    if "divergent_offsets" in raw:
        items = raw["divergent_offsets"] if raw["divergent_offsets"] is not None else []
        if not isinstance(items, list):
            raise ScenarioError(f"{where}.divergent_offsets: a list of offsets")
        div = tuple(sorted(_int(o, where, "divergent offset") for o in items))
    reps: tuple[tuple[str, tuple[str, ...]], ...] | None = None
    if "replicas" in raw:
        logs = raw["replicas"]
        if not isinstance(logs, Mapping):
            raise ScenarioError(f"{where}.replicas: a mapping broker -> list of record ids")
        entries = []
        for name, recs in logs.items():
            b = _broker(name, brokers, f"{where}.replicas", alias_ok=False)
            if recs is None:
                recs = []
            if not isinstance(recs, list):
                raise ScenarioError(f"{where}.replicas.{brokers[b]}: a list of record ids")
            entries.append((brokers[b], tuple(_scalar(r, where, "record") for r in recs)))
        reps = tuple(sorted(entries))
    return Expect(lost, div, reps)


def _raw_text(raw: Mapping[str, Any]) -> str:
    ((kind, arg),) = raw.items()
    return f"{kind}: {arg}"


def _links_document(e: Event, brokers: tuple[str, ...]) -> Any:
    """partition/heal back to scenario syntax (a link set from one node, both ways or not)."""
    if not e.links:
        return brokers[e.replica] if e.replica >= 0 else "all"
    srcs = {a for a, _ in e.links}
    src = (
        e.replica
        if e.replica >= 0
        else min(srcs, key=lambda n: (len([1 for a, _ in e.links if a == n]) * -1, n))
    )
    dsts = sorted({b for a, b in e.links if a == src}, key=lambda n: (n < 0, n))
    one_way = not all((d, src) in e.links for d in dsts)
    doc: dict[str, Any] = {
        "from": node_name(src, brokers),
        "to": [node_name(d, brokers) for d in dsts],
    }
    if one_way:
        doc["one_way"] = True
    return doc


def to_document(s: Scenario) -> dict[str, Any]:
    """The inverse of :func:`parse_scenario`: a document ``yaml.safe_dump`` can write."""
    steps: list[dict[str, Any]] = []
    for e in s.steps:
        if e.kind in ("partition", "heal"):
            steps.append({e.kind: _links_document(e, s.brokers)})
            continue
        if e.kind == "produce":
            steps.append(
                {"produce": {"record": e.record, "to": s.brokers[e.replica]}}
                if e.replica >= 0
                else {"produce": e.record}
            )
            continue
        name = s.brokers[e.replica] if e.replica >= 0 else ALIAS_NAMES[e.replica]
        if e.hold or e.unclean or e.value >= 0:
            arg: dict[str, Any] = {"broker": name}
            if e.hold:
                arg["hold"] = [s.brokers[i] for i in sorted(e.hold)]
            if e.unclean:
                arg["unclean"] = True
            if e.value >= 0:
                arg["hw"] = e.value
            steps.append({e.kind: arg})
        else:
            steps.append({e.kind: name})
    doc: dict[str, Any] = {
        "name": s.name,
        "description": s.description,
        "brokers": list(s.brokers),
        "leader": s.brokers[s.leader],
        "topic": {
            "replication_factor": len(s.brokers),
            "min_insync_replicas": s.min_insync,
            "unclean_leader_election": s.unclean,
        },
        "producer": {"acks": s.acks},
        "steps": steps,
    }
    if s.fixed_by:
        doc["fixed_by"] = s.fixed_by
    if s.expect is not None:
        doc["expect"] = s.expect.to_document()
    return doc
