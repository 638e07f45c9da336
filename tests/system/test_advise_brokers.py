"""``hwchaos advise --confirm`` plays its shortest losing ordering on real brokers.

acks=1, replication factor 2: the explorer's shortest loss is ``produce m1 ; crash A ;
detect A`` (the leader acknowledges alone and dies before the follower fetches). Played on
3.3.1 (ZooKeeper) and 4.0.0 (KRaft), the brokers must lose m1 exactly as the profile predicts
(``confirmed``). Skipped with a one-line reason without the release tree.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.cli.advise import main
from harness.db import BrokerUnavailable
from harness.db.catalogue.versions import resolve_version
from harness.db.runtime.local import find_tree
from harness.db.runtime.process import jvms_under

pytestmark = [pytest.mark.broker, pytest.mark.slow]


@pytest.mark.parametrize("version", ["3.3.1", "4.0.0"])
def test_advise_confirm_reproduces_the_shortest_loss(
    version: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    try:
        find_tree(resolve_version(version))
    except BrokerUnavailable as exc:
        pytest.skip(str(exc))
    args = ["--acks", "1", "--rf", "2", "--kafka", version, "--crashes", "1"]
    assert main([*args, "--confirm", "--runs", str(tmp_path), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["explorer"][0]["ordering"] == ["produce m1", "crash A", "detect A"]
    c = out["confirm"]
    assert c["classification"] == "confirmed", c
    assert c["observed"]["lost_acked"] == ["m1"] and c["version"] == version
    assert (Path(c["run_folder"]) / "verdict.json").is_file()
    assert jvms_under(tmp_path) == []
