"""Fuzzed scenario files: every input ends as a Scenario or a one-line ScenarioError.

Three generators, from shallow to deep: random bytes (encodings, control characters, broken
YAML), random YAML documents (any shape), and scenario-shaped documents whose keys are the
real ones and whose values are random (so the validation of each field is reached). The
10,000-example run is ``benchmarks/fuzz_scenarios.py``; here a few hundred per generator.
"""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.generator.scenarios import parse_text
from reference_model.kinds import KINDS
from reference_model.scenario import (
    BROKER_STEP_KEYS,
    EXPECT_KEYS,
    LINK_KEYS,
    PRODUCE_KEYS,
    PRODUCER_ALIASES,
    PRODUCER_KEYS,
    TOP_KEYS,
    TOPIC_ALIASES,
    TOPIC_KEYS,
    Scenario,
    ScenarioError,
)

SETTINGS = settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**12), max_value=10**12),
    st.floats(allow_nan=True),
    st.text(max_size=12),
    st.sampled_from(["A", "B", "C", "leader", "followers", "all", "m1", "m2", "1", "all"]),
)
documents = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.one_of(st.text(max_size=8), st.integers(), st.booleans()), inner)
    ),
    max_leaves=20,
)
step_kinds = st.sampled_from([*KINDS, "nope", ""])
steps = st.lists(
    st.one_of(
        st.dictionaries(step_kinds, documents, min_size=1, max_size=2),
        st.builds(
            lambda k, b: {k: b},
            step_kinds,
            st.one_of(
                st.sampled_from(["A", "B", "C", "leader", "all", "m1"]),
                st.fixed_dictionaries(
                    {"broker": st.sampled_from(["A", "B", "Z"])},
                    optional={
                        "hold": documents,
                        "hw": documents,
                        "unclean": documents,
                        "record": documents,
                        "to": documents,
                    },
                ),
            ),
        ),
        documents,
    ),
    max_size=6,
)
scenario_shaped = st.fixed_dictionaries(
    {},
    optional={
        "name": documents,
        "description": documents,
        "fixed_by": documents,
        "brokers": st.one_of(st.lists(st.sampled_from(["A", "B", "C", "leader"])), documents),
        "leader": documents,
        "topic": st.one_of(
            st.fixed_dictionaries(
                {},
                optional={
                    "replication_factor": st.one_of(st.integers(-2, 8), documents),
                    "min_insync_replicas": st.one_of(st.integers(-1, 4), documents),
                    "unclean_leader_election": documents,
                },
            ),
            documents,
        ),
        "producer": st.one_of(st.fixed_dictionaries({"acks": documents}), documents),
        "steps": st.one_of(steps, documents),
        "expect": st.one_of(
            st.fixed_dictionaries(
                {},
                optional={
                    "lost_acked": documents,
                    "divergent_offsets": documents,
                    "replicas": documents,
                },
            ),
            documents,
        ),
    },
)


def _valid_doc(
    brokers: list[str], steps: list[tuple[str, int]], acks: str, isr: int, unclean: bool
) -> dict[str, Any]:
    out: list[dict[str, Any]] = []
    for n, (kind, who) in enumerate(steps):
        if kind == "produce":
            out.append({"produce": f"m{n}"})
        elif kind == "stale_checkpoint":
            out.append({kind: {"broker": brokers[who % len(brokers)], "hw": who}})
        else:
            out.append({kind: brokers[who % len(brokers)]})
    return {
        "name": "fuzzed",
        "brokers": brokers,
        "topic": {
            "min_insync_replicas": min(isr, len(brokers)),
            "unclean_leader_election": unclean,
        },
        "producer": {"acks": acks},
        "steps": out,
    }


valid_documents = st.builds(
    _valid_doc,
    st.lists(st.sampled_from("ABCDE"), min_size=1, max_size=5, unique=True),
    st.lists(st.tuples(st.sampled_from(sorted(KINDS)), st.integers(0, 4)), min_size=1, max_size=8),
    st.sampled_from(["0", "1", "all"]),
    st.integers(1, 3),
    st.booleans(),
)


@st.composite
def mutated_documents(draw: st.DrawFn) -> dict[str, Any]:
    """A valid scenario with zero or one field replaced by a random document."""
    doc = draw(valid_documents)
    where = draw(st.sampled_from(["none", "top", "topic", "producer", "step", "step_arg"]))
    junk = draw(documents)
    if where == "top":
        doc[draw(st.sampled_from([*doc, "expect", "leader", "x"]))] = junk
    elif where in ("topic", "producer"):
        doc[where][draw(st.sampled_from(["replication_factor", "min_insync_replicas", "acks"]))] = (
            junk
        )
    elif where == "step":
        doc["steps"][draw(st.integers(0, len(doc["steps"]) - 1))] = junk
    elif where == "step_arg":
        step = doc["steps"][draw(st.integers(0, len(doc["steps"]) - 1))]
        (kind,) = step
        step[kind] = junk
    return doc


def outcome(data: bytes | str) -> Scenario | ScenarioError:
    """The loader's answer; any other exception propagates and fails the property."""
    try:
        return parse_text(data, "fuzz.yaml")
    except ScenarioError as exc:
        return exc


def assert_one_liner(result: Scenario | ScenarioError) -> None:
    if isinstance(result, ScenarioError):
        msg = str(result)
        assert msg.startswith("fuzz.yaml"), msg
        assert "\n" not in msg and len(msg) < 400, msg
    else:
        assert isinstance(result, Scenario) and result.steps


def dump(doc: Any) -> str:
    return yaml.safe_dump(doc, allow_unicode=True)


@SETTINGS
@given(st.binary(max_size=400))
def test_random_bytes(data: bytes) -> None:
    assert_one_liner(outcome(data))


@SETTINGS
@given(documents)
def test_random_yaml_documents(doc: Any) -> None:
    assert_one_liner(outcome(dump(doc)))


@SETTINGS
@given(scenario_shaped)
def test_scenario_shaped_documents(doc: dict[str, Any]) -> None:
    assert_one_liner(outcome(dump(doc)))


@SETTINGS
@given(mutated_documents())
def test_valid_and_mutated_scenarios(doc: dict[str, Any]) -> None:
    assert_one_liner(outcome(dump(doc)))


def test_the_mutation_generator_reaches_valid_scenarios() -> None:
    """Guard against a generator that only ever produces errors (a vacuous property)."""
    found: list[bool] = []

    @settings(max_examples=100, deadline=None, database=None)
    @given(mutated_documents())
    def probe(doc: dict[str, Any]) -> None:
        found.append(isinstance(outcome(dump(doc)), Scenario))

    probe()
    assert any(found) and not all(found)


def test_non_utf8_file_is_one_line() -> None:
    err = outcome(b"name: caf\xe9\nsteps: []\n")
    assert isinstance(err, ScenarioError)
    assert str(err) == (
        "fuzz.yaml: line 1: not UTF-8 text (byte 0xe9 at offset 9); save the file as UTF-8"
    )


def test_alias_bomb_is_refused_without_printing_it() -> None:
    """Nested aliases make a document whose repr is exponential; the message stays short."""
    bomb = "a: &a [x, x]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)}, *{chr(97 + i)}]\n" for i in range(20)
    )
    err = outcome(bomb + "steps:\n  - crash: *u\n")
    assert isinstance(err, ScenarioError) and len(str(err)) < 200


def test_huge_replication_factor_is_refused_fast() -> None:
    err = outcome("topic: {replication_factor: 1000000000000}\nsteps: [{crash: A}]\n")
    assert str(err) == "fuzz.yaml: 1 to 5 brokers supported, got 1000000000000"


def test_deep_nesting_is_one_line() -> None:
    assert_one_liner(outcome("[" * 5000 + "]" * 5000))


def test_expect_block_is_parsed() -> None:
    sc = outcome(
        "brokers: [A, B]\nsteps: [{produce: m1}]\n"
        "expect: {lost_acked: [m1], divergent_offsets: [0], replicas: {B: [m1], A: []}}\n"
    )
    assert isinstance(sc, Scenario) and sc.expect is not None
    assert sc.expect.lost_acked == ("m1",) and sc.expect.divergent_offsets == (0,)
    assert sc.expect.replicas == (("A", ()), ("B", ("m1",)))
    err = outcome("brokers: [A]\nsteps: [{produce: m1}]\nexpect: {replicas: {Z: []}}\n")
    assert str(err) == "fuzz.yaml: expect.replicas: unknown broker 'Z' (brokers: A)"


# ---------------------------------------------------------------- unknown keys at every level

_LEVELS = ("top", "topic", "producer", "expect", "broker_step", "produce", "partition")
unknown_keys = st.text(
    alphabet=st.characters(codec="utf-8", exclude_categories=("Cs", "Cc", "Zl", "Zp")),
    min_size=1,
    max_size=12,
).filter(
    lambda k: (
        k.strip() == k
        and k
        not in {
            *TOP_KEYS,
            *TOPIC_KEYS,
            *TOPIC_ALIASES,
            *PRODUCER_KEYS,
            *PRODUCER_ALIASES,
            *EXPECT_KEYS,
            *BROKER_STEP_KEYS,
            *PRODUCE_KEYS,
            *LINK_KEYS,
        }
    )
)


def _with_unknown_key(level: str, key: str) -> dict[str, Any]:
    """A valid scenario with ``key`` added to the mapping at ``level``."""
    doc: dict[str, Any] = {
        "name": "k",
        "brokers": ["A", "B"],
        "topic": {"min_insync_replicas": 1},
        "producer": {"acks": "1"},
        "steps": [
            {"produce": {"record": "m1"}},
            {"crash": {"broker": "A"}},
            {"partition": {"from": "A", "to": ["B"]}},
        ],
        "expect": {"lost_acked": []},
    }
    target = {
        "top": doc,
        "topic": doc["topic"],
        "producer": doc["producer"],
        "expect": doc["expect"],
        "produce": doc["steps"][0]["produce"],
        "broker_step": doc["steps"][1]["crash"],
        "partition": doc["steps"][2]["partition"],
    }[level]
    target[key] = 1
    return doc


def test_the_unknown_key_base_document_is_valid() -> None:
    """Without the added key the document loads: the refusal below is the key's doing."""
    doc = _with_unknown_key("top", "name")  # overwrite a known key: still valid
    doc["name"] = "k"
    assert isinstance(outcome(dump(doc)), Scenario)


@SETTINGS
@given(st.sampled_from(_LEVELS), unknown_keys)
def test_unknown_keys_at_every_level_are_refused_by_name(level: str, key: str) -> None:
    err = outcome(dump(_with_unknown_key(level, key)))
    assert isinstance(err, ScenarioError), (level, key)
    msg = str(err)
    assert_one_liner(err)
    assert "unknown key" in msg and ("did you mean" in msg or "valid:" in msg or "belongs" in msg)
    shown = key if len(key) <= 40 else key[:40]
    assert repr(shown)[1:-1] in msg or shown in msg, msg


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "topic: {replication_factor: 3, min_insync: 2}\nsteps: [{crash: A}]\n",
            "fuzz.yaml: topic: unknown key 'min_insync' (did you mean 'min_insync_replicas'?)",
        ),
        (
            "topic: {replication_factor: 3, acks: 1}\nsteps: [{crash: A}]\n",
            "fuzz.yaml: topic: unknown key 'acks' (it belongs under 'producer:')",
        ),
        (
            "min.insync.replicas: 2\ntopic: {replication_factor: 3}\nsteps: [{crash: A}]\n",
            "fuzz.yaml: unknown key 'min.insync.replicas' (it belongs under 'topic:')",
        ),
        (
            "topic: {replication_factor: 3}\nstpes: [{crash: A}]\n",
            "fuzz.yaml: unknown key 'stpes' (did you mean 'steps'?)",
        ),
        (
            "topic: {replication_factor: 3}\nsteps: [{crahs: A}]\n",
            "fuzz.yaml: step 1: unknown event 'crahs' (did you mean 'crash'?)",
        ),
        (
            "topic: {replication_factor: 3}\nsteps: [{crash: {broker: A, hodl: [B]}}]\n",
            "fuzz.yaml: step 1: crash: unknown key 'hodl' (did you mean 'hold'?)",
        ),
        (
            "topic: {replication_factor: 2}\nsteps: [{partition: {from: A, too: [B]}}]\n",
            "fuzz.yaml: step 1: partition: unknown key 'too' (did you mean 'to'?)",
        ),
        (
            "topic: {replication_factor: 2}\nsteps: [{produce: m}]\nexpect: {lost: [m]}\n",
            "fuzz.yaml: expect: unknown key 'lost' (did you mean 'lost_acked'?)",
        ),
        (
            "topic: {replication_factor: 3, min.insync.replicas: 2, min_insync_replicas: 2}\n"
            "steps: [{crash: A}]\n",
            "fuzz.yaml: topic: 'min_insync_replicas' given twice (as 'min.insync.replicas' and "
            "'min_insync_replicas'); keep one",
        ),
    ],
)
def test_unknown_key_messages_name_the_closest_valid_key(text: str, message: str) -> None:
    assert str(outcome(text)) == message


def test_kafka_config_names_are_aliases() -> None:
    """Kafka's own spelling means the same as ours: a mutation test against the silent
    ignore of issue 21 (the model ran with min.insync 1 where the file said 2)."""
    ours = outcome(
        "topic: {replication_factor: 3, min_insync_replicas: 2, unclean_leader_election: true}\n"
        "producer: {acks: all}\nsteps: [{crash: A}]\n"
    )
    kafkas = outcome(
        "topic: {replication.factor: 3, min.insync.replicas: 2,\n"
        "        unclean.leader.election.enable: 'true'}\n"
        "producer: {acks: -1}\nsteps: [{crash: A}]\n"
    )
    assert isinstance(ours, Scenario) and isinstance(kafkas, Scenario)
    assert (kafkas.rf, kafkas.min_insync, kafkas.unclean, kafkas.acks) == (3, 2, True, "all")
    assert (ours.rf, ours.min_insync, ours.unclean, ours.acks) == (3, 2, True, "all")
    assert kafkas.settings_text().startswith(
        "acks=all min.insync.replicas=2 unclean.leader.election.enable=true replication.factor=3"
    )
