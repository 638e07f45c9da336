"""Names every layer shares: the test topic, its partition, the controller node.

A leaf module (it imports nothing of the project), so the metadata views, the client and the
playbook can name the partition without importing the cluster package that uses them.
"""

CONTROLLER = "controller"
TOPIC = "hwchaos"
PARTITION = 0
