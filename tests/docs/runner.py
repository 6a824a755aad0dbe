"""Runs a document's command blocks in order, as a reader would, and says where it departs
from what it shows (see tests/docs/blocks.py for how blocks and directives are read)."""

from __future__ import annotations

import ast
import contextlib
import importlib
import io
import shlex
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from hypd_cli.main import build_parser, parse_command
from tests.docs.blocks import Block, read_blocks, transcript
from tests.docs.matching import first_difference, matches
from tests.docs.session import Ran, ShellSession

_SEPARATORS = frozenset({";", "&", "|", "&&", "||", "(", ")"})


@dataclass
class Report:
    """What the run of one document found."""

    ran: list[str] = field(default_factory=list)
    parsed: list[str] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)
    failure: str | None = None


def check_document(path: Path, root: Path, scratch: Path, *,
                   keep_going: bool = False) -> Report:
    """Every command block of `path`: run, parsed or skipped with its reason. Stops at the
    first departure, as a reader would (later blocks build on earlier ones); `keep_going`
    (for a writer updating a doc's outputs) goes on past a transcript whose output differs,
    all of them in `failure`."""
    noted: list[str] = []
    report = Report()
    blocks = read_blocks(path)
    session: ShellSession | None = None
    last: Ran | None = None
    try:
        for block in blocks:
            failure = _static_failure(block)
            if failure:
                report.failure = failure
                return report
            kind = block.kind
            if kind == "text":
                continue
            if kind == "python" and not block.directive("skip"):
                failure = check_python(block)
                if failure:
                    report.failure = failure
                    return report
                report.parsed.append(block.where)
                continue
            skip, parse = block.directive("skip"), block.directive("parse")
            if kind == "output":
                if last is None:  # the block it shows the output of did not run
                    continue
                if not matches(block.lines, last.output.splitlines()):
                    report.failure = (f"{block.where}: the output differs; "
                                      f"{first_difference(block.lines, last.output.splitlines())}")
                    return report
                continue
            last = None
            if skip:
                report.skipped.append((block.where, skip.argument))
                continue
            if parse:
                failure = parse_block(block, root)
                if failure:
                    report.failure = failure
                    return report
                report.parsed.append(block.where)
                continue
            if session is None:
                session = ShellSession(root, scratch)
            failure, last = _run_block(block, session, keep_going)
            if failure and keep_going and "printed other output" in failure:
                noted.append(failure)
                continue
            if failure:
                log = session.local_cloud_log()
                report.failure = failure + (f"\n  local cloud's log (end):\n{log}" if log else "")
                return report
            report.ran.append(block.where)
    finally:
        if session is not None:
            session.close()
    if noted:
        report.failure = "\n\n".join([*noted, *([report.failure] if report.failure else [])])
    return report


def _static_failure(block: Block) -> str | None:
    if block.looks_like_commands:
        return (f"{block.where}: this block holds commands: give it a ```bash fence (and a "
                f"doc-test directive if it cannot run)")
    for name in ("skip", "parse"):
        directive = block.directive(name)
        if directive and not directive.argument:
            return f"{block.where}: doc-test: {name} needs its reason"
    if block.directive("output") and block.kind != "output":
        return f"{block.where}: doc-test: output marks a plain fence (the output shown)"
    return None


def _run_block(block: Block, session: ShellSession,
               keep_going: bool = False) -> tuple[str | None, Ran | None]:
    for before in (d for d in block.directives if d.name == "before"):
        ran = session.run(before.argument, strict=True)
        if ran.status:
            return (f"{block.where}: its doc-test: before command failed ({ran.status}):\n"
                    f"  {before.argument}\n{_indent(ran.output)}"), None
    if block.kind == "script":
        ran = session.run("\n".join(block.lines), strict=True)
        if ran.status:
            return (f"{block.where}: the block failed (exit status {ran.status}):\n"
                    f"{_indent(ran.output)}"), None
        return None, ran
    differs: list[str] = []
    for exchange in transcript(block):
        expected = list(exchange.expected)
        status = 0
        if expected and expected[-1].strip().startswith("[") and expected[-1].strip().endswith(
                "]") and expected[-1].strip()[1:-1].isdigit():
            status = int(expected.pop().strip()[1:-1])
        ran = session.run(exchange.command, strict=False)
        if ran.status != status:
            return (f"{block.where}: `{exchange.command}` exited {ran.status}, the doc shows "
                    f"{status}:\n{_indent(ran.output)}"), None
        if not matches(expected, ran.output.splitlines()):
            differs.append(f"{block.where}: `{exchange.command}` printed other output; "
                           f"{first_difference(expected, ran.output.splitlines())}")
            if not keep_going:
                break
    return ("\n\n".join(differs) or None), None


def _indent(text: str) -> str:
    lines = text.rstrip().splitlines()[-80:]
    return "\n".join(f"    {line}" for line in lines)


def commands(lines: tuple[str, ...]) -> Iterator[list[str]]:
    """The simple commands of a block: backslash-continued lines joined, comments dropped,
    split at ;, &, |, && and || (quotes may span lines)."""
    pending = ""
    for line in lines:
        pending = f"{pending}\n{line}" if pending else line
        if pending.endswith("\\"):
            pending = pending[:-1]
            continue
        lexer = shlex.shlex(pending, posix=True, punctuation_chars=";&|()")
        lexer.whitespace_split = True
        try:
            tokens = list(lexer)
        except ValueError:  # a quote goes on over the next line
            continue
        pending = ""
        command: list[str] = []
        for token in tokens:
            if token in _SEPARATORS:
                if command:
                    yield command
                command = []
            else:
                command.append(token)
        if command:
            yield command


def parse_block(block: Block, root: Path) -> str | None:
    """Checks that each `hypd` command of the block is one the CLI accepts and that each file
    it runs exists, without running anything."""
    parser = build_parser()
    for words in commands(block.lines):
        while words and "=" in words[0] and not words[0].startswith("-"):
            words = words[1:]  # VAR=value before the command
        if not words:
            continue
        program = words[0]
        if program.endswith("hypd"):
            failure = _parse_hypd(words[1:], parser)
            if failure:
                return f"{block.where}: `{shlex.join(words)}`: {failure}"
        if "/" in program and not program.startswith(("$", "/")) and not (root / program).exists():
            return f"{block.where}: `{shlex.join(words)}`: {program} does not exist"
        scripts = [w for w in words[1:] if w.endswith(".py") and not w.startswith("-")]
        for script in scripts:
            if not (root / script).exists():
                return f"{block.where}: `{shlex.join(words)}`: {script} does not exist"
    return None


def check_python(block: Block) -> str | None:
    """A Python sketch compiles, each `import` and `from ... import` in it resolves, and each
    attribute it reads from an imported name (`ApiClient.connect`, `store.record` is not one)
    exists."""
    try:
        tree = ast.parse("\n".join(block.lines), filename=block.where)
    except SyntaxError as exc:
        return f"{block.where}: the Python does not compile: {exc.msg} (its line {exc.lineno})"
    imported: dict[str, object] = {}
    for node in ast.walk(tree):
        try:
            if isinstance(node, ast.Import):
                for alias in node.names:
                    importlib.import_module(alias.name)
                    top = alias.name.split(".")[0]
                    imported[alias.asname or top] = importlib.import_module(
                        alias.name if alias.asname else top)
            elif isinstance(node, ast.ImportFrom):
                for alias in node.names:
                    imported[alias.asname or alias.name] = _imported(node.module or "",
                                                                     alias.name)
        except ImportError as exc:
            return f"{block.where}: {ast.unparse(node)}: {exc}"
    for node in ast.walk(tree):
        chain: list[str] = []
        while isinstance(node, ast.Attribute):
            chain.insert(0, node.attr)
            node = node.value
        if not chain or not isinstance(node, ast.Name) or node.id not in imported:
            continue
        value = imported[node.id]
        for position, attr in enumerate(chain):
            if not hasattr(value, attr):
                return f"{block.where}: {'.'.join([node.id, *chain[:position + 1]])} does not exist"
            value = getattr(value, attr)
    return None


def _imported(module_name: str, name: str) -> object:
    """What `from module_name import name` binds (an ImportError when nothing)."""
    module = importlib.import_module(module_name)
    if hasattr(module, name):
        return getattr(module, name)
    try:
        return importlib.import_module(f"{module_name}.{name}")
    except ImportError:
        raise ImportError(f"{module_name} has no {name}") from None


def _parse_hypd(argv: list[str], parser: object) -> str | None:
    errors = io.StringIO()
    try:
        with contextlib.redirect_stderr(errors), contextlib.redirect_stdout(io.StringIO()):
            parse_command(argv, parser)  # type: ignore[arg-type]
    except SystemExit as exit_:
        if exit_.code not in (0, None):
            return errors.getvalue().strip().splitlines()[-1] if errors.getvalue() else (
                f"exit {exit_.code}")
    return None
