"""Cluster backends: local JVM processes and Docker containers."""
