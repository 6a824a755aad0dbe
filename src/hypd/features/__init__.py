"""Managed features as reconciled state (docs/features.md)."""
