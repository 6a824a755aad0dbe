"""The ``hypd`` command line: ``hypd local up``, ``hypd local demo``, ``hypd clusters ...``."""
