"""Scenario files as test items: one per file x Kafka version (x profile), played or modelled."""

from __future__ import annotations

import json
import re
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from harness.checker.expect import (
    diff_rows,
    expect_problems,
    expected_logs,
    lost_step_lines,
    read_replicas,
    replica_table,
)
from harness.checker.verdicts import two_verdicts
from harness.db.catalogue.versions import KafkaVersion, resolve_version
from harness.pytest_plugin.options import (
    _SETTINGS,
    RUN_FOLDER,
    _settings,
    _unique,
    unavailable,
    warm_clusters,
)
from reference_model.scenario import Scenario, ScenarioError

if TYPE_CHECKING:
    from harness.generator.warm import Slot, WarmClusters
    from reference_model.run import RunResult

# ---------------------------------------------------------------- scenario files as tests


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    settings = _settings(parent.config)
    if not settings.active or file_path.suffix not in (".yaml", ".yml"):
        return None
    if not _looks_like_scenario(file_path):
        return None
    collector: ScenarioFile = ScenarioFile.from_parent(parent, path=file_path)
    return collector


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """With warm clusters, play the broker items of one version and cluster configuration
    one after another (in the slots the scenario items already had), so one running cluster
    serves them in turn; other items keep their places."""
    settings = config.stash.get(_SETTINGS, None)
    if settings is None or not settings.active or settings.fresh:
        return
    slots = [i for i, it in enumerate(items) if isinstance(it, ScenarioItem)]
    if len(slots) < 2:
        return
    mine = [items[i] for i in slots]
    order = {v: k for k, v in enumerate(settings.versions)}

    from harness.generator.warm import play_order

    def slot(it: ScenarioItem) -> Slot:
        return it.slot(settings.backend, order)

    scenario_items = [it for it in mine if isinstance(it, ScenarioItem)]
    model = [it for it in scenario_items if it.target.startswith("model:")]
    broker = [it for it in scenario_items if not it.target.startswith("model:")]
    for i, it in zip(slots, model + play_order(broker, slot), strict=True):
        items[i] = it


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> None:
    """Tell a scenario item which item runs after it (:meth:`ScenarioItem._prestart_next`)."""
    if isinstance(item, ScenarioItem):
        item.next_item = nextitem


def _looks_like_scenario(path: Path) -> bool:
    """A YAML file with a top-level ``steps:`` key (other YAML files are not ours)."""
    try:
        head = path.read_bytes()[:65536]
    except OSError:
        return False
    return re.search(rb"(?m)^steps\s*:", head) is not None


class ScenarioFile(pytest.File):
    """One scenario file: one item per Kafka version and per model generation."""

    def collect(self) -> Iterator[pytest.Item]:
        from harness.generator.scenarios import load_scenario

        settings = _settings(self.config)
        try:
            scenario = load_scenario(self.path)
        except ScenarioError as exc:
            yield BadScenarioItem.from_parent(self, name=self.path.stem, message=str(exc))
            return
        for v in settings.versions:
            yield ScenarioItem.from_parent(
                self, name=f"{scenario.name}[{v}]", scenario=scenario, target=v
            )
        for p in settings.protocols:
            yield ScenarioItem.from_parent(
                self, name=f"{scenario.name}[model:{p}]", scenario=scenario, target=f"model:{p}"
            )


class HwchaosFailure(AssertionError):
    """The brokers, the model or the ``expect:`` block disagree; the message is the diff."""


class BadScenarioItem(pytest.Item):
    """A scenario file that does not load: fails with the loader's one-line message."""

    def __init__(self, *, message: str, **kw: Any) -> None:
        super().__init__(**kw)
        self.message = message

    def runtest(self) -> None:
        raise HwchaosFailure(self.message)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str:
        return self.message

    def reportinfo(self) -> tuple[Path, int, str]:
        return self.path, 0, self.name


class ScenarioItem(pytest.Item):
    """One scenario on one target: a Kafka version, or ``model:<generation>``."""

    def __init__(self, *, scenario: Scenario, target: str, **kw: Any) -> None:
        super().__init__(**kw)
        self.scenario = scenario
        self.target = target
        self.next_item: pytest.Item | None = None  # pytest's nextitem (pytest_runtest_protocol)
        self._run_id: str | None = None
        if not target.startswith("model:"):
            self.add_marker(pytest.mark.broker)

    def run_id(self) -> str:
        """This item's run id (its run folder's name), fixed the first time it is asked for:
        by the item before it when it starts this item's cluster ahead (:meth:`_prestart_next`:
        a cluster only a fresh start will do is handed over by run id), else by its own run."""
        if self._run_id is None:
            try:
                name = resolve_version(self.target).name
            except Exception:  # the item itself reports it
                name = self.target
            self._run_id = f"{self.scenario.name}__{name}__{time.strftime('%Y%m%dT%H%M%S')}"
        return self._run_id

    def _cluster_key(
        self, version: KafkaVersion, backend: str, prediction: RunResult | None = None
    ) -> str | None:
        """This item's cluster configuration (harness.generator.warm.warm_key)."""
        from harness.generator.warm import warm_key
        from reference_model.run import run_scenario

        if prediction is None:
            prediction = run_scenario(self.scenario, version.generation)
        return warm_key(self.scenario, prediction, version.name, backend, 1)

    def slot(self, backend: str, order: dict[str, int]) -> Slot:
        """Where a warm cluster wants this broker item (harness.generator.warm.play_order):
        by version (``order``), cluster configuration, the tidiest first, each
        configuration's cluster started while a run that waits on Kafka's clock plays."""
        from harness.generator.warm import Slot, slot_of
        from reference_model.run import run_scenario

        group = order.get(self.target, 0)
        try:
            version = resolve_version(self.target)
            prediction = run_scenario(self.scenario, version.generation)
        except Exception:  # the item itself reports it
            steps = len(self.scenario.steps)
            return Slot(group, None, ("~", 0, self.scenario.name), steps, False)
        return slot_of(group, self.scenario, prediction, version.name, backend)

    def runtest(self) -> None:
        if self.target.startswith("model:"):
            self._run_model(self.target.split(":", 1)[1])
        else:
            self._run_brokers(resolve_version(self.target))

    def _run_model(self, protocol: str) -> None:
        from reference_model.run import run_scenario

        pj = run_scenario(self.scenario, protocol).to_json()
        predicted = {n: [e["record"] for e in log] for n, log in pj["replicas"].items()}
        self._record_safety(pj["lost_acked"], pj["divergent_offsets"], "model only")
        problems = expect_problems(
            self.scenario, pj["lost_acked"], pj["divergent_offsets"], predicted
        )
        where = f"{self.scenario.name} under the model ({protocol})"
        loss = self._loss_problems(where, pj["lost_acked"], pj["divergent_offsets"])
        if problems or loss:
            head = [f"{where}: expect: does not hold", *problems] if problems else []
            raise HwchaosFailure(
                "\n".join(
                    [
                        *head,
                        *loss,
                        *replica_table(predicted, None, expected_logs(self.scenario)),
                        *lost_step_lines(self.scenario, pj),
                    ]
                )
            )

    def _run_brokers(self, version: KafkaVersion) -> None:
        from harness.trial import once_more_if_missed, run_on_brokers

        settings = _settings(self.config)
        reason = unavailable(version, settings.backend)
        if reason is not None:
            pytest.skip(reason)
        folder = _unique(settings.out / self.run_id())
        self.user_properties.append((RUN_FOLDER, str(folder)))
        self.add_report_section("call", "hwchaos", f"run folder: {folder}")
        warm = warm_clusters(self.config)
        if warm is not None:
            self._prestart_next(warm, version, settings.backend)

        def one(where: Path) -> dict[str, Any]:
            run_on_brokers(
                self.scenario, version.name, settings.backend, where, where.name, warm=warm
            )
            return dict(json.loads((where / "verdict.json").read_text()))

        def say(said: str) -> None:
            warnings.warn(said, stacklevel=1)
            self.add_report_section("call", "hwchaos", said)

        # A run the harness says it did not play as scripted is no evidence on the model:
        # played once more, the rule every entry point follows (harness.trial).
        doc, folder, first = once_more_if_missed(
            one, folder, lambda d: str(d.get("harness_missed") or ""), say
        )
        if first is not None:
            self.user_properties.remove((RUN_FOLDER, str(first)))
            self.user_properties += [
                ("hwchaos_played_again", str(first)),
                (RUN_FOLDER, str(folder)),
            ]
        cluster = json.loads((folder / "run.json").read_text()).get("extra", {}).get("cluster")
        if cluster:
            self.user_properties.append(("hwchaos_cluster_reused", str(cluster.get("reused"))))
            if cluster.get("prestarted"):
                after = cluster["prestarted"].get("after", "")
                self.user_properties.append(("hwchaos_cluster_started_after", str(after)))
        where = f"{self.scenario.name} on Kafka {version.name} ({version.generation})"
        both = two_verdicts(doc)
        self._record_safety(both.lost_acked, both.divergent_offsets, both.agreement, both.safety)
        self.add_report_section("call", "hwchaos", both.last_line())
        loss = self._loss_problems(where, both.lost_acked, both.divergent_offsets)
        verdict = doc.get("verdict")
        failure = str(doc.get("extra", {}).get("failure", ""))
        if verdict == "step_prevented":
            # Not a skip: the model does not predict this step prevented on this version, so
            # the harness failing to play it is a gap (issue 9), not a property of Kafka.
            raise HwchaosFailure(
                f"{where}: step_prevented (the model does not predict it): {failure}\n"
                f"run folder: {folder}"
            )
        detail = doc.get("verdict_detail") or {}
        hw = detail.get("hw") or {}
        if hw:
            # The per-step HW check, for --junitxml: agreement counts and the first step.
            self.user_properties.append(("hwchaos_hw_source", str(hw.get("source", ""))))
            self.user_properties.append(
                ("hwchaos_hw_steps", f"{hw.get('steps_agreeing')}/{hw.get('steps_compared')}")
            )
            self.user_properties.append(("hwchaos_hw_first_step", str(hw.get("first_step"))))
        consumer = detail.get("consumer") or {}
        if consumer:
            self.user_properties.append(("hwchaos_consumer", str(consumer.get("summary", ""))))
        if verdict == "prevented":
            p = doc.get("prevented") or {}
            self.add_report_section(
                "call",
                "hwchaos",
                f"prevented as predicted at step {p.get('step')} ({p.get('event')}): "
                f"{p.get('reason')}; harness: {p.get('harness_note')}",
            )
            # The logs up to that step matched the model; the scenario's ``expect`` block
            # describes the whole ordering, which this version never lets happen. A loss
            # before the prevented step is still a loss.
            if loss:
                raise HwchaosFailure("\n".join([*loss, f"run folder: {folder}"]))
            return
        if verdict not in ("match", "model_mismatch"):
            raise HwchaosFailure(f"{where}: {verdict}: {failure}\nrun folder: {folder}")
        predicted, observed = read_replicas(folder)
        lines: list[str] = []
        if verdict == "model_mismatch":
            step = detail.get("first_differing_step")
            lines.append(
                f"{where}: MODEL MISMATCH, "
                + (
                    f"first differing step {step}: {self._step_text(step)}"
                    if step
                    else "first differing step: none in the per-step LEOs (only the records differ)"
                )
            )
            lines += replica_table(predicted, observed, None)
            lines += diff_rows(detail.get("differences", []))
            lines.append(
                f"lost acknowledged: predicted {detail.get('predicted_lost_acked')} observed "
                f"{detail.get('lost_acked')}; divergent offsets: predicted "
                f"{detail.get('predicted_divergent_offsets')} observed "
                f"{detail.get('divergent_offsets')}"
            )
        problems = expect_problems(
            self.scenario, list(doc["lost_acked"]), list(doc["divergent_offsets"]), observed
        )
        if problems:
            if not lines:
                lines.append(f"{where}: expect: does not hold (the model agrees with the brokers)")
                lines += replica_table(predicted, observed, expected_logs(self.scenario))
            else:
                lines.append("expect: does not hold either")
            lines += problems
        if loss and not lines:
            lines += loss
            lines += replica_table(predicted, observed, None)
        elif loss:
            lines += loss
        if lines:
            raise HwchaosFailure("\n".join([*lines, f"run folder: {folder}"]))

    def _prestart_next(self, warm: WarmClusters, version: KafkaVersion, backend: str) -> None:
        """When the item pytest runs next is a broker item that will not take this item's
        cluster, have its cluster started in the background while this one plays, as
        ``matrix`` does (harness.generator.background; ``HWCHAOS_PRESTART=0`` turns it off).

        Why here: half of a version's catalogue needs a cluster of its own (the first of
        each configuration, the network and failover scenarios), and pytest knows the next
        item (under pytest-xdist too: a worker runs an item once it holds the one after).
        Nothing is started for a next item this machine cannot run (it will skip), and a
        failure here only costs the speed-up: the next item starts its own cluster."""
        from harness.generator.runner import prestart_next

        nxt = self.next_item
        if not isinstance(nxt, ScenarioItem) or nxt.target.startswith("model:"):
            return
        try:
            theirs = resolve_version(nxt.target)
            if unavailable(theirs, backend) is not None:
                return
            mine = self._cluster_key(version, backend)
            prestart_next(warm, nxt.scenario, theirs, backend, nxt.run_id(), playing_key=mine)
        except Exception as exc:  # a speed-up only: the next item says why it cannot run
            warnings.warn(f"no background start for {nxt.name}: {exc}", stacklevel=1)

    def _record_safety(
        self, lost: list[str], divergent: list[int], agreement: str, safety: str = ""
    ) -> None:
        """Both verdicts as user properties, so ``--junitxml`` carries what was lost."""
        if not safety:
            safety = "lost" if lost or divergent else "no loss"
        self.user_properties += [
            ("hwchaos_agreement", agreement),
            ("hwchaos_safety", safety),
            ("lost_acked", ",".join(sorted(lost))),
            ("divergent_offsets", ",".join(str(o) for o in sorted(divergent))),
        ]

    def _loss_problems(self, where: str, lost: list[str], divergent: list[int]) -> list[str]:
        """Under ``--hwchaos-fail-on-loss``: one line per kind of loss the scenario's
        ``expect:`` does not already decide."""
        if not _settings(self.config).fail_on_loss:
            return []
        e = self.scenario.expect
        out = []
        if lost and (e is None or e.lost_acked is None):
            out.append(f"{where}: acknowledged writes LOST: {', '.join(sorted(lost))}")
        if divergent and (e is None or e.divergent_offsets is None):
            offs = ", ".join(str(o) for o in sorted(divergent))
            out.append(f"{where}: replicas DIVERGE at offsets {offs}")
        if out:
            out.append(
                "  (--hwchaos-fail-on-loss: a loss fails the test even when the model "
                "predicted it; give expect: lost_acked/divergent_offsets to accept it)"
            )
        return out

    def _step_text(self, step: int | None) -> str:
        if step is None or not 1 <= step <= len(self.scenario.steps):
            return ""
        return self.scenario.steps[step - 1].describe(self.scenario.brokers)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        if isinstance(excinfo.value, HwchaosFailure):
            return str(excinfo.value)
        return super().repr_failure(excinfo)

    def reportinfo(self) -> tuple[Path, int, str]:
        return self.path, 0, f"hwchaos: {self.name}"
