"""The EKS and HyperPod emulator: protocol, validation, middleware and fault injection.

See docs/emulator.md. The emulators themselves live in ``hyperpod.py`` and ``eks.py``.
"""

from hypd_local.emulator.errors import AwsError, error_for, validation_error_code
from hypd_local.emulator.faults import Fault, Faults, admin_routes
from hypd_local.emulator.middleware import EmulatorMiddleware
from hypd_local.emulator.protocol import HttpRequest, HttpResponse, protocol_for
from hypd_local.emulator.validation import validate, violations

__all__ = [
    "AwsError",
    "EmulatorMiddleware",
    "Fault",
    "Faults",
    "HttpRequest",
    "HttpResponse",
    "admin_routes",
    "error_for",
    "protocol_for",
    "validate",
    "validation_error_code",
    "violations",
]
