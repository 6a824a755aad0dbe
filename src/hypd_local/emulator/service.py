"""What the EKS and HyperPod emulators share (docs/emulator.md, "Contracts").

Each emulator is a plain class for one account and Region: one method per operation, named in
snake case, taking the validated input dict and returning the output dict, on a virtual clock
(it never sleeps nor reads the wall clock). What they have in common lives here:

- `ServiceEmulator`: the clock, account, Region and partition, the state lock, ARNs;
- `operation`: runs a public method under the lock, with the emulator's own steps around it
  (HyperPod applies the changes that came due before and after; EKS delivers the events the
  method queued once the lock is released), and tells the emulator when a method that may
  change its state ran (`ServiceEmulator._changed`: every one but the reads);
- `Injections`: faults aimed at the next request for a name (or for any), consumed in order;
- `OffsetPages`: offset pagination with opaque tokens, in each service's token format, error
  and member names.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any, Concatenate, Generic, ParamSpec, Protocol, TypeVar

from hypd_local.partitions import partition_of

_P = ParamSpec("_P")
_R = TypeVar("_R")
_T = TypeVar("_T")
_S = TypeVar("_S", bound="ServiceEmulator")

DEFAULT_PAGE_SIZE = 100

READS = ("describe_", "list_", "get_", "search_")
"""The operations (by method-name prefix) that only read: they change no state."""


class Clock(Protocol):
    def now(self) -> datetime: ...


class ServiceEmulator:
    """One emulated service of one account and Region on a virtual clock."""

    service = ""
    """The service's name in its ARNs (``eks``, ``sagemaker``)."""

    def __init__(self, clock: Clock, account_id: str, region: str) -> None:
        self._clock = clock
        self.account_id = account_id
        self.region = region
        self.partition = partition_of(region)
        self._lock = threading.RLock()
        self.revision = 0
        """How many changes were made: operations other than reads (`operation`), fault
        hooks, transitions come due. Equal revisions at the same virtual time: equal state."""

    def _arn(self, resource: str) -> str:
        """The ARN of one of this service's resources (``cluster/NAME``...)."""
        return f"arn:{self.partition}:{self.service}:{self.region}:{self.account_id}:{resource}"

    # What `operation` runs around a method: under the lock before it and after it (when it
    # returned), then once the lock is released (whatever happened).
    def _before_operation(self) -> None:
        return None

    def _after_operation(self) -> None:
        return None

    def _after_release(self) -> None:
        return None

    def _changed(self) -> None:
        """A method that may have changed the state ran (called under the lock, whether it
        returned or raised: a failed change may have been partly made)."""
        self.revision += 1


def operation(
    method: Callable[Concatenate[_S, _P], _R],
) -> Callable[Concatenate[_S, _P], _R]:
    """Run a public method under the emulator's lock, between the emulator's own steps (see
    `ServiceEmulator._before_operation`)."""
    reads = method.__name__.startswith(READS)

    @functools.wraps(method)
    def wrapper(self: _S, /, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        try:
            with self._lock:
                self._before_operation()
                try:
                    result = method(self, *args, **kwargs)
                finally:
                    if not reads:
                        self._changed()
                self._after_operation()
                return result
        finally:
            self._after_release()

    return wrapper


class Injections(Generic[_T]):
    """Faults aimed at the next request for a name (None: for any name), consumed in order."""

    def __init__(self) -> None:
        self._pending: list[tuple[str | None, _T]] = []

    def add(self, name: str | None, value: _T) -> None:
        self._pending.append((name, value))

    def take(self, name: str, default: _T) -> _T:
        """The value of the first injection aimed at ``name`` (or at any), consumed; else
        ``default``."""
        for index, (wanted, value) in enumerate(self._pending):
            if wanted is None or wanted == name:
                del self._pending[index]
                return value
        return default


class OffsetPages:
    """Offset pagination with an opaque token, as one service words it.

    ``encode``/``decode`` turn an offset into the service's token and back (``decode`` may
    raise ValueError, KeyError or TypeError on a token it did not make), ``invalid`` is the
    error a foreign or stale token gets; ``size_member`` and ``next_member`` name the page size
    and the token in the service's requests and answers (``maxResults``, ``nextToken``).
    """

    def __init__(
        self,
        encode: Callable[[int], str],
        decode: Callable[[str], int],
        invalid: Callable[[], Exception],
        size_member: str,
        next_member: str,
    ) -> None:
        self._encode = encode
        self._decode = decode
        self._invalid = invalid
        self.size_member = size_member
        self.next_member = next_member

    def page(
        self, items: Sequence[_T], size: int | None, token: str | None
    ) -> tuple[list[_T], str | None]:
        """The page of ``items`` that ``token`` starts (the first without one) and the token
        of the next page, None after the last."""
        start = 0
        if token:
            try:
                start = self._decode(token)
            except (ValueError, KeyError, TypeError) as exc:
                raise self._invalid() from exc
            if start < 0 or start > len(items):
                raise self._invalid()
        end = start + int(size or DEFAULT_PAGE_SIZE)
        return list(items[start:end]), (self._encode(end) if end < len(items) else None)

    def listing(
        self, member: str, items: Sequence[Any], request: Mapping[str, Any],
        head: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        """The answer of a listing ``request``: ``head``, the page of ``items`` under
        ``member``, the next page's token if more follow."""
        page, next_token = self.page(
            items, request.get(self.size_member), request.get(self.next_member))
        out: dict[str, Any] = {**(head or {}), member: page}
        if next_token:
            out[self.next_member] = next_token
        return out
