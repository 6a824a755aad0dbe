"""How the emulated workloads behave: what a test sets (`Workloads.behave`) over what the
emulator reads from the objects themselves.

A HyperPodPyTorchJob's run time and exit code come from its container's ``command`` and
``args`` joined by spaces: ``sleep N`` (seconds, decimals allowed) is the run time,
``exit N`` the exit code (0 without). A command without ``sleep`` runs for
`DEFAULT_RUN_SECONDS`. An inference object deploys in `DEFAULT_DEPLOY_SECONDS` once its pods
run. These durations are the emulator's own (AWS documents none).
"""

from __future__ import annotations

import re
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

DEFAULT_RUN_SECONDS = 60.0
"""How long a job's pods run when nothing says otherwise (no ``sleep N``, no behave)."""
DEFAULT_DEPLOY_SECONDS = 120.0
"""How long an inference object takes from its pods running to DeploymentComplete."""

_SLEEP = re.compile(r"\bsleep\s+(\d+(?:\.\d+)?)\b")
_EXIT = re.compile(r"\bexit\s+(\d+)\b")


@dataclass(frozen=True)
class ModelError:
    """What the model answers an invocation with instead of a result (InvokeEndpoint's
    ModelError: ``OriginalStatusCode`` and ``OriginalMessage``)."""

    status: int
    message: str


@dataclass(frozen=True)
class Behaviour:
    seconds: float | None = None
    """A job's run time; an inference object's deploy time."""
    exit_code: int | None = None
    logs: tuple[str, ...] | None = None
    """A pod's log lines instead of the emulator's."""
    response: bytes | None = None
    """The body InvokeEndpoint answers."""
    model_error: ModelError | None = None


@dataclass(frozen=True)
class Run:
    """What a job's pods do: run for ``seconds``, then exit with ``exit_code``."""

    seconds: float
    exit_code: int
    command: str
    logs: tuple[str, ...] | None


def command_line(container: Mapping[str, Any]) -> str:
    return " ".join(str(part) for part in [*(container.get("command") or []),
                                           *(container.get("args") or [])])


class Workloads:
    """The behave registry: ``cloud.emulation.workloads.behave(namespace, name, ...)``."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._set: dict[tuple[str | None, str, str], Behaviour] = {}

    def behave(self, namespace: str, name: str, *, seconds: float | None = None,
               exit_code: int | None = None, logs: Sequence[str] | None = None,
               response: bytes | str | None = None, model_error: ModelError | None = None,
               cluster: str | None = None) -> Behaviour:
        """Set how the workload ``namespace/name`` (of EKS cluster ``cluster``, or of any)
        behaves from now on: a job's run time and exit code and its pods' log lines; an
        inference object's deploy time and its endpoint's answer (``response``) or error
        (``model_error``). Fields left None keep what the object says. Returns what is set."""
        if seconds is not None and seconds < 0:
            raise ValueError("seconds: must not be negative")
        body = response.encode() if isinstance(response, str) else response
        behaviour = Behaviour(seconds, exit_code, tuple(logs) if logs is not None else None,
                              body, model_error)
        with self._lock:
            self._set[(cluster, namespace, name)] = behaviour
        return behaviour

    def of(self, cluster: str, namespace: str, name: str) -> Behaviour:
        with self._lock:
            return (self._set.get((cluster, namespace, name))
                    or self._set.get((None, namespace, name)) or Behaviour())

    def clear(self) -> None:
        with self._lock:
            self._set.clear()

    def run_of(self, cluster: str, job: Mapping[str, Any]) -> Run:
        """How the job's pods run (see the module doc)."""
        meta = job["metadata"]
        set_ = self.of(cluster, meta["namespace"], meta["name"])
        specs = (job.get("spec") or {}).get("replicaSpecs") or [{}]
        containers = (((specs[0].get("template") or {}).get("spec") or {})
                      .get("containers") or [{}])
        line = command_line(containers[0])
        sleep, code = _SLEEP.search(line), _EXIT.search(line)
        seconds = set_.seconds if set_.seconds is not None else (
            float(sleep.group(1)) if sleep else DEFAULT_RUN_SECONDS)
        exit_code = set_.exit_code if set_.exit_code is not None else (
            int(code.group(1)) if code else 0)
        return Run(seconds, exit_code, line, set_.logs)

    def deploy_seconds(self, cluster: str, namespace: str, name: str) -> float:
        seconds = self.of(cluster, namespace, name).seconds
        return DEFAULT_DEPLOY_SECONDS if seconds is None else seconds
