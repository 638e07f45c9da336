"""Canonical keys of partition states (``Canonicaliser``): the explorer's deduplication.

The renamings and their soundness are described in ``explorer.symmetry``, which classifies
every state field and generates the encoders this class calls.
"""

from __future__ import annotations

import itertools
import operator
from typing import Any, Final

from explorer.symmetry import (
    FIELDS,
    LINK_SET,
    PLAIN,
    REPLICA,
    REPLICA_SET,
    _build_encoders,
    _build_field_transform,
    _build_transforms,
    _record_fields,
    check_classification,
    state_classes,
)
from explorer.symmetry_runtime import _CACHE, _CACHE_MAX, _Same
from reference_model.state import PartitionState


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
