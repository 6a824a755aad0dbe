"""What identity enforcement costs the local cloud: authorisations per principal, real time.

Runs one create (the README's demo request) on a fresh local cloud and times every
authorisation the enforcer makes (resolving the request's resources and condition keys from
the Service Authorization Reference data, then evaluating the principal's policies), and prints
per principal (the role each function or state machine runs as):

* calls:   requests authorised (every AWS call of an issued principal);
* denied:  requests refused (a demo create should have none);
* checks:  (action, resource) pairs evaluated, e.g. a TransactWriteItems over two items, a
           PassRole next to the call that passes the role;
* ms/call: mean real milliseconds of one authorisation, p95 and the slowest beside it (the
           first authorisation of a process loads the reference data, about half a second);
* total:   real seconds spent authorising, and its share of the create's wall time.

Then a micro-benchmark: the same recorded requests authorised again in a loop, without the
rest of the local cloud, for the per-call cost on its own.

    .venv/bin/python bench/authorization.py
    .venv/bin/python bench/authorization.py --repeat 20    # 20 passes over the recording

All figures are real time on this machine: they say how much slower enforcement makes the
local cloud, not anything about AWS.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import threading
import time
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager, redirect_stdout
from dataclasses import dataclass, field
from io import StringIO
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from hypd_cli.api_client import ApiClient  # noqa: E402
from hypd_cli.demo import DEMO_BUCKET, create_demo_bucket, demo_request, follow  # noqa: E402
from hypd_cli.local import local_parameters  # noqa: E402
from hypd_local.cloud import LocalCloud  # noqa: E402
from hypd_local.iam.enforce import Enforcer  # noqa: E402
from hypd_local.iam.principals import Principal  # noqa: E402


@dataclass
class Recorded:
    principal: Principal
    service: str
    prefix: str
    operation: str
    params: dict[str, Any]


@dataclass
class Figures:
    seconds: list[float] = field(default_factory=list)
    denied: int = 0
    checks: int = 0


def _role_name(principal: Principal) -> str:
    return principal.arn.rsplit("/", 1)[-1]


@contextmanager
def timing(enforcer: Enforcer, figures: dict[str, Figures],
           recording: list[Recorded]) -> Iterator[None]:
    """Time every Enforcer.authorize of this local cloud, and record its arguments."""
    original = enforcer.authorize
    lock = threading.Lock()
    observed: dict[int, tuple[int, bool]] = {}

    def observe(authorization: Any) -> None:
        observed[threading.get_ident()] = (len(authorization.checks),
                                           authorization.denial is not None)

    def timed(principal: Principal, service: str, prefix: str, operation: str,
              params: dict[str, Any]) -> Any:
        started = time.perf_counter()
        try:
            return original(principal, service, prefix, operation, params)
        finally:
            spent = time.perf_counter() - started
            checks, denied = observed.pop(threading.get_ident(), (0, False))
            with lock:
                entry = figures[_role_name(principal)]
                entry.seconds.append(spent)
                entry.checks += checks
                entry.denied += int(denied)
                recording.append(Recorded(principal, service, prefix, operation, dict(params)))

    enforcer.authorize = timed  # type: ignore[method-assign]
    try:
        with enforcer.watch(observe):
            yield
    finally:
        enforcer.authorize = original  # type: ignore[method-assign]


def _p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--repeat", type=int, default=5,
                        help="passes over the recorded requests in the micro-benchmark")
    args = parser.parse_args(argv)

    template = ROOT / "template.yaml"
    figures: dict[str, Figures] = defaultdict(Figures)
    recording: list[Recorded] = []
    started = time.perf_counter()
    with redirect_stdout(StringIO()), LocalCloud(
        template, parameters=local_parameters(template)
    ) as cloud:
        assert cloud.emulation is not None
        enforcer = cloud.emulation.enforcer
        create_demo_bucket(cloud)
        api = ApiClient(cloud.api_url)
        with timing(enforcer, figures, recording):
            created_at = time.perf_counter()
            operation_id = api.post("/clusters", demo_request(api, "bench", DEMO_BUCKET))[
                "operationId"]
            operation = follow(api, cloud, operation_id, timeout=300)
            create_wall = time.perf_counter() - created_at
        if operation["status"] != "SUCCEEDED":
            print(f"create did not succeed: {operation.get('error')}", file=sys.stderr)
            return 1

        # The micro-benchmark: the recorded requests again, the local cloud idle.
        loop: list[float] = []
        for _ in range(args.repeat):
            for request in recording:
                begun = time.perf_counter()
                enforcer.authorize(request.principal, request.service, request.prefix,
                                   request.operation, request.params)
                loop.append(time.perf_counter() - begun)

    header = f"{'principal':34} {'calls':>6} {'denied':>6} {'checks':>6} " \
             f"{'ms/call':>8} {'p95':>7} {'max':>7} {'total s':>8}"
    print(header)
    every: list[float] = []
    for name in sorted(figures, key=lambda n: -sum(figures[n].seconds)):
        entry = figures[name]
        every.extend(entry.seconds)
        print(f"{name[:34]:34} {len(entry.seconds):6d} {entry.denied:6d} {entry.checks:6d} "
              f"{1000 * statistics.mean(entry.seconds):8.2f} {1000 * _p95(entry.seconds):7.2f} "
              f"{1000 * max(entry.seconds):7.1f} {sum(entry.seconds):8.2f}")
    total = sum(every)
    print(f"{'all':34} {len(every):6d} {sum(f.denied for f in figures.values()):6d} "
          f"{sum(f.checks for f in figures.values()):6d} {1000 * statistics.mean(every):8.2f} "
          f"{1000 * _p95(every):7.2f} {1000 * max(every):7.1f} {total:8.2f}")
    print(f"\ncreate wall time {create_wall:.1f} s, of which authorising {total:.2f} s "
          f"({100 * total / create_wall:.1f} %)")
    print(f"micro-benchmark: {len(loop)} authorisations ({args.repeat} passes), "
          f"median {1000 * statistics.median(loop):.2f} ms, p95 {1000 * _p95(loop):.2f} ms")
    print(f"(run took {time.perf_counter() - started:.1f} s real time)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
