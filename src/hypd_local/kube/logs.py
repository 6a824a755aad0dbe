"""Container logs, as the kubelet keeps them, and the API server's ``pods/{name}/log`` answer.

The kubelet is not emulated: whoever runs a pod's containers (the local cloud's emulated
operators) writes its lines here with their (virtual) times, possibly ahead of now; a read
returns the lines whose time has come. ``GET /api/v1/namespaces/{ns}/pods/{name}/log`` takes
the query parameters of the real API: ``container``, ``tailLines``, ``sinceSeconds``,
``sinceTime``, ``timestamps``, ``previous``, ``limitBytes`` (``follow`` answers what is there
and ends: nothing streams). The checks are the API server's (``validateContainer`` in
kube-apiserver's pod registry): a pod with several containers needs ``container``, an unknown
one is ``container X is not valid for pod Y``; a pod not yet on a node has no logs (an empty
answer); ``previous`` needs a terminated earlier instance (the kubelet's "previous terminated
container ... not found").
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from hypd_local.kube.errors import bad_request

# The kubelet's RFC3339NanoFixed: what ``timestamps=true`` puts before each line.
_KUBELET_TIME = "%Y-%m-%dT%H:%M:%S.%f000Z"


@dataclass(frozen=True)
class LogLine:
    at: datetime
    text: str


Key = tuple[str, str, str]  # namespace, pod, container


class PodLogs:
    """Every container's lines (and its previous instance's), by namespace, pod, container."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._current: dict[Key, list[LogLine]] = {}
        self._previous: dict[Key, list[LogLine]] = {}

    def write(self, namespace: str, pod: str, container: str,
              lines: list[tuple[datetime, str]]) -> None:
        """Append lines (each with the time it is written at, which may be ahead of now)."""
        with self._lock:
            self._current.setdefault((namespace, pod, container), []).extend(
                LogLine(at, text) for at, text in lines)

    def restart(self, namespace: str, pod: str, container: str) -> None:
        """The container starts again in the same pod: its lines become the previous ones."""
        with self._lock:
            self._previous[(namespace, pod, container)] = self._current.pop(
                (namespace, pod, container), [])

    def forget(self, namespace: str, pod: str) -> None:
        """The pod is gone: so are its logs."""
        with self._lock:
            for store in (self._current, self._previous):
                for key in [k for k in store if k[:2] == (namespace, pod)]:
                    del store[key]

    def cut(self, namespace: str, pod: str, at: datetime) -> None:
        """Drop the lines written for after ``at`` (the container stopped then)."""
        with self._lock:
            for key, lines in self._current.items():
                if key[:2] == (namespace, pod):
                    lines[:] = [line for line in lines if line.at <= at]

    def lines(self, namespace: str, pod: str, container: str, *, previous: bool,
              now: datetime) -> list[LogLine] | None:
        """The lines written by now (None: no such instance)."""
        with self._lock:
            found = (self._previous if previous else self._current).get(
                (namespace, pod, container))
            return None if found is None else [line for line in found if line.at <= now]


def log_text(logs: PodLogs, pod: Mapping[str, Any], args: Mapping[str, str],
             now: datetime) -> str:
    """The body of ``GET .../pods/{name}/log?<args>`` for the stored ``pod``."""
    metadata = pod["metadata"]
    namespace, name = str(metadata.get("namespace") or ""), str(metadata["name"])
    container = _container(pod, args.get("container") or "")
    if not (pod.get("spec") or {}).get("nodeName"):
        return ""  # not on a node yet: the API server has no kubelet to ask
    previous = args.get("previous") in ("true", "1")
    found = logs.lines(namespace, name, container, previous=previous, now=now)
    if found is None:
        if previous:
            raise bad_request(f'previous terminated container "{container}" in pod "{name}" '
                              "not found")
        found = []
    since = _since(args, now)
    if since is not None:
        found = [line for line in found if line.at >= since]
    tail = _int(args, "tailLines")
    if tail is not None:
        found = found[-tail:] if tail > 0 else []
    stamped = args.get("timestamps") in ("true", "1")
    text = "".join(f"{line.at.astimezone(UTC).strftime(_KUBELET_TIME)} {line.text}\n"
                   if stamped else f"{line.text}\n" for line in found)
    limit = _int(args, "limitBytes")
    return text.encode()[:limit].decode(errors="ignore") if limit is not None else text


def _container(pod: Mapping[str, Any], wanted: str) -> str:
    """The container a log request is for (kube-apiserver's ``validateContainer``)."""
    name = pod["metadata"]["name"]
    names = [str(c.get("name")) for c in (pod.get("spec") or {}).get("containers") or []]
    if not wanted:
        if len(names) == 1:
            return names[0]
        if not names:
            raise bad_request(f"a container name must be specified for pod {name}")
        raise bad_request(f"a container name must be specified for pod {name}, choose one "
                          f"of: [{' '.join(names)}]")
    if wanted not in names:
        raise bad_request(f"container {wanted} is not valid for pod {name}")
    return wanted


def _int(args: Mapping[str, str], key: str) -> int | None:
    value = args.get(key)
    if value is None or value == "":
        return None
    try:
        number = int(value)
    except ValueError as exc:
        raise bad_request(f'{key}: Invalid value: "{value}": must be an integer') from exc
    if number < 0 or (key == "limitBytes" and number == 0):
        raise bad_request(f"{key}: Invalid value: {number}: must be greater than "
                          f"{'0' if key == 'limitBytes' else 'or equal to 0'}")
    return number


def _since(args: Mapping[str, str], now: datetime) -> datetime | None:
    seconds = _int(args, "sinceSeconds")
    moment = args.get("sinceTime")
    if seconds is not None and moment:
        raise bad_request("at most one of sinceTime or sinceSeconds may be specified")
    if seconds is not None:
        if seconds == 0:
            raise bad_request("sinceSeconds: Invalid value: 0: must be greater than 0")
        return now - timedelta(seconds=seconds)
    if moment:
        try:
            return datetime.fromisoformat(moment.replace("Z", "+00:00"))
        except ValueError as exc:
            raise bad_request(f'sinceTime: Invalid value: "{moment}": not RFC 3339') from exc
    return None
