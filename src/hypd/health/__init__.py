"""Health: HyperPod's and EKS's events turned into node health, notifications and opt-in repair
(docs/health.md)."""
