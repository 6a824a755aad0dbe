"""Import time of every function's handler module, in a fresh interpreter.

For each AWS::Serverless::Function in template.yaml this starts a new interpreter that imports the
handler module (`python -c "import app"` in the function's directory, with the function's
environment from the template and Lambda's own variables), N times, and prints the median, min and
max wall time next to the bare interpreter's (`python -c pass`) and a bare `import boto3`'s (the
same interpreter and byte-code cache). "minus baseline" is the cost of the imports themselves;
"x boto3" is the median over `import boto3`'s median (docs/performance.md states the API
function's goal so: at most 1.5x). The functions and their environment come from
hypd_local.template, which resolves the template's intrinsics as the local cloud does (without
starting it).

This measures imports on this machine, not Lambda's init phase: Lambda adds its runtime
bootstrap and a slower, throttled CPU at small memory sizes. By default it uses the dev venv's
interpreter and the source tree (hypd installed in editable mode). With --build-dir it imports the
`sam build` artefacts instead, the way Lambda does: a python3.12 in isolated mode with only the
function's directory and its layers' python/ directories on sys.path, and no byte-code cache for
them (Lambda cannot write __pycache__ under /var/task or /opt, so it compiles them at every cold
start).

    .venv/bin/python bench/cold_start.py            # or: ./dev bench
    .venv/bin/python bench/cold_start.py --runs 15 --top 15
    .venv/bin/python bench/cold_start.py --function ApiFunction --top 30 --sort self
    .venv/bin/python bench/cold_start.py --build-dir .aws-sam/build --python python3.12
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path

from hypd_local import TemplateError
from hypd_local.template import FunctionSpec, describe_functions

ROOT = Path(__file__).resolve().parents[1]
TEMPLATE = ROOT / "template.yaml"

IMPORTTIME_LINE = re.compile(r"^import time:\s+(\d+)\s+\|\s+(\d+)\s+\|(\s*)(\S+)\s*$")


@dataclass(frozen=True)
class Timing:
    label: str
    samples_ms: list[float]

    @property
    def median(self) -> float:
        return statistics.median(self.samples_ms)


# ------------------------------------------------------------------------------ the template


def load_functions() -> list[FunctionSpec]:
    """The template's functions as the local cloud resolves them (hypd_local.template)."""
    try:
        return describe_functions(TEMPLATE)  # us-east-1, account 123456789012
    except TemplateError as exc:
        sys.exit(f"cannot read {TEMPLATE}: {exc}")


# ---------------------------------------------------------------------------- measurement


def base_environment(pycache: Path, bytecode: str) -> dict[str, str]:
    """The caller's environment without PYTHON* settings, plus a private byte-code cache and
    this checkout's `src` first on the path (the venv's editable install may point at another
    checkout, a worktree's main one). Each function's import adds
    `FunctionSpec.standalone_environment()`: Lambda's variables, the template's, a region and
    fake credentials (so nothing reaches for real ones)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    env["PYTHONPYCACHEPREFIX"] = str(pycache)
    env["PYTHONPATH"] = str(ROOT / "src")  # ignored by --build-dir's isolated mode (-I)
    if bytecode == "none":
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


@dataclass(frozen=True)
class Mode:
    """How an interpreter is started: from the source tree, or on `sam build` artefacts."""

    python: str
    build_dir: Path | None = None

    def flags(self) -> list[str]:
        # -I: no PYTHON* variables, user site or cwd on sys.path (Lambda's bootstrap is
        # isolated too); -B: never write byte code into the artefacts.
        return ["-I", "-B"] if self.build_dir else []

    def function(self, fn: FunctionSpec) -> FunctionSpec:
        """The function as this mode imports it: from source, or from `sam build` output."""
        return replace(fn, code_dir=self.build_dir / fn.logical_id) if self.build_dir else fn

    def import_code(self, fn: FunctionSpec) -> str:
        if self.build_dir is None:
            return f"import {fn.handler_module}"  # cwd (the function's directory) is sys.path[0]
        paths = [str(self.build_dir / fn.logical_id)]
        paths += [str(self.build_dir / layer / "python") for layer in fn.layer_ids]
        return f"import sys; sys.path[:0] = {paths!r}; import {fn.handler_module}"

    def boto3_code(self, functions: list[FunctionSpec]) -> str:
        """`import boto3`: from the dev venv, or from the layer that ships it (artefacts)."""
        if self.build_dir is None:
            return "import boto3"
        for layer in dict.fromkeys(layer for fn in functions for layer in fn.layer_ids):
            python = self.build_dir / layer / "python"
            if (python / "boto3").is_dir():
                return f"import sys; sys.path[:0] = {[str(python)]!r}; import boto3"
        raise ImportFailed(f"no layer of these functions in {self.build_dir} ships boto3")

    def command(self, code: str, *extra_flags: str) -> list[str]:
        return [self.python, *self.flags(), *extra_flags, "-c", code]


class ImportFailed(Exception):
    pass


def run_once(command: list[str], cwd: Path, env: Mapping[str, str]) -> float:
    start = time.perf_counter()
    result = subprocess.run(
        command, cwd=cwd, env=dict(env), capture_output=True, text=True, check=False
    )
    elapsed = (time.perf_counter() - start) * 1000
    if result.returncode != 0:
        raise ImportFailed(result.stderr.strip()[-3000:])
    return elapsed


def importtime(mode: Mode, fn: FunctionSpec, env: Mapping[str, str]) -> list[tuple[int, int, str]]:
    """(self us, cumulative us, indented module) of every import, from `python -X importtime`."""
    fn = mode.function(fn)
    result = subprocess.run(
        mode.command(mode.import_code(fn), "-X", "importtime"),
        cwd=fn.code_dir,
        env={**env, **fn.standalone_environment()},
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode != 0:
        raise ImportFailed(result.stderr.strip()[-3000:])
    rows = []
    for line in result.stderr.splitlines():
        match = IMPORTTIME_LINE.match(line)
        if match:
            self_us, cumulative_us, indent, module = match.groups()
            rows.append((int(self_us), int(cumulative_us), " " * (len(indent) - 1) + module))
    return rows


@dataclass(frozen=True)
class Baselines:
    interpreter: Timing
    """`python -c pass`"""
    boto3: Timing
    """`python -c "import boto3"`"""


def measure(
    mode: Mode, selected: list[FunctionSpec], env: Mapping[str, str], runs: int
) -> tuple[Baselines, list[Timing], dict[str, str]]:
    baseline: list[float] = []
    boto3: list[float] = []
    boto3_code = mode.boto3_code(selected)
    samples: dict[str, list[float]] = {fn.logical_id: [] for fn in selected}
    failures: dict[str, str] = {}
    # One warm-up round fills the private byte-code cache (cached mode) and the OS page cache;
    # then rounds interleave the functions so that drift hits them all alike.
    for round_number in range(runs + 1):
        counted = round_number > 0
        ms = run_once(mode.command("pass"), ROOT, env)
        boto3_ms = run_once(mode.command(boto3_code), ROOT, env)
        if counted:
            baseline.append(ms)
            boto3.append(boto3_ms)
        for fn in map(mode.function, selected):
            if fn.logical_id in failures:
                continue
            try:
                ms = run_once(
                    mode.command(mode.import_code(fn)),
                    fn.code_dir,
                    {**env, **fn.standalone_environment()},
                )
            except ImportFailed as failure:
                failures[fn.logical_id] = str(failure)
                continue
            if counted:
                samples[fn.logical_id].append(ms)
    timings = [Timing(fn.logical_id, samples[fn.logical_id]) for fn in selected]
    baselines = Baselines(
        Timing("python -c pass (baseline)", baseline), Timing("import boto3", boto3)
    )
    return baselines, timings, failures


# -------------------------------------------------------------------------------- output


def print_table(
    baselines: Baselines, timings: list[Timing], failures: Mapping[str, str]
) -> None:
    baseline, boto3 = baselines.interpreter, baselines.boto3
    rows = [baseline, boto3, *timings]
    width = max(len(t.label) for t in rows)
    header = (
        f"{'function':<{width}}  {'median ms':>9}  {'min':>7}  {'max':>7}  "
        f"{'minus baseline':>14}  {'x boto3':>7}"
    )
    print(header)
    print("-" * len(header))
    for timing in rows:
        if timing.label in failures:
            print(f"{timing.label:<{width}}  import failed (below)")
            continue
        extra = "-" if timing is baseline else f"{timing.median - baseline.median:.1f}"
        ratio = f"{timing.median / boto3.median:.2f}x"
        print(
            f"{timing.label:<{width}}  {timing.median:>9.1f}  {min(timing.samples_ms):>7.1f}  "
            f"{max(timing.samples_ms):>7.1f}  {extra:>14}  {ratio:>7}"
        )


def print_top(mode: Mode, fn: FunctionSpec, env: Mapping[str, str], top: int, sort: str) -> None:
    rows = importtime(mode, fn, env)
    key = 0 if sort == "self" else 1
    heaviest = sorted(rows, key=lambda row: row[key], reverse=True)[:top]
    total = max((row[1] for row in rows), default=0)
    print(
        f"\n{fn.logical_id}: {len(rows)} modules imported, heaviest {len(heaviest)} by {sort} time"
    )
    print(f"  {'cumul ms':>8}  {'self ms':>7}  module (indent = nesting)")
    for self_us, cumulative_us, module in heaviest:
        print(f"  {cumulative_us / 1000:>8.1f}  {self_us / 1000:>7.1f}  {module}")
    print(f"  (largest cumulative: {total / 1000:.1f} ms; one run, -X importtime adds overhead)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("-n", "--runs", type=int, default=7, help="timed runs per function (7)")
    parser.add_argument(
        "--top", type=int, default=0, metavar="N", help="show the N heaviest imports per function"
    )
    parser.add_argument(
        "--sort",
        choices=["cumulative", "self"],
        default="cumulative",
        help="order of --top: cumulative (with children) or self time",
    )
    parser.add_argument(
        "--bytecode",
        choices=["cached", "none"],
        default="cached",
        help="cached: .pyc files exist (warm-up run writes them); none: every module is "
        "compiled from source on each run, as Lambda does for layer code it cannot cache",
    )
    parser.add_argument(
        "--function", action="append", metavar="LOGICAL_ID", help="only these (repeatable)"
    )
    parser.add_argument(
        "--python",
        default=sys.executable,
        help="interpreter to measure (default: this one; it must have the project installed, "
        "or be a python3.12 with --build-dir)",
    )
    parser.add_argument(
        "--build-dir",
        type=Path,
        metavar="DIR",
        help="import the `sam build` artefacts in DIR (e.g. .aws-sam/build) instead of the "
        "source tree; --bytecode does not apply (the artefacts carry no byte code)",
    )
    args = parser.parse_args(argv)
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    if args.build_dir is not None and not (args.build_dir / "template.yaml").is_file():
        parser.error(f"{args.build_dir} is not a `sam build` output directory")
    mode = Mode(args.python, args.build_dir.resolve() if args.build_dir else None)

    selected = load_functions()
    if args.function:
        unknown = set(args.function) - {fn.logical_id for fn in selected}
        if unknown:
            parser.error(f"no such function(s): {', '.join(sorted(unknown))}")
        selected = [fn for fn in selected if fn.logical_id in args.function]

    version = subprocess.run(
        [args.python, "-c", "import sys; print(sys.version.split()[0])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    if mode.build_dir and not version.startswith("3.12."):
        print(f"warning: the artefacts target python3.12; measuring with {version}\n")
    source = f"artefacts in {mode.build_dir}" if mode.build_dir else f"bytecode {args.bytecode}"
    with tempfile.TemporaryDirectory(prefix="hypd-bench-pycache-") as pycache:
        env = base_environment(Path(pycache), args.bytecode)
        print(
            f"Handler import time in a fresh interpreter: {args.runs} runs, "
            f"{source}, python {version} ({args.python})\n"
        )
        try:
            baselines, timings, failures = measure(mode, selected, env, args.runs)
        except ImportFailed as failure:
            sys.exit(f"the baseline failed: {failure}")
        print_table(baselines, timings, failures)
        for fn in selected:
            if args.top > 0 and fn.logical_id not in failures:
                print_top(mode, fn, env, args.top, args.sort)
    for logical_id, error in failures.items():
        print(f"\n{logical_id}: import failed:\n{error}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
