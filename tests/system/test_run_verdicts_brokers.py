"""``hwchaos run``'s last line on real brokers says both verdicts and names the loss.

KIP-101 scenario 1 on 0.10.2.1 loses the acknowledged m2 exactly as the model predicts: the
exit status is 0 (the brokers agree with the model) unless ``--fail-on-loss`` asks for
safety, and the last line says "match" and "LOST: m2" side by side.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.cli import main
from harness.db import BrokerUnavailable
from harness.db.catalogue.versions import resolve_version
from harness.db.runtime.local import find_tree
from harness.db.runtime.process import jvms_under

pytestmark = [pytest.mark.broker, pytest.mark.slow]


def test_run_last_line_names_the_loss_and_fail_on_loss_exits_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    try:
        find_tree(resolve_version("0.10.2.1"))
    except BrokerUnavailable as exc:
        pytest.skip(str(exc))
    args = ["run", "kip101-scenario1", "--kafka", "0.10.2.1", "--out", str(tmp_path)]
    assert main([*args, "--fail-on-loss"]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("settings: acks=1 min.insync.replicas=1 ")
    assert out[-1].startswith(
        "agreement: match (the brokers did what the model predicted) | "
        "safety: acknowledged writes LOST: m2; consumer anomalies: read-then-lost m2@1 (step 5)"
    ), out[-1]  # a consumer of B read m2 before it was lost (the consumer oracle)
    assert jvms_under(tmp_path) == []
