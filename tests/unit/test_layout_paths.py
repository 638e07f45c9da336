"""Files the harness finds next to its own source still exist where it looks.

A module moved one folder deeper (``harness/db/images.py`` to ``harness/db/runtime/``)
once kept ``parent.parent.parent`` and looked for ``docker/checksums.txt`` inside
``harness/``: every docker run failed at image lookup, which no unit test noticed.
"""

from __future__ import annotations

from harness.db.runtime import images
from harness.generator.scenarios import SCENARIO_DIR


def test_the_docker_build_inputs_are_found() -> None:
    assert images.CHECKSUMS.is_file(), images.CHECKSUMS
    assert images.ENTRYPOINT.is_file(), images.ENTRYPOINT


def test_the_catalogue_is_found() -> None:
    assert any(SCENARIO_DIR.glob("*.yaml")), SCENARIO_DIR
