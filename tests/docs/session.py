"""A reader's shell: one bash process per document, in which its blocks run in order, so that
what one block sets (``export``, ``API=...``, a file it writes) is there for the next.

The session runs in a scratch directory that links the checkout's tracked top-level entries
(so ``./dev``, ``.venv/bin/hypd``, ``events/...`` resolve) and writes its own files there, with
a scratch ``HOME`` (no ``~/.aws``, no ``~/.config/hypd`` of the machine's user) and the
project's ``.venv/bin`` first on ``PATH``, as after ``source .venv/bin/activate``.

Only the ports change: the doc's ``8080`` (the REST API) and ``3099`` (the console) become free
ports of this machine, so the test does not depend on what else listens there. A command line
that starts the local cloud (``hypd local up ...``, in the foreground as a reader runs it in
another terminal, or with ``&``) starts it in the background instead, after stopping the one
an earlier block started, and returns once it has printed its banner (what it seeds is there).

In script blocks each command must exit 0: an ERR trap ends the block at the first that does
not, naming it. ``curl`` fails on an HTTP error there (``--fail-with-body``): a doc's
``curl -s`` that gets a 4xx must show it in a transcript instead.
"""

from __future__ import annotations

import contextlib
import os
import re
import selectors
import shlex
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

DRIVER = r"""
__doc_strict=0
curl() {
    if [ "$__doc_strict" = 1 ]; then command curl --fail-with-body "$@"; else command curl "$@"; fi
}
__doc_source() {
    trap '__doc_rc=$?; echo "doc-test: exit status $__doc_rc from: $BASH_COMMAND" >&2
          trap - ERR; return $__doc_rc' ERR
    source "$1"
    local rc=$?
    trap - ERR
    return $rc
}
__doc_run() {  # script output number strict
    __doc_strict=$4
    if [ "$4" = 1 ]; then __doc_source "$1"; else source "$1"; fi >"$2" 2>&1 </dev/null
    local rc=$?
    __doc_strict=0
    echo "__doc_done $3 $rc"
}
__doc_local_up() {  # the command line that starts the local cloud
    if [ -n "${__doc_local_pid:-}" ]; then
        kill -INT "$__doc_local_pid" 2>/dev/null
        wait "$__doc_local_pid" 2>/dev/null
    fi
    local log="$__DOC_DIR/local-up.log" started
    started=$(grep -c "Press Ctrl+C to stop" "$log" 2>/dev/null)
    "$@" >>"$log" 2>&1 </dev/null &
    __doc_local_pid=$!
    local tries=0
    # ready when it prints its banner (after what it seeds), as a reader waits for it
    until [ "$(grep -c "Press Ctrl+C to stop" "$log")" -gt "${started:-0}" ]; do
        if ! kill -0 "$__doc_local_pid" 2>/dev/null; then
            echo "doc-test: the local cloud exited; its output:" >&2
            tail -n 40 "$__DOC_DIR/local-up.log" >&2
            return 1
        fi
        tries=$((tries + 1))
        if [ "$tries" -gt 12000 ]; then  # 10 minutes: bounds a hang, measures nothing
            echo "doc-test: the local cloud did not answer" >&2; return 1
        fi
        sleep 0.05
    done
}
"""

# How long one block may run (a create with --wait takes seconds on the virtual clock; this
# bounds a hang, it measures nothing).
BLOCK_TIMEOUT = 900.0
_LOCAL_UP = re.compile(r"^(\S*hypd)\s+local\s+up\b")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@dataclass(frozen=True)
class Ran:
    status: int
    output: str


class ShellSession:
    def __init__(self, root: Path, scratch: Path) -> None:
        self.root = root
        self.dir = scratch
        self.work = scratch / "work"
        self.work.mkdir(parents=True)
        home = scratch / "home"
        home.mkdir()
        for entry in _tracked_top_level(root):
            (self.work / entry).symlink_to(root / entry)
        if (root / ".venv").exists():
            (self.work / ".venv").symlink_to(root / ".venv")
        self.api_port, self.console_port = free_port(), free_port()
        env = {
            "PATH": f"{root / '.venv' / 'bin'}:/usr/local/bin:/usr/bin:/bin",
            "HOME": str(home), "LANG": "C.UTF-8", "TERM": "dumb", "COLUMNS": "200",
            "AWS_EC2_METADATA_DISABLED": "true", "NO_COLOR": "1",
            "__DOC_DIR": str(scratch), "__DOC_API_PORT": str(self.api_port),
        }
        # helm of the dev set-up, where the wheel's fetch would put it (no download in tests).
        if "HELM_BINARY" in os.environ:
            env["HELM_BINARY"] = os.environ["HELM_BINARY"]
        (scratch / "driver.sh").write_text(DRIVER, encoding="utf-8")
        self._count = 0
        bash = shutil.which("bash") or "/bin/bash"
        self._bash = subprocess.Popen(  # noqa: S603 - bash, fed the doc's blocks on purpose
            [bash, "--noprofile", "--norc"], stdin=subprocess.PIPE, cwd=self.work, env=env,
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, start_new_session=True,
            text=True)
        self._send(f"source {shlex.quote(str(scratch / 'driver.sh'))}")

    def ports(self, text: str) -> str:
        """The doc's ports as this session's."""
        text = re.sub(r"\b8080\b", str(self.api_port), text)
        return re.sub(r"\b3099\b", str(self.console_port), text)

    def local_up(self, line: str) -> str:
        """A line that starts the local cloud, as a background start on this session's ports;
        other lines as they are."""
        command = line.split(" #", 1)[0].rstrip().removesuffix("&").rstrip()
        if not _LOCAL_UP.match(command):
            return line
        if "--port" not in command:
            command += f" --port {self.api_port}"
        if "--console-port" not in command and "--no-console" not in command:
            command += f" --console-port {self.console_port}"
        return f"__doc_local_up {command}"

    def run(self, script: str, *, strict: bool) -> Ran:
        self._count += 1
        source = self.dir / f"block-{self._count}.sh"
        output = self.dir / f"block-{self._count}.out"
        lines = [self.local_up(line) for line in self.ports(script).splitlines()]
        source.write_text("\n".join(lines) + "\n", encoding="utf-8")
        self._send(f"__doc_run {source} {output} {self._count} {1 if strict else 0}")
        done = self._done(self._count)
        return Ran(done, output.read_text(errors="replace"))

    def _done(self, number: int) -> int:
        """The exit status the shell reports for block `number`, read as it is written."""
        assert self._bash.stdout is not None
        with selectors.DefaultSelector() as waiting:
            waiting.register(self._bash.stdout, selectors.EVENT_READ)
            deadline = time.monotonic() + BLOCK_TIMEOUT
            while True:
                if not waiting.select(timeout=max(0.0, deadline - time.monotonic())):
                    raise TimeoutError(f"a block ran longer than {BLOCK_TIMEOUT:.0f} s")
                line = self._bash.stdout.readline()
                if not line:
                    raise RuntimeError(f"the doc's shell exited ({self._bash.wait()})")
                word, _, rest = line.strip().partition(" ")
                seen, _, status = rest.partition(" ")
                if word == "__doc_done" and seen == str(number):
                    return int(status)

    def _send(self, line: str) -> None:
        assert self._bash.stdin is not None
        self._bash.stdin.write(line + "\n")
        self._bash.stdin.flush()

    def close(self) -> None:
        """Stops the shell and everything it started (the local cloud with it)."""
        self._send("[ -n \"${__doc_local_pid:-}\" ] && kill -INT $__doc_local_pid "
                   "&& wait $__doc_local_pid; exit 0")
        with contextlib.suppress(subprocess.TimeoutExpired):
            self._bash.wait(timeout=60)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self._bash.pid, signal.SIGKILL)

    def local_cloud_log(self) -> str:
        log = self.dir / "local-up.log"
        return log.read_text(errors="replace")[-4000:] if log.exists() else ""


def _tracked_top_level(root: Path) -> list[str]:
    git = shutil.which("git") or "git"
    listed = subprocess.run([git, "ls-files"], cwd=root, capture_output=True,  # noqa: S603
                            text=True, check=True).stdout.splitlines()
    return sorted({path.split("/", 1)[0] for path in listed})
