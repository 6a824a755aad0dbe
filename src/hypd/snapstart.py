"""Lambda SnapStart's runtime hooks (docs/deploy.md, "SnapStart").

With SnapStart, Lambda runs a function's init once, when a version is published, snapshots the
execution environment's memory, and resumes every new environment of that version from the
snapshot. Whatever init made is shared by every restored environment, and may be minutes or
days old when it is used. So the API function's init makes no AWS client and reads no
credentials (`hypd.aws.clients` makes clients on first use), and two hooks run around the
snapshot:

- before it, the function's `prime`: the API loads what its first requests would (every route
  module, its services' modules, the X-Ray SDK), so that a restored environment imports
  nothing; it must not make a client, sign anything or draw a random number;
- after each restore, `restored`: boto3's clients and default session are dropped (a client
  made in the snapshot would sign with the credentials it found then), and `random` is seeded
  again from the OS (each restored environment would otherwise draw the same numbers: the
  optimistic writers' back-off jitter, `hypd.aws.dynamodb.optimistic`). `uuid.uuid4`, which
  names operations, reads the OS's entropy at every call and needs nothing.

The hooks are registered with `snapshot_restore_py`, which Lambda's Python runtimes include (it
must not be shipped in a layer: a second copy would hold hooks the runtime never runs). Where it
is absent (the local cloud, the tests, a function without SnapStart's runtime) `register`
registers nothing and says so.
"""

from __future__ import annotations

import random
from collections.abc import Callable


def restored() -> None:
    """What an environment restored from a snapshot does first (the after-restore hook)."""
    from hypd.aws.clients import forget_clients  # loaded before the snapshot by the priming

    forget_clients()
    random.seed()  # from os.urandom


def register(prime: Callable[[], None]) -> bool:
    """Run `prime` before the snapshot and `restored` after each restore; False when this
    runtime has no `snapshot_restore_py` (nothing registered)."""
    try:
        from snapshot_restore_py import register_after_restore, register_before_snapshot
    except ImportError:
        return False
    register_before_snapshot(prime)
    register_after_restore(restored)
    return True
