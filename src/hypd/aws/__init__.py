"""Adapters: the only modules that call AWS. Each translates ClientError codes to named errors."""
