"""Rendering API responses for people: tables, key/value blocks, durations, operations.

``--output json|yaml`` bypasses all of this: `print_json` prints the API's response as it came
(after ``--query``). A list command's table is a sequence of `Column`: each cell made from one
item of the response, the ``wide`` ones shown only with ``-o wide`` (`print_columns`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from hypd_cli.cli import Context, UsageError
from hypd_cli.tables import render_table

TERMINAL = frozenset({"SUCCEEDED", "FAILED", "CANCELLED"})
DASH = "-"


def print_json(ctx: Context, data: Any) -> None:
    """The response as data: ``--query`` applied, then json or yaml (``-o``)."""
    print(render_data(ctx, data), file=ctx.out, flush=True)


def render_data(ctx: Context, data: Any, *, compact: bool = False) -> str:
    """`data` after ``--query`` (JMESPath, as the aws CLI applies it), as json (one line when
    `compact`) or yaml (one document)."""
    query = getattr(ctx.args, "query", None)
    if query:
        import jmespath  # type: ignore[import-untyped]
        from jmespath.exceptions import JMESPathError  # type: ignore[import-untyped]

        try:
            data = jmespath.search(query, data)
        except JMESPathError as exc:
            raise UsageError(f"--query: not a JMESPath expression: {exc}") from None
    if ctx.output == "text":
        return text_lines(data)
    if ctx.output == "yaml":
        import yaml  # type: ignore[import-untyped]

        document: str = yaml.safe_dump(data, sort_keys=False, allow_unicode=True)
        return "---\n" + document.rstrip()
    return json.dumps(data, separators=(",", ":")) if compact else json.dumps(data, indent=2)


def text_lines(data: Any) -> str:
    """``-o text``, as the aws CLI's: a scalar as it is (``None`` as ``None``), a list of
    scalars on one line, tab-separated, an object's values tab-separated, a list of objects
    or lists one line each."""
    def cell(value: Any) -> str:
        if isinstance(value, (dict, list)):
            return json.dumps(value, separators=(",", ":"))
        return str(value)

    def line(value: Any) -> str:
        if isinstance(value, dict):
            return "\t".join(cell(v) for v in value.values())
        if isinstance(value, list):
            return "\t".join(cell(v) for v in value)
        return cell(value)

    if isinstance(data, list) and any(isinstance(item, (dict, list)) for item in data):
        return "\n".join(line(item) for item in data)
    return line(data)


def print_table(ctx: Context, headers: Sequence[str], rows: Sequence[Sequence[object]],
                *, empty: str | None = None) -> None:
    """The rows as a table; with none, the sentence `empty` (``No clusters.``) instead of a
    table of headers alone, as kubectl says "No resources found"."""
    if not rows and empty is not None:
        ctx.say(empty)
        return
    print(render_table(headers, rows), file=ctx.out, flush=True)


Item = dict[str, Any]
"""One object of a list response: a cluster, a node, an operation..."""


@dataclass(frozen=True)
class Column:
    """A column of a list's table: its header, its cell of one item, and whether only
    ``-o wide`` shows it (what the default table leaves out for width)."""

    header: str
    cell: Callable[[Item], object]
    wide: bool = False


def print_columns(ctx: Context, columns: Sequence[Column], items: Iterable[Item],
                  *, empty: str | None = None) -> None:
    """The items as a table of `columns`: the wide-only ones too with ``-o wide``."""
    shown = [column for column in columns if ctx.wide or not column.wide]
    print_table(ctx, [column.header for column in shown],
                [[column.cell(item) for column in shown] for item in items], empty=empty)


def cell_at(*path: str) -> Callable[[Item], object]:
    """The cell of the value at `path` (``cell_at("eks", "vpcId")``): ``-`` where it is absent
    or empty, a list joined with commas, a boolean ``yes`` or ``no``."""

    def cell(item: Item) -> object:
        value: Any = item
        for key in path:
            value = value.get(key) if isinstance(value, Mapping) else None
        if isinstance(value, bool):
            return "yes" if value else "no"
        if isinstance(value, list):
            value = ", ".join(str(v) for v in value)
        return DASH if value in (None, "") else value

    return cell


def time_at(key: str) -> Callable[[Item], object]:
    """The cell of the timestamp at `key`, as `short_time` writes it."""
    return lambda item: short_time(item.get(key))


def key_values(rows: Sequence[tuple[str, object]]) -> str:
    """``Key:  value`` lines, values aligned."""
    width = max((len(key) for key, _ in rows), default=0) + 1
    return "\n".join(
        f"{key + ':':<{width}}  {DASH if value in (None, '') else value}".rstrip()
        for key, value in rows
    )


def gib(mib: int | None) -> str:
    """MiB as ``80 GiB`` or ``22.4 GiB``; ``-`` for none."""
    if not mib:
        return DASH
    return f"{mib // 1024} GiB" if mib % 1024 == 0 else f"{mib / 1024:.1f} GiB"


def parse_time(value: str | None) -> datetime | None:
    if not value:
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def format_duration(seconds: float | None) -> str:
    if seconds is None:
        return ""
    seconds = max(0.0, seconds)
    if seconds < 10:
        return f"{seconds:.1f}s"
    total = round(seconds)
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes:02d}m"
    if minutes:
        return f"{minutes}m{secs:02d}s"
    return f"{secs}s"


def short_time(value: str | None) -> str:
    """An API timestamp as ``YYYY-MM-DD HH:MM:SS`` (UTC)."""
    parsed = parse_time(value)
    return parsed.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S") if parsed else DASH


# -- operations -------------------------------------------------------------------------------


def operation_now(operation: dict[str, Any], now: datetime | None = None) -> datetime:
    """"Now" for a running operation's elapsed times: the client's clock, or the latest time
    the operation has recorded when that is later (a server clock ahead of ours, e.g. the local
    cloud's virtual clock)."""
    current = now or datetime.now(UTC)
    updated = parse_time(operation.get("updatedAt"))
    return max(current, updated) if updated else current


def operation_elapsed(operation: dict[str, Any], now: datetime | None = None) -> float | None:
    created = parse_time(operation.get("createdAt"))
    if created is None:
        return None
    end = (
        parse_time(operation.get("updatedAt"))
        if operation.get("status") in TERMINAL
        else operation_now(operation, now)
    )
    return (end - created).total_seconds() if end else None


def stage_elapsed(
    stage: dict[str, Any], operation: dict[str, Any], now: datetime | None = None
) -> float | None:
    """Time of the stage's latest attempt: until it ended, or until now while it runs."""
    started = parse_time(stage.get("attemptStartedAt") or stage.get("startedAt"))
    if started is None:
        return None
    ended = parse_time(stage.get("endedAt"))
    if ended is None:
        if stage.get("status") != "RUNNING":
            return None
        ended = operation_now(operation, now)
    return (ended - started).total_seconds()


def stage_note(
    stage: dict[str, Any], operation: dict[str, Any] | None = None, now: datetime | None = None
) -> str:
    """The stage's error; what a running stage waits for (its attempt in the operation's
    ``timeline``, with the next look; else its ``progress``); or a word on what it found,
    warns of or skipped."""
    error = stage.get("error")
    if error:
        return f"{error.get('code')}: {error.get('message')}"
    latest = (stage_attempts(operation or {}).get(stage["name"]) or [{}])[-1]
    if stage.get("status") == "RUNNING" and (latest.get("waitingFor") or latest.get("nextLookAt")):
        return attempt_note(latest, operation or {}, now)
    progress = stage.get("progress") or {}
    if stage.get("status") == "RUNNING" and (progress.get("note") or progress.get("problems")):
        return "waiting: " + (progress.get("note") or "; ".join(progress["problems"]))
    output = stage.get("output") or {}
    if "found" in output:
        return f"found {output['found']}: {', '.join(output.get('names', []))}"
    if "recorded" in output:
        return f"recorded {', '.join(output['recorded']) or 'none'}"
    if output.get("warnings"):
        return "warning: " + "; ".join(output["warnings"])
    if output.get("skipped"):
        return f"skipped: {output['skipped']}"
    return ""


def stage_table(
    operation: dict[str, Any], now: datetime | None = None, *, attempts: bool = False
) -> str:
    """One row per stage: status, attempts, elapsed time of the latest attempt, a note (what
    a running stage waits for and when it looks next). `attempts`: also how many looks the
    latest attempt took, and a row under the stage for each earlier attempt kept."""
    if not attempts:
        plain = [
            (
                stage["name"],
                stage["status"],
                stage.get("attempts", 0),
                format_duration(stage_elapsed(stage, operation, now)),
                stage_note(stage, operation, now),
            )
            for stage in operation.get("stages") or []
        ]
        return render_table(("STAGE", "STATUS", "ATTEMPTS", "ELAPSED", "NOTE"), plain)
    kept = stage_attempts(operation)
    rows: list[tuple[object, ...]] = []
    for stage in operation.get("stages") or []:
        *earlier, latest = kept.get(stage["name"]) or [{}]
        rows.append((
            stage["name"],
            stage["status"],
            stage.get("attempts", 0),
            format_duration(stage_elapsed(stage, operation, now)),
            latest.get("looks", ""),
            stage_note(stage, operation, now),
        ))
        rows.extend(
            (
                f"  attempt {attempt['attempt']}",
                attempt["status"],
                "",
                format_duration(attempt_elapsed(attempt, operation, now)),
                attempt.get("looks", ""),
                attempt_note(attempt, operation, now),
            )
            for attempt in earlier
        )
    return render_table(("STAGE", "STATUS", "ATTEMPTS", "ELAPSED", "LOOKS", "NOTE"), rows)


# -- the timeline: each stage's attempts --------------------------------------------------------


def stage_attempts(operation: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """The ``timeline``'s attempts of each stage, oldest first."""
    by_stage: dict[str, list[dict[str, Any]]] = {}
    for entry in operation.get("timeline") or []:
        by_stage.setdefault(str(entry.get("stage")), []).append(entry)
    for entries in by_stage.values():
        entries.sort(key=lambda entry: int(entry.get("attempt") or 0))
    return by_stage


def attempt_elapsed(
    attempt: dict[str, Any], operation: dict[str, Any], now: datetime | None = None
) -> float | None:
    """How long an attempt ran: until it ended, or until now while it runs."""
    started = parse_time(attempt.get("startedAt"))
    ended = parse_time(attempt.get("endedAt"))
    if started is None:
        return None
    if ended is None:
        if attempt.get("status") != "RUNNING":
            return None
        ended = operation_now(operation, now)
    return (ended - started).total_seconds()


def next_look(attempt: dict[str, Any], operation: dict[str, Any], now: datetime | None = None
              ) -> str:
    """When a running attempt looks again: ``next look in 4m30s`` (or ``due``)."""
    due = parse_time(attempt.get("nextLookAt"))
    if due is None or attempt.get("status") != "RUNNING":
        return ""
    left = (due - operation_now(operation, now)).total_seconds()
    return f"next look in {format_duration(left)}" if left >= 1 else "next look due"


def attempt_note(attempt: dict[str, Any], operation: dict[str, Any], now: datetime | None = None
                 ) -> str:
    """What ended an attempt (its error), or what it waits (waited) for and when it looks next."""
    error = attempt.get("error")
    if error:
        return f"{error.get('code')}: {error.get('message')}"
    reason = attempt.get("waitingFor")
    if attempt.get("status") == "RUNNING":
        when = next_look(attempt, operation, now)
        return "; ".join(part for part in (f"waiting for: {reason}" if reason else "", when)
                         if part)
    return f"waited for: {reason}" if reason else ""


def timeline_table(operation: dict[str, Any], now: datetime | None = None) -> str:
    """Every attempt of every stage in the order they started (times in UTC)."""
    rows = [
        (
            short_time(entry.get("startedAt")),
            short_time(entry.get("endedAt"))[11:] if entry.get("endedAt") else DASH,
            entry.get("stage"),
            entry.get("attempt"),
            entry.get("status"),
            format_duration(attempt_elapsed(entry, operation, now)),
            entry.get("looks", ""),
            attempt_note(entry, operation, now),
        )
        for entry in operation.get("timeline") or []
    ]
    return render_table(
        ("STARTED", "ENDED", "STAGE", "ATTEMPT", "STATUS", "TOOK", "LOOKS", "NOTE"), rows
    )


def operation_title(operation: dict[str, Any], now: datetime | None = None) -> str:
    about = operation.get("kind", "")
    if operation.get("clusterTag"):
        about += f", cluster {operation['clusterTag']}"
    elapsed = format_duration(operation_elapsed(operation, now))
    return f"Operation {operation['id']} ({about}): {operation['status']}" + (
        f" after {elapsed}" if elapsed and operation["status"] in TERMINAL else
        f", {elapsed}" if elapsed else ""
    )


def failing_stage(operation: dict[str, Any]) -> dict[str, Any] | None:
    """The stage that ended the operation: the failed (or cancelled) one."""
    stages = operation.get("stages") or []
    for status in ("FAILED", "CANCELLED"):
        for stage in stages:
            if stage.get("status") == status:
                return dict(stage)
    return None


def current_stage(operation: dict[str, Any]) -> str:
    """The stage to show in a list: the running, failed or cancelled one."""
    for stage in operation.get("stages") or []:
        if stage.get("status") in ("RUNNING", "FAILED", "CANCELLED"):
            return str(stage["name"])
    return DASH


def stages_done(operation: dict[str, Any]) -> str:
    stages = operation.get("stages") or []
    done = sum(1 for s in stages if s.get("status") in ("SUCCEEDED", "SKIPPED"))
    return f"{done}/{len(stages)}"


def outcome_lines(ctx: Context, operation: dict[str, Any]) -> list[str]:
    """What a person needs once an operation ended badly: the stage, its error, the retry."""
    status = operation.get("status")
    if status not in ("FAILED", "CANCELLED"):
        return []
    stage = failing_stage(operation)
    error = (stage or {}).get("error") or operation.get("error") or {}
    where = (
        f"at stage {stage['name']} (attempt {stage.get('attempts', 0)})" if stage else ""
    )
    lines = [f"Operation {operation['id']} {status} {where}".rstrip() + ":" if error else
             f"Operation {operation['id']} {status} {where}".rstrip() + "."]
    if error:
        lines.append(f"  {error.get('code', 'Error')}: {error.get('message', '')}")
    lines.append(
        f"Retry it (resumes at the stage that did not succeed): "
        f"{ctx.command_line('ops retry ' + operation['id'] + ' --wait')}"
    )
    return lines
