"""Canonical keys of partition states: replica symmetry and record-id renaming.

Why: the explorer deduplicates states. Two states that differ only in which broker index plays
which part (B and C swapped) or in which record id a write got (m1 and m2 swapped) lead to the
same orderings up to that renaming, so only one of them needs expanding. The key of a state is
the smallest encoding over the renamings that could map it onto another state; the explorer
keeps the first concrete state it met for each key, so every counterexample it prints is a
real, replayable path (never a relabelled one).

Every field of every state ``NamedTuple`` must be classified in ``FIELDS`` (does it hold a
replica index, a set of them, a per-replica tuple, a record id, a nested value, or a plain
value?). A field nobody classified would be copied as plain and silently break the renaming,
so ``check_classification`` refuses to run with one and names it (the KRaft/ELR work adds
fields to these classes).

Soundness (see ``README``-level note in ``explorer.py``): record renaming is exact (record ids
are only compared for equality, and writes are only read as a multiset). Replica permutation is
exact for every rule except the controller's choice among several eligible replicas, which
follows the assignment order (``OfflinePartitionLeaderSelector``: first live ISR member); the
explorer's tests compare its counterexamples with and without it.
"""

from __future__ import annotations

import hashlib
import itertools
import operator
from typing import Any, Final, NamedTuple

from explorer.symmetry_runtime import (
    _CACHE,
    _CACHE_MAX,
    Encoder,
    _cached,
    _mask,
    _ordered_ms,
    _record_order_key,
    _Same,
    _sorted_ms,
)
from reference_model import state as state_module
from reference_model.state import PartitionState


class Kind(NamedTuple):
    """How one field is renamed. ``sub`` names the element class for nested kinds."""

    tag: str
    sub: str = ""


PLAIN = Kind("plain")  # copied as is (ints, strings, bools, tuples of those)
REPLICA = Kind("replica")  # one replica index, or a negative sentinel (NO_LEADER)
REPLICA_SET = Kind("replica_set")  # frozenset of replica indices
PER_REPLICA_PLAIN = Kind("per_replica_plain")  # tuple indexed by replica, plain elements
RECORD = Kind("record")  # one record id
# frozenset of directed links (src, dst): broker indices, or negative network nodes
# (controller, ZooKeeper, client) that no renaming touches (PartitionState.cuts)
LINK_SET = Kind("link_set")


def nested(cls: str) -> Kind:
    """A field holding one value of state class ``cls``."""
    return Kind("nested", cls)


def seq(cls: str) -> Kind:
    """An ordered tuple of ``cls`` values (order is meaningful, e.g. a log)."""
    return Kind("seq", cls)


def multiset(cls: str) -> Kind:
    """A tuple of ``cls`` values whose order means nothing to any rule (writes)."""
    return Kind("multiset", cls)


def per_replica(cls: str) -> Kind:
    """A tuple indexed by replica whose elements are ``cls`` values or None."""
    return Kind("per_replica", cls)


# Every field of every state class, classified. Keep in step with reference_model/state.py.
FIELDS: dict[str, dict[str, Kind]] = {
    "LogEntry": {"epoch": PLAIN, "record": RECORD},
    "Replica": {
        "log": seq("LogEntry"),
        "hw": PLAIN,
        "checkpoint_hw": PLAIN,
        "flushed": PLAIN,
        "epochs": PLAIN,
        "alive": PLAIN,
        "paused": PLAIN,
        "halted": PLAIN,
        "role": PLAIN,
        "leader": REPLICA,
        "epoch": PLAIN,
        "isr": REPLICA_SET,
        "needs_truncation": PLAIN,
        "remote_leo": PER_REPLICA_PLAIN,
        "leader_start": PLAIN,  # an offset (KAFKA-7128)
        "unclean_stop": PLAIN,  # KIP-966
    },
    "Controller": {
        "leader": REPLICA,
        "epoch": PLAIN,
        "isr": REPLICA_SET,
        "live": REPLICA_SET,
        "pending": REPLICA_SET,
        "held": REPLICA_SET,
        "elr": REPLICA_SET,  # KIP-966 EligibleLeaderReplicas
        "last_known_elr": REPLICA_SET,  # KIP-966 LastKnownElr
        "queued": seq("QueuedLeaderAndIsr"),  # ZooKeeper controller queue, oldest first
    },
    "QueuedLeaderAndIsr": {
        "broker": REPLICA,
        "leader": REPLICA,
        "epoch": PLAIN,
        "isr": REPLICA_SET,
    },
    "FetchResponse": {
        "leader": REPLICA,
        "leader_epoch": PLAIN,
        "fetch_offset": PLAIN,
        "entries": seq("LogEntry"),
        "hw": PLAIN,
    },
    "Write": {
        "record": RECORD,
        "status": PLAIN,
        "offset": PLAIN,
        "leader": REPLICA,
        "epoch": PLAIN,
    },
    "PartitionState": {
        "replicas": per_replica("Replica"),
        "controller": nested("Controller"),
        "inflight": per_replica("FetchResponse"),
        "writes": multiset("Write"),
        "crashes": PLAIN,
        "power_losses": PLAIN,
        # partition/heal (``Bounds.partitions``): each link's broker ends are renamed
        "cuts": LINK_SET,
    },
}

# NamedTuples of state.py that are not part of a state (static settings).
NOT_STATE = {"Config"}


def state_classes() -> dict[str, type]:
    """Every NamedTuple class defined in reference_model/state.py."""
    out: dict[str, type] = {}
    for name, obj in vars(state_module).items():
        if (
            isinstance(obj, type)
            and issubclass(obj, tuple)
            and hasattr(obj, "_fields")
            and obj.__module__ == state_module.__name__
        ):
            out[name] = obj
    return out


def unclassified() -> list[str]:
    """``Class.field`` names ``FIELDS`` does not classify (or classifies but that are gone)."""
    problems: list[str] = []
    classes = state_classes()
    for name, cls in sorted(classes.items()):
        if name in NOT_STATE:
            continue
        known = FIELDS.get(name)
        if known is None:
            problems.append(f"{name} (whole class)")
            continue
        fields: tuple[str, ...] = cls._fields  # type: ignore[attr-defined]
        problems += [f"{name}.{f}" for f in fields if f not in known]
        problems += [f"{name}.{f} (classified but gone)" for f in known if f not in fields]
    problems += [f"{name} (classified but gone)" for name in FIELDS if name not in classes]
    return problems


def check_classification() -> None:
    """Refuse to canonicalise with a state field of unknown meaning (one line per field)."""
    problems = unclassified()
    if problems:
        raise ValueError(
            "explorer symmetry: state fields not classified in "
            "explorer/symmetry.py FIELDS: " + ", ".join(problems)
        )


# ------------------------------------------------------------------ generated encoders


def _field_expr(kind: Kind, v: str, prefix: str = "enc_") -> str:
    """Python expression encoding value ``v`` of ``kind`` under (pm, inv, rf)."""
    tag = kind.tag
    if tag == "plain":
        return v
    if tag == "replica":
        return f"(pm[{v}] if {v} >= 0 else {v})"
    if tag == "replica_set":
        return f"_mask({v}, pm)"
    if tag == "link_set":
        return f"tuple(sorted([(pm[a] if a >= 0 else a, pm[b] if b >= 0 else b) for a, b in {v}]))"
    if tag == "per_replica_plain":
        return f"tuple([{v}[k] for k in inv])"
    if tag == "record":
        return f"rf({v})"
    sub = f"{prefix}{kind.sub}"
    if tag == "nested":
        return f"{sub}({v}, pm, inv, rf)"
    if tag == "seq":
        return f"tuple([{sub}(e, pm, inv, rf) for e in {v}])"
    if tag == "multiset":
        return f"_sorted_ms({v}, {sub}, pm, inv, rf)"
    if tag == "per_replica":
        return f"tuple([() if {v}[k] is None else {sub}({v}[k], pm, inv, rf) for k in inv])"
    raise ValueError(f"explorer symmetry: unknown field kind {tag!r}")


def _build_encoders(record_renaming: bool) -> dict[str, Encoder]:
    """One function per state class: ``enc_X(obj, pm, inv, rf) -> tuple``.

    ``pm[old] = new`` replica index, ``inv[new] = old``, ``rf(record) -> label``. Generated
    from ``FIELDS`` so that a new classified field is encoded without further code.
    Without record renaming (``encn_X``) multisets keep their production order.
    """
    ns = _namespace()
    prefix = "enc_" if record_renaming else "encn_"
    return {name: ns[f"{prefix}{name}"] for name in FIELDS}


def _function_source(name: str, sig: str, exprs: list[str], ret: str) -> str:
    """One generated function: each field's expression on a line of its own (``f<i> = ...``,
    with ``x`` holding the field; plain fields are ``o[i]``), so that the text stays within
    the repository's line length as it is."""
    lines = [f"def {name}({sig}) -> Any:"]
    for i, expr in enumerate(exprs):
        if expr != f"o[{i}]":
            lines.append(f"    x = o[{i}]")
        if expr == "(pm[x] if x >= 0 else x)":
            expr = expr[1:-1]  # as the formatter writes it
        line = f"    f{i} = {expr}"
        if len(line) > 100 and expr.startswith("tuple([") and expr.endswith("])"):
            line = f"    f{i} = tuple(\n        {expr[6:-1]}\n    )"  # as the formatter wraps it
        lines.append(line)
    names = ", ".join(f"f{i}" for i in range(len(exprs)))
    lines.append(f"    t = ({names})")
    lines.append(f"    return {ret}")
    return "\n".join(lines) + "\n"


def _functions_source() -> str:
    """Every encoder (``enc_X``, ``encn_X``) and relabelling (``tr_X``) function as source.

    The same text is ``exec``-ed (``_namespace``) or, checked in as
    ``explorer/_generated/canon.py``, compiled by mypyc with the rest of the model
    (interpreted, these functions took a fifth of the compiled explorer's time).
    """
    classes = state_classes()
    out = []
    for prefix, renaming in (("enc_", True), ("encn_", False)):
        for name, kinds in FIELDS.items():
            fields: tuple[str, ...] = classes[name]._fields  # type: ignore[attr-defined]
            exprs = []
            for i, f in enumerate(fields):
                kind = kinds[f]
                if kind.tag == "multiset" and not renaming:
                    kind = seq(kind.sub)  # without renaming the production order is kept
                plain = kind.tag == "plain"
                exprs.append(f"o[{i}]" if plain else _field_expr(kind, "x", prefix))
            out.append(_function_source(f"{prefix}{name}", _ENC_SIG, exprs, "t"))
    for name, kinds in FIELDS.items():
        fields = classes[name]._fields  # type: ignore[attr-defined]
        exprs = [
            f"o[{i}]" if kinds[f].tag == "plain" else _transform_expr(kinds[f], "x")
            for i, f in enumerate(fields)
        ]
        out.append(_function_source(f"tr_{name}", _TR_SIG, exprs, f"_new({name}, t)"))
    return "\n\n".join(out)


_ENC_SIG: Final = "o: Any, pm: Any, inv: Any, rf: Any"
_TR_SIG: Final = "o: Any, pm: Any, inv: Any, rn: Any"


def signature() -> str:
    """A digest of the classified state fields: what ``explorer/_generated/canon.py`` was
    generated for."""
    classes = state_classes()
    parts = []
    for name, kinds in FIELDS.items():
        fields: tuple[str, ...] = classes[name]._fields  # type: ignore[attr-defined]
        parts.append((name, fields, [tuple(kinds[f]) for f in fields]))
    text = repr(parts)
    return hashlib.sha256(text.encode()).hexdigest()


def canon_source() -> str:
    """The text of ``explorer/_generated/canon.py`` (regenerate after changing FIELDS or a
    state class: ``python -c "from explorer.symmetry import canon_source as s;
    print(s(), end='')" > explorer/_generated/canon.py``). A stale file is never used
    (its ``SIGNATURE`` differs): the functions are then ``exec``-ed, slower but the same."""
    classes = sorted(c for c in FIELDS)
    orders = []
    for name in FIELDS:
        recs = _record_fields(name)
        value = f"_record_order_key({recs[0]})" if recs else "repr"
        orders.append(f"order_{name}: Final = {value}")
    head = [
        '"""Generated by ``explorer.symmetry.canon_source()``: do not edit.',
        "",
        "The canonical-key encoders and relabelling functions of ``explorer.symmetry``, as source",
        "so that the compiled model (mypyc) compiles them too.",
        '"""',
        "",
        "from __future__ import annotations",
        "",
        "from typing import Any, Final",
        "",
        "from explorer.symmetry_runtime import (",
        "    _cached,",
        "    _mask,",
        "    _ordered_ms,",
        "    _record_order_key,",
        "    _sorted_ms,",
        ")",
        "from reference_model.state import (",
        *(f"    {n}," for n in classes),
        ")",
        "",
        f'SIGNATURE: Final = "{signature()}"',
        "_new: Final = tuple.__new__",
        *orders,
        "",
        "",
        "",
    ]
    return "\n".join(head) + _functions_source()


def _namespace() -> dict[str, Any]:
    """``enc_X``, ``encn_X``, ``tr_X``, ``order_X`` and their helpers: from the (compiled)
    ``explorer._generated.canon`` when it was generated for the current fields, else ``exec``-ed."""
    try:
        from explorer._generated import canon
    except ImportError:
        canon = None  # type: ignore[assignment]
    if canon is not None and signature() == canon.SIGNATURE:
        return dict(vars(canon))
    ns: dict[str, Any] = {
        "_mask": _mask,
        "_sorted_ms": _sorted_ms,
        "_ordered_ms": _ordered_ms,
        "_cached": _cached,
        "_new": tuple.__new__,
        **state_classes(),
    }
    for name in FIELDS:
        recs = _record_fields(name)
        ns[f"order_{name}"] = _record_order_key(recs[0]) if recs else repr
    exec(_functions_source(), ns)
    return ns


def _transform_expr(kind: Kind, v: str) -> str:
    """Expression building the renamed value of ``v`` (a valid state value, not an encoding)."""
    tag = kind.tag
    if tag == "plain":
        return v
    if tag == "replica":
        return f"(pm[{v}] if {v} >= 0 else {v})"
    if tag == "replica_set":
        return f"frozenset([pm[j] for j in {v}])"
    if tag == "link_set":
        return f"frozenset([(pm[a] if a >= 0 else a, pm[b] if b >= 0 else b) for a, b in {v}])"
    if tag == "per_replica_plain":
        return f"tuple([{v}[k] for k in inv])"
    if tag == "record":
        return f"rn[{v}]"
    sub = f"tr_{kind.sub}"
    if tag == "nested":
        return f"{sub}({v}, pm, inv, rn)"
    if tag == "seq":
        return f"tuple([{sub}(e, pm, inv, rn) for e in {v}])"
    if tag == "multiset":
        return f"_ordered_ms({v}, {sub}, pm, inv, rn, order_{kind.sub})"
    if tag == "per_replica":
        return (
            f"tuple([None if {v}[k] is None else _cached({sub}, {v}[k], pm, inv, rn) for k in inv])"
        )
    raise ValueError(f"explorer symmetry: unknown field kind {tag!r}")


def _build_transforms() -> dict[str, Encoder]:
    """One compiled function per state class: ``tr_X(obj, pm, inv, rn) -> X`` (see below)."""
    ns = _build_transforms_ns()
    return {name: ns[f"tr_{name}"] for name in FIELDS}


def _build_transforms_ns() -> dict[str, Any]:
    """One function per state class: ``tr_X(obj, pm, inv, rn) -> X``, the renamed value.

    ``rn`` maps old record id -> new record id. Multisets are put in a canonical order: by the
    position of their first record field in ``rn``'s new ids (writes: production order).
    """
    return _namespace()


def _build_field_transform(kind: Kind) -> Encoder:
    """``f(value, pm, inv, rn)``: the relabelled value of one field of ``kind``, exactly as
    ``tr_PartitionState`` (hence ``Canonicaliser.key``) relabels it."""
    ns = _build_transforms_ns()
    exec(f"def f(v, pm, inv, rn):\n    return {_transform_expr(kind, 'v')}\n", ns)
    return ns["f"]  # type: ignore[no-any-return]


def _record_fields(cls_name: str) -> list[int]:
    fields: tuple[str, ...] = state_classes()[cls_name]._fields  # type: ignore[attr-defined]
    return [i for i, f in enumerate(fields) if FIELDS[cls_name][f] == RECORD]


class _Labels(dict[Any, int]):
    """Record id -> label in order of first sight (``rf`` while encoding)."""

    def __missing__(self, key: Any) -> int:
        label = len(self)
        self[key] = label
        return label


_SAME: Final = _Same()


def _identity(x: Any) -> Any:
    return x


class Canonicaliser:
    """Computes ``key(state)``: equal keys iff the states are equal up to the renamings on.

    Replica permutations tried are only those that sort replicas by a signature that does not
    depend on indices (their plain fields and their membership in the controller's sets), so
    usually one encoding per state; ties are broken by trying each order and keeping the
    smallest encoding.
    """

    def __init__(self, replicas: int, symmetry: bool, record_renaming: bool) -> None:
        check_classification()
        _CACHE.clear()
        self.n = replicas
        self.symmetry = symmetry
        self.record_renaming = record_renaming
        self.identity = tuple(range(replicas))
        self.enc = _build_encoders(record_renaming)
        self.tr = _build_transforms()
        self._names = [f"m{k + 1}" for k in range(64)]
        rep_fields = state_classes()["Replica"]._fields  # type: ignore[attr-defined]
        plain = [i for i, f in enumerate(rep_fields) if FIELDS["Replica"][f] == PLAIN]
        self._plain_of_replica = operator.itemgetter(*plain)
        ctrl_fields = state_classes()["Controller"]._fields  # type: ignore[attr-defined]
        self._ctrl_sets = [
            i for i, f in enumerate(ctrl_fields) if FIELDS["Controller"][f] == REPLICA_SET
        ]
        self._ctrl_leader = [
            i for i, f in enumerate(ctrl_fields) if FIELDS["Controller"][f] == REPLICA
        ]
        ps_fields = state_classes()["PartitionState"]._fields  # type: ignore[attr-defined]
        # Multiset fields of the state whose elements carry record ids (the writes).
        self._multisets = [
            (i, self.enc[kind.sub], _record_fields(kind.sub))
            for i, f in enumerate(ps_fields)
            if (kind := FIELDS["PartitionState"][f]).tag == "multiset"
        ]
        self._all_perms = list(itertools.permutations(range(replicas)))
        # compact(): inv -> pm, the intern tables of canonical components and their memo.
        self._pm: dict[tuple[int, ...], tuple[int, ...]] = {
            inv: tuple(inv.index(j) for j in range(replicas)) for inv in self._all_perms
        }
        self._memo: dict[Any, int] = {}
        self._ids_rep: dict[Any, int] = {}
        self._ids_ctrl: dict[Any, int] = {}
        self._ids_resp: dict[Any, int] = {}
        self._ids_writes: dict[Any, int] = {}
        ps_names = tuple(ps_fields)
        if ps_names[:4] != ("replicas", "controller", "inflight", "writes") or any(
            FIELDS["PartitionState"][f] not in (PLAIN, LINK_SET) for f in ps_names[4:]
        ):
            raise ValueError(
                "explorer compact keys: PartitionState must start with replicas, controller, "
                f"inflight, writes and hold only plain fields or link sets after them, "
                f"not {ps_names}"
            )
        self._rest_start = 4
        # link-set fields after writes (cuts): relabelled like key() does, not copied
        self._link_fields = [
            i for i, f in enumerate(ps_names) if FIELDS["PartitionState"][f] == LINK_SET
        ]
        self._tr_links = _build_field_transform(LINK_SET)
        writes_kind = FIELDS["PartitionState"]["writes"]
        self._tr_writes = _build_field_transform(writes_kind)

    def key(self, st: PartitionState) -> Any:
        """The canonical member of ``st``'s class: a valid state, often ``st`` itself.

        Replicas are put in the canonical order and records renamed ``m1, m2, ...`` in order
        of first sight; when both are already so (the common case) no new object is built.
        """
        if not self.symmetry and not self.record_renaming:
            return st
        if self.symmetry:
            orders = self._orders(st)
            inv = orders[0] if len(orders) == 1 else min(orders, key=lambda o: self._encode(st, o))
        else:
            inv = self.identity
        rn = self._renaming(st, inv) if self.record_renaming else None
        if inv == self.identity and rn is None:
            return st
        pm = [0] * self.n
        for new, old in enumerate(inv):
            pm[old] = new
        return self.tr["PartitionState"](st, tuple(pm), inv, _Same() if rn is None else rn)

    def compact(self, st: PartitionState) -> tuple[Any, ...]:
        """A small tuple of ints equal for two states iff their ``key`` states are equal.

        Why: the visited set of a large search (three replicas: millions of states) is
        dominated by the states themselves, and every dict lookup re-hashes a nested tuple.
        Each component of the canonical state (a replica, the controller, an in-flight
        response, the writes) is relabelled once per (value, permutation, renaming) and
        interned as an int, so a key is ``(replica ids.., controller id, in-flight ids..,
        writes id, crashes, power losses, cuts)``: the same structure as ``key``'s state
        with each component replaced by its intern number, hence the same equality.
        """
        if self.symmetry:
            orders = self._orders(st)
            inv = orders[0] if len(orders) == 1 else min(orders, key=lambda o: self._encode(st, o))
        else:
            inv = self.identity
        rn = self._renaming(st, inv) if self.record_renaming else None
        pm = self._pm[inv]
        if rn is None:
            rmap: Any = _SAME
            rkey: Any = None
        else:
            rmap = rn
            rkey = tuple(rn.items())
        memo = self._memo
        if len(memo) > _CACHE_MAX:
            memo.clear()
        tr = self.tr
        out: list[Any] = []
        reps = st.replicas
        ids = self._ids_rep
        mk: Any
        if rn is None and inv == self.identity:
            # Nothing renamed (the usual case): a replica and the controller relabel to
            # themselves, so they are their own canonical form and are interned directly
            # (one hash each, no memo key, no relabelled copy).
            for rep in reps:
                out.append(ids.setdefault(rep, len(ids)))
            ids = self._ids_ctrl
            out.append(ids.setdefault(st.controller, len(ids)))
        else:
            for k in inv:
                mk = (0, reps[k], pm, rkey)
                c = memo.get(mk)
                if c is None:
                    t = tr["Replica"](reps[k], pm, inv, rmap)
                    c = memo[mk] = ids.setdefault(t, len(ids))
                out.append(c)
            mk = (1, st.controller, pm)
            c = memo.get(mk)
            if c is None:
                t = tr["Controller"](st.controller, pm, inv, rmap)
                ids = self._ids_ctrl
                c = memo[mk] = ids.setdefault(t, len(ids))
            out.append(c)
        inflight = st.inflight
        ids = self._ids_resp
        for k in inv:
            resp = inflight[k]
            if resp is None:
                out.append(-1)
                continue
            mk = (2, resp, pm, rkey)
            c = memo.get(mk)
            if c is None:
                t = tr["FetchResponse"](resp, pm, inv, rmap)
                c = memo[mk] = ids.setdefault(t, len(ids))
            out.append(c)
        mk = (3, st.writes, pm, rkey)
        c = memo.get(mk)
        if c is None:
            t = self._tr_writes(st.writes, pm, inv, rmap)
            ids = self._ids_writes
            c = memo[mk] = ids.setdefault(t, len(ids))
        out.append(c)
        rest = list(st[self._rest_start :])
        for i in self._link_fields:
            if st[i]:
                rest[i - self._rest_start] = self._tr_links(st[i], pm, inv, rmap)
        out.extend(rest)
        return tuple(out)

    def _orders(self, st: PartitionState) -> list[tuple[int, ...]]:
        """Candidate ``inv`` (new -> old) orders: replicas sorted by an index-free signature.

        The signature uses only what a renaming keeps: a replica's plain fields, its log's
        length and epochs (not record ids), its own view of who leads, its membership in the
        controller's sets and whether it has a fetch in flight.
        """
        plain = self._plain_of_replica
        reps = st.replicas
        # Fast path: the plain fields alone already order the replicas (the signature's first
        # component, so this is the same order the full signature gives).
        # (Sorting (plain, index) pairs gives the same order whenever the plain fields differ,
        # the only case returned here.)
        dec = sorted([(plain(rep), i) for i, rep in enumerate(reps)], reverse=True)
        for j in range(self.n - 1):
            if dec[j][0] == dec[j + 1][0]:
                break
        else:
            return [tuple([d[1] for d in dec])]
        ctrl = st.controller
        sets: list[Any] = [ctrl[k] for k in self._ctrl_sets]
        leads: list[Any] = [ctrl[k] for k in self._ctrl_leader]
        inflight = st.inflight
        sigs = [
            (
                plain(rep),
                [e[0] for e in rep.log],
                rep.leader == i,
                rep.leader == leads[0] if leads else False,
                [i == x for x in leads],
                [i in x for x in sets],
                inflight[i] is None,
            )
            for i, rep in enumerate(st.replicas)
        ]
        # Descending, so that the usual states (leader "leader" before "follower", longer logs
        # first) are already in canonical order and need no relabelled copy.
        order = sorted(range(self.n), key=sigs.__getitem__, reverse=True)
        groups: list[list[int]] = []
        for i in order:
            if groups and sigs[groups[-1][0]] == sigs[i]:
                groups[-1].append(i)
            else:
                groups.append([i])
        if len(groups) == self.n:
            return [tuple(order)]
        return [
            tuple(itertools.chain.from_iterable(choice))
            for choice in itertools.product(*(itertools.permutations(g) for g in groups))
        ]

    def _labels(self, st: PartitionState, inv: tuple[int, ...], pmt: tuple[int, ...]) -> _Labels:
        """Record id -> label: first sight in logs and in-flight responses, then the writes.

        Records seen only in writes are labelled in the order of their writes' other
        fields: records that tie there appear nowhere else and are truly interchangeable.
        """
        labels = _Labels()
        rf = labels.__getitem__
        for k in inv:
            for e in st.replicas[k].log:
                rf(e.record)
        for k in inv:
            resp = st.inflight[k]
            if resp is not None:
                for e in resp.entries:
                    rf(e.record)

        def peek(x: Any) -> Any:
            return labels.get(x, -1)

        for wi, enc_w, rec_fields in self._multisets:
            items: Any = st[wi]
            pending = sorted(
                (enc_w(w, pmt, inv, peek), n)
                for n, w in enumerate(items)
                if any(w[r] not in labels for r in rec_fields)
            )
            for _, n in pending:
                for r in rec_fields:
                    rf(items[n][r])
        return labels

    def _quick_labels(self, st: PartitionState, inv: tuple[int, ...]) -> dict[Any, int] | None:
        """``_labels`` when at most one record id is missing from the logs and responses.

        The order of the records seen only in writes matters only when there are two or
        more of them; otherwise it is first sight, then the one left (the common case, and
        a third of the search's canonicalisation time when done the general way).
        Returns None when the general ``_labels`` is needed.
        """
        labels: dict[Any, int] = {}
        reps = st.replicas
        for k in inv:
            for e in reps[k].log:
                r = e.record
                if r not in labels:
                    labels[r] = len(labels)
        for resp in st.inflight:
            if resp is not None:
                return None  # rare (split fetches): the general order, per ``inv``
        missing = None
        for wi, _enc, rec_fields in self._multisets:
            items: Any = st[wi]
            for w in items:
                for ri in rec_fields:
                    r = w[ri]
                    if r not in labels and r != missing:
                        if missing is not None:
                            return None
                        missing = r
        if missing is not None:
            labels[missing] = len(labels)
        return labels

    def _renaming(self, st: PartitionState, inv: tuple[int, ...]) -> dict[Any, Any] | None:
        """Old record id -> canonical id (``m<label+1>``), or None when nothing changes."""
        labels = self._quick_labels(st, inv)
        if labels is None:
            pm = [0] * self.n
            for new, old in enumerate(inv):
                pm[old] = new
            labels = self._labels(st, inv, tuple(pm))
        rn = {}
        same = True
        for rec, label in labels.items():
            new_id = self._names[label] if label < len(self._names) else f"m{label + 1}"
            rn[rec] = new_id
            if new_id != rec:
                same = False
        if same:
            # Labels follow production order; the writes must be in that order too.
            return None
        return rn

    def _encode(self, st: PartitionState, inv: tuple[int, ...]) -> Any:
        """Totally ordered encoding of ``st`` under replica order ``inv`` (ties only)."""
        pm = [0] * self.n
        for new, old in enumerate(inv):
            pm[old] = new
        pmt = tuple(pm)
        if not self.record_renaming:
            return self.enc["PartitionState"](st, pmt, inv, _identity)
        labels = self._labels(st, inv, pmt)
        return self.enc["PartitionState"](st, pmt, inv, labels.__getitem__)
