"""The playbook's step dispatch table (no broker needed).

The step families live in separate mixins (harness.generator.playbook); ``Playbook.STEPS``
is the one place that says which of them plays which scenario step kind. It must be the
dispatch by name it replaced: every ``do_<kind>`` method the composed class has, and
nothing else.
"""

from __future__ import annotations

from harness.generator.playbook import Playbook
from reference_model.events import KINDS


def test_steps_table_is_every_do_method_of_the_composed_playbook() -> None:
    by_name = {k: getattr(Playbook, f"do_{k}") for k in KINDS if hasattr(Playbook, f"do_{k}")}
    assert by_name == Playbook.STEPS
    assert set(KINDS) - set(Playbook.STEPS) == {"fetch_response"}


def test_every_do_method_is_a_step_kind() -> None:
    methods = {n[3:] for n in dir(Playbook) if n.startswith("do_")}
    assert methods <= set(KINDS)
    assert methods == set(Playbook.STEPS)
