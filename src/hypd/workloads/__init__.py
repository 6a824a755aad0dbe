"""Training jobs and inference endpoints through the cluster's Kubernetes API
(docs/workloads.md)."""
