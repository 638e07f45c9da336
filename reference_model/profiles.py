"""Rules as data, versions as profiles.

Each behavioural difference between Kafka releases that changes what the model tracks
(final replica contents, acknowledged writes lost, divergence, ISR/ELR, leader and leader
epoch) is a :class:`Rule`: the Kafka change that introduced it (KIP or JIRA), the first
release of each release line that has it (a fix backported to a bug-fix release counts from
that release), the mode it applies to, and the broker class and method it mirrors. A
*profile* (:class:`Generation`) is the set of rules in force for one release; it is
what :func:`resolve` returns for ``2.8.2``, ``3.3.1-kraft``, ``4.0.0-elr`` and so on.

Names :func:`resolve` accepts (so :func:`generation` and ``run.run_scenario`` too):

- an era alias: ``hw``, ``kip101``, ``kip279``, ``kip320``, ``kraft``, ``kraft-elr``;
- a release number ``0.10.0.0`` .. ``4.1.x`` (0.x releases have four parts, later ones
  three; ``x`` stands for the newest patch), ZooKeeper mode below 4.0 and KRaft from 4.0;
- suffixes: ``-kraft`` (KRaft mode, from 3.3), ``-zk`` (ZooKeeper mode, below 4.0),
  ``-elr`` (KIP-966 feature on; from 4.0, the default from 4.1), ``-no-elr`` (feature off),
  ``-ibpX.Y`` (ZooKeeper broker pinned to ``inter.broker.protocol.version`` X.Y, e.g.
  ``3.3.1-ibp0.10``, which replicates like ``hw``).

Era aliases (unchanged since the model's first version):

``hw`` (before 0.11)
    A follower truncates to its own HW whenever it becomes follower of a new leader (on
    restart: the checkpointed HW). Records carry no leader epoch (message format v0/v1).
``kip101`` (0.11 to 1.1)
    Records carry the leader epoch; the follower asks the leader OffsetsForLeaderEpoch(its
    latest epoch); the leader answers its LEO if that is its latest epoch, else the start
    offset of the next higher epoch; an unknown epoch falls back to HW truncation.
``kip279`` (2.0.0)
    The answer is (largest epoch <= requested, its end offset); a follower lacking that epoch
    steps back and asks again; a leader asked about an epoch newer than its own refuses.
``kip320`` (2.1 to 3.6, ZooKeeper mode)
    Fetch and OffsetsForLeaderEpoch carry the current leader epoch: a replica with a stale
    epoch is fenced instead of served, and a response from a superseded epoch is dropped. A new
    leader writes its epoch into the cache on election (KAFKA-7415), and an epoch older than
    the cache's first entry is answered with that entry's start offset (later fixes in the
    range, KAFKA-10706 or hw_in_log, are rules of their releases, not of the alias).
``kraft`` / ``kraft-elr``
    Kafka 4.0 (KRaft controller; = ``4.0.0``), without / with ELR (KIP-966; = ``4.0.0-elr``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, fields

from reference_model.rules import RULES, Rule

Version = tuple[int, ...]


@dataclass(frozen=True, slots=True)
class Generation:
    """One version profile: the rules in force, as a set and as flags (see module docstring).

    Every flag is the membership of the rule of the same name in ``rules``; the rules'
    Kafka references are in ``RULES``.
    """

    name: str
    kafka_versions: str
    epoch_in_log: bool  # KIP-101: message format v2, batches carry partitionLeaderEpoch
    epoch_truncation: bool  # KIP-101 OffsetsForLeaderEpoch on becoming follower
    epoch_walkback: bool  # KIP-279 (largest epoch <= requested, end offset) + step back
    fencing: bool  # KIP-320 current leader epoch in Fetch / OffsetsForLeaderEpoch
    assign_epoch_on_leader: bool  # KAFKA-7415: leader caches (epoch, LEO) on election
    epoch_cache_replaces: bool = False  # KAFKA-7415: an older epoch replaces conflicts
    truncate_cleans_epoch_cache: bool = False  # KAFKA-10706: no-op truncation cleans the cache
    isr_join_epoch_start: bool = False  # KAFKA-7128: join ISR only past the epoch start
    truncate_on_missed_epoch: bool = False  # KAFKA-7164: same leader, epoch jumped > 1
    out_of_range_truncates: bool = False  # KAFKA-7414: follower ahead never halts
    truncate_in_fetch: bool = False  # KAFKA-10554: truncation rides on the first Fetch
    hw_in_log: bool = False  # PR #7055 (2.4): truncation clamps a follower's HW to its LEO
    follower_truncates_before_hw: bool = False  # KAFKA-14704: no HW over a divergent tail
    hw_needs_min_isr: bool = False  # KAFKA-15583: no HW advance while ISR < min.insync
    kraft: bool = False  # KIP-500/631: the KRaft quorum controller decides
    no_epoch_bump_on_isr_shrink: bool = False  # KAFKA-15021 (KRaft, metadata.version 3.6)
    kraft_unclean_from_config: bool = False  # KAFKA-12670 (KRaft honours the config, 3.9)
    elr: bool = False  # KIP-966 Eligible Leader Replicas
    unclean_shutdown_detection: bool = False  # KIP-966: unclean restart leaves ISR and ELR
    controller_queue: bool = False  # ZooKeeper ControllerChannelManager: queued, in order
    keep_last_isr: bool = False  # KAFKA-5642 (1.1): the ZooKeeper controller never empties the ISR
    # Prevention rules (``reference_model.prevention``): they change no transition; they say
    # which steps the broker version makes impossible.
    session_expiry_needs_cut: bool = False  # a running, connected broker's session lives
    registration_needs_expired_session: bool = False  # KRaft DuplicateBrokerRegistration
    caught_up_stays_in_isr: bool = False  # KAFKA-7152 (2.1): LEO = leader's LEO: in sync
    elect_leaders_unclean: bool = False  # KIP-460 (2.4): ElectLeaders UNCLEAN exists
    unclean_election_needs_offline: bool = False  # UNCLEAN: ELECTION_NOT_NEEDED with a leader
    mode: str = "zk"  # zk | kraft
    rules: frozenset[str] = frozenset()


# The rule flags are Generation's boolean fields: one list, so a new rule cannot be
# declared in one place and forgotten in the other.
FLAGS: tuple[str, ...] = tuple(
    f.name for f in fields(Generation) if f.name not in ("name", "kafka_versions", "mode", "rules")
)


def build(name: str, kafka: str, rules: frozenset[str], mode: str) -> Generation:
    """A profile from its rule set: one flag per rule (``RULES`` documents each)."""
    unknown = rules - set(FLAGS)
    if unknown:
        raise ValueError(f"unknown model rules {sorted(unknown)} (valid: {', '.join(FLAGS)})")
    flags = {f: f in rules for f in FLAGS}
    return Generation(name=name, kafka_versions=kafka, mode=mode, rules=rules, **flags)


# Rules every ZooKeeper-mode release has (the eras are ZooKeeper mode).
_ZK_ALWAYS = (
    "session_expiry_needs_cut",
    "unclean_election_needs_offline",
    "controller_queue",
)


def _era(name: str, kafka: str, rules: tuple[str, ...], mode: str = "zk") -> Generation:
    return build(name, kafka, frozenset(rules + _ZK_ALWAYS), mode)


GENERATIONS: dict[str, Generation] = {
    g.name: g
    for g in (
        _era("hw", "0.8 - 0.10.2", ()),
        _era("kip101", "0.11 - 1.1", ("epoch_in_log", "epoch_truncation")),
        _era(
            "kip279",
            "2.0.0",
            ("epoch_in_log", "epoch_truncation", "epoch_walkback", "keep_last_isr"),
        ),
        _era(
            "kip320",
            "2.1 - 3.6 (ZooKeeper)",
            (
                "epoch_in_log",
                "epoch_truncation",
                "epoch_walkback",
                "fencing",
                "assign_epoch_on_leader",
                "epoch_cache_replaces",
                "isr_join_epoch_start",
                "truncate_on_missed_epoch",
                "out_of_range_truncates",
                "caught_up_stays_in_isr",
                "keep_last_isr",
            ),
        ),
    )
}


def generation(name: str) -> Generation:
    """Resolve an era alias, KRaft alias, release number or catalogue name to its profile.

    Raises ``ValueError`` with a one-line message listing the valid forms.
    """
    g = GENERATIONS.get(name)
    if g is not None:
        return g
    return resolve(name)


# Release lines from 0.10.0 to 4.1 (0.x lines have three parts, later ones two).
LINES: tuple[Version, ...] = (
    (0, 10, 0),
    (0, 10, 1),
    (0, 10, 2),
    (0, 11, 0),
    (1, 0),
    (1, 1),
    *((2, m) for m in range(9)),
    *((3, m) for m in range(10)),
    (4, 0),
    (4, 1),
)
NEWEST_PATCH = 99  # what "x" stands for in 4.1.x

FORMS = (
    "hw, kip101, kip279, kip320, kraft, kraft-elr, or a release 0.10.0.0..4.1.x "
    "(e.g. 2.8.2, 3.7.1, 4.0.0) with optional -kraft, -zk, -elr, -no-elr, -ibpX.Y "
    "(e.g. 3.3.1-kraft, 4.0.0-elr, 3.3.1-ibp0.10)"
)

_ALIASES = {"kraft": "4.0.0", "kraft-elr": "4.0.0-elr"}
_NUMBER = re.compile(r"^\d+(\.\d+)*(\.x)?$")


def _line(v: Version) -> Version:
    return v[:3] if v[0] == 0 else v[:2]


def parse_version(text: str) -> Version:
    """``0.10.2.1`` -> (0, 10, 2, 1); ``2.8.2`` -> (2, 8, 2); ``4.1.x`` -> (4, 1, 99)."""
    if not _NUMBER.match(text):
        raise ValueError(f"not a Kafka release number: {text!r} (valid: {FORMS})")
    parts = tuple(NEWEST_PATCH if p == "x" else int(p) for p in text.split("."))
    want = 4 if parts[0] == 0 else 3
    if len(parts) != want or _line(parts) not in LINES:
        raise ValueError(f"not a Kafka release 0.10.0.0..4.1.x: {text!r} (valid: {FORMS})")
    return parts


def in_release(rule: Rule, v: Version) -> bool:
    """Whether the broker code of release ``v`` has ``rule`` (backports included).

    The entry of ``rule.since`` on the newest line at or below ``v``'s decides: same line,
    from that release on; an older line, only if that entry is the mainline one (the last).
    """
    since = [parse_version(s) for s in rule.since]
    below = [s for s in since if _line(s) <= _line(v)]
    if not below:
        return False
    s = below[-1]
    if _line(s) == _line(v):
        return v >= s
    return s == since[-1]


def _ibp(text: str) -> Version:
    try:
        return tuple(int(p) for p in text.split("."))
    except ValueError:
        raise ValueError(f"bad inter.broker.protocol.version {text!r} (valid: {FORMS})") from None


def resolve(name: str) -> Generation:
    """The profile for an era alias, release number or catalogue name (see module docstring)."""
    if name in GENERATIONS:
        return GENERATIONS[name]
    text = _ALIASES.get(name, name)
    number, *suffixes = text.split("-")
    if number == "" or not _NUMBER.match(number):
        raise ValueError(f"unknown protocol or Kafka version {name!r} (valid: {FORMS})")
    v = parse_version(number)
    kraft = v >= (4, 0)
    elr = v >= (4, 1)
    ibp: Version | None = None
    k = 0
    while k < len(suffixes):
        s = suffixes[k]
        if s == "kraft":
            kraft = True
        elif s == "zk":
            kraft = False
        elif s == "elr":
            elr = True
        elif s == "no" and k + 1 < len(suffixes) and suffixes[k + 1] == "elr":
            elr = False
            k += 1
        elif s.startswith("ibp"):
            ibp = _ibp(s[3:])
        else:
            raise ValueError(f"unknown suffix {s!r} in {name!r} (valid: {FORMS})")
        k += 1
    if kraft and v < (3, 3):
        raise ValueError(f"{name!r}: KRaft mode is modelled from 3.3 (valid: {FORMS})")
    if not kraft and v >= (4, 0):
        raise ValueError(f"{name!r}: Kafka 4 has no ZooKeeper mode (valid: {FORMS})")
    if kraft and ibp is not None:
        raise ValueError(f"{name!r}: -ibp applies to ZooKeeper mode only (valid: {FORMS})")
    if elr and not kraft:
        raise ValueError(f"{name!r}: ELR needs KRaft (valid: {FORMS})")
    if elr and v < (4, 0):
        raise ValueError(f"{name!r}: ELR is available from 4.0 (valid: {FORMS})")
    mode = "kraft" if kraft else "zk"
    rules = set()
    for r in RULES.values():
        if not in_release(r, v):
            continue
        if r.mode not in ("any", mode):
            continue
        if r.feature == "elr" and not elr:
            continue
        if ibp is not None and r.needs_ibp and ibp < _ibp(r.needs_ibp):
            continue
        rules.add(r.name)
    return build(name, _describe(v, mode, elr, ibp), frozenset(rules), mode)


def _describe(v: Version, mode: str, elr: bool, ibp: Version | None) -> str:
    out = ".".join("x" if p == NEWEST_PATCH else str(p) for p in v)
    out += " KRaft" if mode == "kraft" else " ZooKeeper"
    if elr:
        out += " + ELR"
    if ibp is not None:
        out += " IBP " + ".".join(map(str, ibp))
    return out


def describe_rules(g: Generation) -> list[dict[str, str]]:
    """The rules of a profile with their references (for ``--explain`` and the README)."""
    return [
        {
            "rule": r.name,
            "change": r.change,
            "since": ", ".join(r.since),
            "mirrors": r.mirrors,
            "kind": "prevention" if r.prevents else "behaviour",
        }
        for r in RULES.values()
        if r.name in g.rules
    ]


def with_rule(g: Generation, rule: str, on: bool) -> Generation:
    """``g`` with one rule switched on or off (the counterfactual behind ``--explain``)."""
    rules = g.rules | {rule} if on else g.rules - {rule}
    mode = "kraft" if "kraft" in rules else "zk"
    return build(f"{g.name}{'+' if on else '-'}{rule}", g.kafka_versions, frozenset(rules), mode)
