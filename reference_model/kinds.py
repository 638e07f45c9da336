"""Step kinds: one declaration per kind, the registry every other table is derived from.

A step kind is one thing that happens in a cluster (``crash``, ``fetch``, ``partition``...).
Before this registry the facts about a kind lived in a dozen tables (scenario parsing, the
model's dispatch, partial-order reduction, the explorer's alphabet, the harness's dispatch,
the docs); a new kind had to be added to each and nothing said when one was missed. Now each
kind is a :class:`StepKind` in :data:`KINDS`, and:

- the model's rule is registered where it lives, ``@handles("crash")`` on the function in
  ``reference_model.broker`` / ``reference_model.transitions``; ``transitions.HANDLERS`` is
  resolved from those registrations once, at import, into a plain dict (the explorer pays
  nothing per transition) and refuses to load if a kind has no rule or a rule no kind;
- the explorer's partial-order reduction (``explorer.por``: ``LOCAL``/``FETCHES``/
  ``FOLLOWER_ONLY``) reads :attr:`StepKind.por`; ``explorer.search.alphabet`` generates
  only the kinds with an :attr:`StepKind.explore` bound (checked by a test);
- the harness's step is registered on its ``do_<kind>`` method, ``@plays("crash")``
  (``harness.generator.playbook.steps``); a kind declared model-only (``played=False``) has
  none and the harness refuses it with a one-line error naming it; the run network is set
  up for the kinds with :attr:`StepKind.needs_network` (``harness.generator.realise``);
- the docs' step table (``docs/scenarios.md``) is generated from here (``make docs``).

``tests/unit/test_step_kinds.py`` checks all of it. A leaf module: it imports nothing of the
model at run time, so any module may import it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, Literal, TypeVar, cast

if TYPE_CHECKING:
    from reference_model.events import Event
    from reference_model.state import Config, PartitionState

    Handler = Callable[[Config, PartitionState, Event], tuple[PartitionState, str]]

Por = Literal["local", "fetch", "follower_only", "never"]


@dataclass(frozen=True)
class StepKind:
    """One step kind: what a scenario writes, what it means, and how each part treats it.

    ``por`` (partial-order reduction, ``explorer.por``): ``local`` reads and writes one
    replica's own files (``checkpoint``, ``flush``: commute with each other and with fetches
    of other replicas); ``fetch`` touches the follower, its leader and the controller's ISR;
    ``follower_only`` writes the follower alone; ``never``: treated as dependent on every
    other step (always sound).

    ``explore``: whether ``hwchaos explore`` tries the kind. None: never (scenario-only);
    ``""``: always, where it can take effect; otherwise the ``explorer.search.Bounds`` field
    that turns it on or bounds it (``"!field"``: tried while that field is off).

    ``played``: the harness plays it on real brokers (a ``@plays`` method); False: the model
    has it but no real broker can be made to do it alone (``fetch_response`` without its
    request), and the harness refuses a scenario that uses it.

    ``needs_network``: playing it needs the run's network namespaces (iptables cuts).
    """

    name: str
    takes_replica: bool
    takes_record: bool
    takes_value: bool
    meaning: str
    por: Por = "never"
    explore: str | None = None
    played: bool = True
    needs_network: bool = False


def _kinds(*kinds: StepKind) -> dict[str, StepKind]:
    return {k.name: k for k in kinds}


KINDS: Final[dict[str, StepKind]] = _kinds(
    StepKind(
        "produce", False, True, False, "producer sends a record to the leader it knows",
        explore="records",
    ),
    StepKind(
        "fetch", True, False, False, "follower fetch: request and response in one step",
        por="fetch", explore="!split_fetch",
    ),
    StepKind(
        "fetch_request", True, False, False, "follower sends Fetch; the leader processes it",
        por="fetch", explore="split_fetch",
    ),
    StepKind(
        "fetch_response", True, False, False, "the follower processes its outstanding response",
        por="follower_only", explore="split_fetch", played=False,
    ),
    StepKind(
        "leader_epoch_request", True, False, False,
        "follower runs OffsetsForLeaderEpoch and truncates (0.11 on)",
        por="follower_only", explore="",
    ),
    StepKind(
        "checkpoint", True, False, False, "broker writes replication-offset-checkpoint",
        por="local", explore="checkpoints",
    ),
    StepKind(
        "flush", True, False, False, "broker fsyncs the log (recovery point = LEO)",
        por="local", explore="power_losses",
    ),
    StepKind(
        "crash", True, False, False, "SIGKILL: the process dies, the page cache survives",
        explore="crashes",
    ),
    StepKind(
        "power_loss", True, False, False, "machine loses power: unflushed tail is lost",
        explore="power_losses",
    ),
    StepKind(
        "clean_shutdown", True, False, False, "controlled shutdown, flush, checkpoint, stop",
        explore="clean_shutdown",
    ),
    StepKind(
        "restart", True, False, False, "broker starts, reads its checkpoints, registers",
        explore="",
    ),
    StepKind("pause", True, False, False, "SIGSTOP: alive but silent"),
    StepKind("resume", True, False, False, "SIGCONT"),
    StepKind(
        "detect", True, False, False, "controller notices the broker is gone (session expiry)",
        explore="",
    ),
    StepKind(
        "elect", True, False, False, "controller elects this broker (preferred/forced election)"
    ),
    StepKind(
        "isr_shrink", True, False, False, "leader drops a lagging follower from the ISR",
        explore="isr_shrink", needs_network=True,
    ),
    StepKind(
        "leader_and_isr", True, False, False, "a held-back LeaderAndIsr reaches the broker",
        explore="delayed_leader_and_isr", needs_network=True,
    ),
    StepKind(
        "controller_failover", True, False, False,
        "the controller fails over: this broker misses what was queued for it",
        explore="failover",
    ),
    StepKind(
        "stale_checkpoint", True, False, True, "overwrite replication-offset-checkpoint with HW"
    ),
    StepKind(
        "torn_write", True, False, False,
        "while the broker is down its last batch is torn: recovery drops it on restart",
    ),
    StepKind(
        "partition", True, False, False, "cut network links from one node to others (iptables)",
        explore="partitions", needs_network=True,
    ),
    StepKind(
        "heal", True, False, False, "restore the cut links of a node (or every link: all)",
        explore="partitions", needs_network=True,
    ),
)  # fmt: skip


def kinds_where(**facts: object) -> frozenset[str]:
    """The names of the kinds whose fields equal ``facts`` (``kinds_where(por="local")``)."""
    return frozenset(
        k.name for k in KINDS.values() if all(getattr(k, f) == v for f, v in facts.items())
    )


# ------------------------------------------------------------ the model's rules, by kind

_RULES: dict[str, Callable[..., object]] = {}
F = TypeVar("F", bound=Callable[..., object])


def handles(kind: str) -> Callable[[F], F]:
    """Register the decorated function as the model's rule for step kind ``kind``.

    Placed on the rule where it lives (a broker rule in ``broker``, a controller-facing
    handler in ``transitions``), so a reader goes from the kind's declaration above to its
    rule by searching ``@handles("kind")``. Refuses an undeclared kind or a second rule.
    """
    if kind not in KINDS:
        raise ValueError(f"@handles({kind!r}): no such step kind in reference_model.kinds")

    def register(fn: F) -> F:
        if kind in _RULES:
            raise ValueError(f"@handles({kind!r}): {_RULES[kind].__qualname__} already handles it")
        _RULES[kind] = fn
        return fn

    return register


def model_rules() -> dict[str, Handler]:
    """Kind -> its registered rule, in :data:`KINDS` order; raises naming a kind without one.

    Called once by ``reference_model.transitions`` after its imports have registered every
    rule: the result is the plain dict ``apply`` indexes.
    """
    missing = [k for k in KINDS if k not in _RULES]
    if missing:
        raise LookupError(f"step kinds without a model rule (@handles): {', '.join(missing)}")
    return cast("dict[str, Handler]", {k: _RULES[k] for k in KINDS})
