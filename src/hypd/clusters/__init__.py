"""Clusters: hypd's record of each EKS + HyperPod pair it manages or has imported."""
