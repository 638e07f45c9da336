"""What the harness knows of Kafka releases: versions, release trees, broker configs."""
