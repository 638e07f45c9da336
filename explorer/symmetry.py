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

Soundness (see the note in ``explorer.search``): record renaming is exact (record ids
are only compared for equality, and writes are only read as a multiset). Replica permutation is
exact for every rule except the controller's choice among several eligible replicas, which
follows the assignment order (``OfflinePartitionLeaderSelector``: first live ISR member); the
explorer's tests compare its counterexamples with and without it.
"""

from __future__ import annotations

import hashlib
from typing import Any, Final, NamedTuple

from explorer.symmetry_runtime import (
    Encoder,
    _cached,
    _mask,
    _ordered_ms,
    _record_order_key,
    _sorted_ms,
)
from reference_model import state as state_module


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
    ``tr_PartitionState`` (hence ``explorer.canonical.Canonicaliser.key``) relabels it."""
    ns = _build_transforms_ns()
    exec(f"def f(v, pm, inv, rn):\n    return {_transform_expr(kind, 'v')}\n", ns)
    return ns["f"]  # type: ignore[no-any-return]


def _record_fields(cls_name: str) -> list[int]:
    fields: tuple[str, ...] = state_classes()[cls_name]._fields  # type: ignore[attr-defined]
    return [i for i, f in enumerate(fields) if FIELDS[cls_name][f] == RECORD]
