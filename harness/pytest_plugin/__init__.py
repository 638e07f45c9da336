"""pytest plugin ``hwchaos``: scenario files as tests, and fixtures for your own chaos tests.

Scenario files as tests::

    pytest -p hwchaos --hwchaos-kafka 0.10.2.1,2.1.1,3.3.1 [--hwchaos-backend local|docker] \\
        [--hwchaos-protocol hw,kip320] [--hwchaos-out runs] scenarios/

collects every scenario file x Kafka version (and x model generation with
``--hwchaos-protocol``) as one test item. A broker item plays the scenario on a cluster
(:func:`harness.trial.run_on_brokers`): by default a running one of the session with the
same version and configuration, checked clean (harness.generator.warm), else a fresh one
(``--hwchaos-fresh``: always fresh); it fails when the brokers
disagree with the model, with the per-replica diff (predicted vs observed logs, the first
differing step) in the message. A scenario's optional ``expect:`` block (``lost_acked``,
``divergent_offsets``, ``replicas``) is checked against what the brokers did (broker
items) or what the model predicts (model items). The run folder is attached to the report
as the ``hwchaos_run_folder`` user property, so ``--junitxml`` carries it.

Without any ``--hwchaos-*`` option nothing is collected: the plugin is registered through
the ``pytest11`` entry point and so is loaded in every pytest session of the environment.

Fixtures for application tests (see docs/ci.md): ``hwchaos_cluster`` (a running cluster;
version and size from ``@pytest.mark.hwchaos(version=..., brokers=N)``, else the first
``--hwchaos-kafka`` version, else 3.3.1 with 3 brokers), ``hwchaos_nemesis`` (crash, power
loss, pause, resume, clean stop, restart, partition where the backend can) and
``hwchaos_readback`` (every replica's log as written on disk). Whatever this machine lacks
(a release tree, java, a Docker daemon) skips the test with a one-line reason.

Under pytest-xdist (``pytest -n N``) each worker takes a port range of its own
(:mod:`harness.pytest_plugin.workers`), so clusters in two workers never share a port.
"""

from harness.checker.expect import expect_problems, read_replicas, replica_table
from harness.pytest_plugin.collect import (
    BadScenarioItem,
    HwchaosFailure,
    ScenarioFile,
    ScenarioItem,
    pytest_collect_file,
    pytest_collection_modifyitems,
    pytest_runtest_protocol,
)
from harness.pytest_plugin.fixtures import (
    HwchaosCluster,
    HwchaosNemesis,
    Readback,
    hwchaos_cluster,
    hwchaos_nemesis,
    hwchaos_readback,
)
from harness.pytest_plugin.options import (
    RUN_FOLDER,
    Settings,
    pytest_addoption,
    pytest_configure,
    pytest_unconfigure,
    unavailable,
)

__all__ = [
    "RUN_FOLDER",
    "BadScenarioItem",
    "HwchaosCluster",
    "HwchaosFailure",
    "HwchaosNemesis",
    "Readback",
    "ScenarioFile",
    "ScenarioItem",
    "Settings",
    "expect_problems",
    "hwchaos_cluster",
    "hwchaos_nemesis",
    "hwchaos_readback",
    "pytest_addoption",
    "pytest_collect_file",
    "pytest_collection_modifyitems",
    "pytest_configure",
    "pytest_runtest_protocol",
    "pytest_unconfigure",
    "read_replicas",
    "replica_table",
    "unavailable",
]
