"""Cluster teardown: the plan and the operation that carries it out (docs/teardown.md)."""
