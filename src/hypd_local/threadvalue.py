"""Per-thread values the local cloud sets for the length of a block (the credentials a thread
signs with, the principal it acts as, the timeline it waits on)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


@contextmanager
def set_for_block(local: threading.local, name: str, value: Any) -> Iterator[None]:
    """``local.name`` is ``value`` on the calling thread until the block ends, then what it
    was before (blocks nest)."""
    outer = getattr(local, name, None)
    setattr(local, name, value)
    try:
        yield
    finally:
        setattr(local, name, outer)
