"""The *runtime* axis: how one node runs (a local JVM process or a container)."""
