"""The local cloud: hypd's template, state machines and handlers running on moto, in-process.

Start with `hypd_local.cloud.LocalCloud`; docs/local-cloud.md explains how it works.
"""

from hypd_local.activity import IdleTimeout
from hypd_local.clock import VirtualClock
from hypd_local.cloud import FunctionError, LocalCloud
from hypd_local.intrinsics import TemplateError

__all__ = ["FunctionError", "IdleTimeout", "LocalCloud", "TemplateError", "VirtualClock"]
