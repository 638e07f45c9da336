"""The run-time helpers of the canonical-key functions: what the generated
``explorer/_generated/canon.py`` calls, and nothing else.

Why a module of its own: the generated module is imported by ``explorer.symmetry`` (its
generator), so if it imported its helpers from there the two would import each other. Here
they sit below both: ``symmetry`` and ``_generated.canon`` import this module, it imports
neither.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Final

Encoder = Callable[..., Any]


def _mask(ids: Iterable[int], pm: tuple[int, ...]) -> int:
    m = 0
    for j in ids:
        m |= 1 << pm[j]
    return m


def _sorted_ms(items: tuple[Any, ...], enc: Encoder, pm: Any, inv: Any, rf: Any) -> tuple[Any, ...]:
    return tuple(sorted([enc(e, pm, inv, rf) for e in items]))


_CACHE: Final[dict[Any, Any]] = {}
_CACHE_MAX: Final = 400_000


def _cached(tr: Encoder, o: Any, pm: Any, inv: Any, rn: Any) -> Any:
    """Relabelled per-replica values, memoised when no record is renamed.

    A successor state shares every untouched replica object with its parent, so the same
    replica is relabelled under the same permutation again and again. The memo is cleared
    when it grows past ``_CACHE_MAX`` entries (it only saves time, never changes a key).
    """
    if type(rn) is not _Same:
        return tr(o, pm, inv, rn)
    k = (o, pm)
    r = _CACHE.get(k)
    if r is None:
        if len(_CACHE) >= _CACHE_MAX:
            _CACHE.clear()
        r = _CACHE[k] = tr(o, pm, inv, rn)
    return r


def clear_cache() -> None:
    """Drop the relabelling memo (the explorer calls it when a search ends)."""
    _CACHE.clear()


def _ordered_ms(
    items: tuple[Any, ...], tr: Encoder, pm: Any, inv: Any, rn: Any, order: Encoder
) -> tuple[Any, ...]:
    return tuple(sorted([tr(e, pm, inv, rn) for e in items], key=order))


def _record_order_key(index: int) -> Encoder:
    def key(o: Any) -> Any:
        return record_rank(o[index])

    return key


def record_rank(record: str) -> tuple[int, str]:
    """Order of record ids: ``m2`` before ``m10`` (ids are ``m`` + production number)."""
    digits = record.lstrip("m")
    return (int(digits), record) if digits.isdigit() else (1 << 30, record)


class _Same(dict[Any, Any]):
    """Record renaming that changes nothing."""

    def __missing__(self, key: Any) -> Any:
        return key
