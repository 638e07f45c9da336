"""Kafka's wire encoding, used by the cluster (heartbeats) and the clients."""
