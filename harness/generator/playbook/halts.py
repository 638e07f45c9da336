"""Brokers that exit on their own: an observed outcome, judged against the model's halts.

A broker can stop itself: before KAFKA-7414 (2.1) a follower that finds its leader's log
end offset below its own with unclean election off logs ``FATAL ... Exiting because log
truncation is not allowed`` and calls ``System.exit(1)``
(``ReplicaFetcherThread.handleOffsetOutOfRange``); any version exits on a fatal error.
The model has the same outcome as ``Replica.halted`` (``broker_halted:X``). Before
KAFKA-4039 (fixed in 0.11.0.0) that exit deadlocks: the shutdown hook waits for the fetcher
thread that called ``System.exit``, so the JVM stays up, registered in ZooKeeper, its
socket server closed. A broker counts as halted once it logged its fatal line, exited or
not; a ``restart`` of a hung one kills it first.

A fence that waits for such a broker to fetch, register or process a LeaderAndIsr would
otherwise wait its whole timeout for something that never comes. So every step checks for
brokers that exited behind the harness's back (:meth:`HaltWatch.note_exits`), the fences
on one broker stop waiting when it is gone (:meth:`HaltWatch.gone`), and the exit becomes
a :class:`Halt` with the step it was seen at and the broker's own last fatal log line.

Whether the model predicted it (:func:`predicted_halt`): the model halts X at step j; an
exit seen at step k is predicted when j <= k, or when j > k and nothing the model does to X
between k and j changes X (the real follower's fetcher ran before its scripted ``fetch``
step: the exit came early, from the same state). Anything else is a diff naming the step
and the fatal line.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from harness.generator.playbook.cuts import CutLinks
from harness.readback.log4j import (
    ERROR_EXIT_LINE,
    FATAL_LINE,
    last_fatal,
    read_rotated,
)
from reference_model.run import RunResult


@dataclass
class Halt:
    """One broker exit the harness did not cause."""

    broker: str
    step: int  # the step during which the exit was seen (1-based)
    line: str  # the broker's last fatal log line of this incarnation, or the exit code
    exit_code: int | None  # None: still running (hung in its shutdown hook, KAFKA-4039)
    hung: bool  # the JVM did not exit: it stays registered and answers nothing
    predicted_step: int | None  # the model's step of this halt, None: not predicted

    @property
    def predicted(self) -> bool:
        return self.predicted_step is not None

    def describe(self) -> str:
        when = (
            f"predicted at step {self.predicted_step}"
            if self.predicted_step is not None
            else "NOT predicted by the model"
        )
        how = "halted, its JVM hung in shutdown (KAFKA-4039)" if self.hung else "exited"
        return f"step {self.step}: {self.broker} {how} ({when}): {self.line}"

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "predicted": self.predicted}


def dying_line(text: str) -> str | None:
    """The line by which a broker that is still running says it is exiting, if any.

    Before KAFKA-4039 (0.11.0.0) the fetcher thread that halts calls ``System.exit`` and
    the shutdown hook then waits for that very thread: the JVM never exits, stays
    registered in ZooKeeper and answers nothing. Its FATAL line is the observation.
    """
    found = last_fatal(text, (FATAL_LINE, ERROR_EXIT_LINE))
    return found[0] if found else None


def fatal_line(text: str, exit_code: int | None) -> str:
    """The last fatal line of the broker's current incarnation (``text``: its server.log)."""
    found = last_fatal(text)
    return found[0] if found else f"no fatal log line; exit code {exit_code}"


def predicted_halt(prediction: RunResult, idx: int, k: int) -> int | None:
    """The model's step of replica ``idx``'s halt that an exit seen at step ``k`` is.

    ``prediction.steps[j]`` is the state after step j (``steps[0]``: the initial state).
    """
    steps = prediction.steps
    if k < len(steps) and steps[k].state.replicas[idx].halted:
        j = k
        while j > 1 and steps[j - 1].state.replicas[idx].halted:
            j -= 1
        return j
    here = steps[min(k, len(steps) - 1)].state.replicas[idx]
    for j in range(k + 1, len(steps)):
        rep = steps[j].state.replicas[idx]
        if rep.halted:
            return j
        if rep != here:
            return None  # X changed in the model before its halt: not the same exit
    return None


class HaltWatch(CutLinks):
    """Notices brokers that exited on their own and records them as :class:`Halt`."""

    def gone(self, name: str) -> bool:
        """Broker ``name`` exited, or logged that it exits, though the harness did not stop
        it (the fences waiting on it stop waiting; :meth:`note_exits` records it)."""
        if name in self.down:
            return False
        if not self.cluster.is_running(name):
            return True
        return dying_line(read_rotated(self.cluster.broker_log(name))) is not None

    def note_exits(self, k: int) -> list[Halt]:
        """Record every broker that exited since the last check as a halt seen at step k.

        The broker then counts as down, as the model's halted replica is not alive: later
        steps treat it as any stopped broker (a ``restart`` starts it again).
        """
        new: list[Halt] = []
        for idx, name in enumerate(self.names):
            if not self.gone(name):
                continue
            code = self.cluster.exit_code(name)
            text = read_rotated(self.cluster.broker_log(name))
            halt = Halt(
                broker=name,
                step=k,
                line=fatal_line(text, code),
                exit_code=code,
                hung=self.cluster.is_running(name),
                predicted_step=predicted_halt(self.prediction, idx, k),
            )
            self.down.add(name)
            self.held.discard(name)
            self.user_paused.discard(name)
            self.halts.append(halt)
            new.append(halt)
            self.progress(halt.describe())
        return new
