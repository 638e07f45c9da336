"""The docker backend runs from its image alone: no release tree and no installed Kafka on
the host (a CI cache, a developer's machine with images only), a KRaft run still reaches
the model's verdict: the metadata-record schemas come from the image."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.db.catalogue.versions import resolve_version
from harness.db.runtime.docker import docker_available
from harness.generator.scenarios import SCENARIO_DIR, load_scenario
from harness.trial import trial
from tests.verdicts import trial_realised, why

pytestmark = [pytest.mark.broker, pytest.mark.docker]

VERSION = "3.3.1-kraft"


def test_kraft_in_docker_with_no_tree_on_the_host(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    reason = docker_available()
    if reason is not None:
        pytest.skip(reason)
    import docker
    from harness.db.runtime.images import image_id, kafka_image

    version = resolve_version(VERSION)
    client = docker.from_env()  # type: ignore[attr-defined]
    try:
        if image_id(client, kafka_image(version)) is None:
            pytest.skip(f"needs the image {kafka_image(version)} (hwchaos image build --kafka "
                        f"{version.release}); this test never builds it, it has no tree to")
    finally:
        client.close()
    for var, sub in (("HWCHAOS_KAFKA_DISTS", "dists"), ("HWCHAOS_KAFKA_CACHE", "kafka"),
                     ("HWCHAOS_CACHE", "cache")):  # fmt: skip
        (tmp_path / sub).mkdir()
        monkeypatch.setenv(var, str(tmp_path / sub))
    scenario = load_scenario(SCENARIO_DIR / "kip101-scenario1.yaml")
    (info, _prediction, verdict, _record), run = trial_realised(
        lambda where: trial(scenario, version, "docker", where, "no-trees", lambda _m: None),
        tmp_path / "run",
        lambda t: t.verdict,
    )
    assert info.verdict == "match", why(info, verdict, run)
    assert verdict is not None and verdict.model_match
    # the decoder read the image's own kafka-metadata jar, copied out into the (empty) cache
    assert list((tmp_path / "cache" / "image-files").glob("*/kafka-metadata-3.3.1.jar"))
