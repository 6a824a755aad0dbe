"""IAM as a real account enforces it, on the local cloud (docs/iam.md)."""
