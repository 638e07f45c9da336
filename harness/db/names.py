"""Names every layer shares: the test topic, its partition, the controller node.

A leaf module (it imports nothing of the project), so the metadata views, the client and the
playbook can name the partition without importing the cluster package that uses them.
"""

CONTROLLER = "controller"
TOPIC = "hwchaos"
PARTITION = 0

BELL_SUFFIX = "-bell"
"""The doorbell topic of a run is its test topic with this suffix (``hwchaos-bell``,
``hwchaos-3-bell``): one name per run, so a reused cluster's reset deletes it with the test
topic, and no ``<topic>-<partition>`` pattern of the test topic's family names it. No dot:
0.10.2.1 parses a deleted partition's dir name up to its first '.' and fails to start
(``StringIndexOutOfBoundsException`` in ``LogManager``, seen with ``hwchaos.bell``)."""


def bell_topic(topic: str) -> str:
    """The doorbell topic of the run whose test topic is ``topic`` (playbook/bell.py)."""
    return f"{topic}{BELL_SUFFIX}"
