"""Capacity: instance groups, node actions and managed Karpenter autoscaling of clusters hypd
created (docs/capacity.md)."""
