"""The controllers' common shape: a decision, and the handful of events a controller answers.

Kafka's KRaft controller does not touch brokers: ``PartitionChangeBuilder.build()`` returns a
``PartitionChangeRecord`` and every broker replays it. The ZooKeeper ``KafkaController`` is the
same in effect: it writes the new leader and ISR to ZooKeeper and sends LeaderAndIsr. So here a
controller is a set of pure functions from (config, the controller's view, what happened) to
a tuple of :class:`Decision` (the records, in order), and ``reference_model.transitions``
delivers each one to the brokers. Which controller runs is chosen once per config
(``transitions.controller_of``): ``controller.zk.CONTROLLER`` or ``controller.kraft.CONTROLLER``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final, NamedTuple

from reference_model.state import Config, Controller

# Who hears a decision (``Decision.send``).
NOBODY: Final = "nobody"  # the controller's view changes; nothing is sent (yet)
EVERY_LIVE: Final = "every_live"  # LeaderAndIsr (KRaft: the record) to every live broker
JOINED: Final = "joined"  # the current state to the broker that just (re)joined (``to``)


class Decision(NamedTuple):
    """One decision of a controller: its new view and who is told.

    ``controller`` holds the decided fields (leader, epoch, ISR, ELR, LastKnownElr, the live
    brokers); its ``pending``/``held`` are the channel's, kept by the delivery, not decided
    here. ``note`` says what was decided, as the controller's log would ("" for nothing).
    """

    controller: Controller
    note: str = ""
    send: str = NOBODY
    to: int = -1


Decisions = tuple[Decision, ...]


def refusal(ctrl: Controller, note: str) -> Decisions:
    """Nothing changes; ``note`` says why (an error answered to the request)."""
    return (Decision(ctrl, note),)


class ControllerRules(NamedTuple):
    """What one controller does on each event (the same signatures in both modes).

    - ``broker_failed``: the broker's session expired or it shut down (ZooKeeper
      ``onBrokerFailure``; KRaft ``handleBrokerFenced``/``handleBrokerInControlledShutdown``);
    - ``broker_registered``: a restarted broker registers, with whether it stopped uncleanly
      (ZooKeeper ``onBrokerStartup``; KRaft ``registerBroker`` then ``handleBrokerUnfenced``);
    - ``broker_unfenced``: a registered broker's session is back (ZooKeeper: a new session,
      ``onBrokerStartup``; KRaft: heartbeats again, ``handleBrokerUnfenced``);
    - ``session_back``: at a heal, which of the two above applies and how the log says it:
      (label, separator, decisions), or None;
    - ``elect``: an election asked for by the operator (ZooKeeper: the controller's own;
      KRaft: ``ElectLeaders`` PREFERRED or UNCLEAN);
    - ``isr_shrink``: the leader drops a follower from the ISR (given the leader's new ISR);
    - ``isr_expanded``: the leader added a caught-up follower (AlterPartition / ZooKeeper);
    - ``leader_writes_isr``: ZooKeeper mode's leader changes its own ISR and writes it
      (``Partition.maybeShrinkIsr``); a KRaft leader waits for the controller's record.
    """

    name: str
    broker_failed: Callable[[Config, Controller, int], Decisions]
    broker_registered: Callable[[Config, Controller, int, bool], Decisions]
    broker_unfenced: Callable[[Config, Controller, int], Decisions]
    session_back: Callable[[Config, Controller, int, bool, bool], tuple[str, str, Decisions] | None]
    elect: Callable[[Config, Controller, int, bool], Decisions]
    isr_shrink: Callable[[Config, Controller, frozenset[int], int], Decisions]
    isr_expanded: Callable[[Config, Controller, frozenset[int]], Controller]
    leader_writes_isr: bool
