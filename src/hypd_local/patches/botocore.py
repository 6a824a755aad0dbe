"""botocore: the sleeps of its retries and waiters advance the virtual clock.

``endpoint.time`` and ``waiter.time``: the back-off of botocore's own retries and waiters (in
handlers and tests alike) advances the virtual clock instead of sleeping.
"""

from __future__ import annotations

from hypd_local.patches.engine import VirtualTime, replace


def patch_botocore() -> None:
    from botocore import endpoint, waiter

    # Only ``time.sleep`` is virtual; everything else of the module is the real one.
    replace(endpoint, "time", VirtualTime())
    replace(waiter, "time", VirtualTime())
