"""Discovery: the EKS and HyperPod clusters already in the account and Region, linked and
recorded as hypd clusters (the discover operation)."""
