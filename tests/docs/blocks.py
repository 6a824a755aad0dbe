"""The fenced blocks of a Markdown document, as the executed-docs test reads them.

A block's kind comes from its fence and its first line:

- ``bash`` / ``sh`` / ``shell`` fences are *script* blocks: their commands run in the doc's
  shell session, each must exit 0 (an HTTP error from ``curl`` counts as a failure);
- a ``console`` fence, or a plain fence whose first line starts with ``$ ``, is a *transcript*:
  each ``$ command`` runs and what it prints is compared with the lines under it;
- a plain fence right after a ``<!-- doc-test: output -->`` directive is the expected output
  of the script block before it;
- a ``python`` fence is *python*: an API sketch (placeholders such as ``{...}`` and ``"op-..."``
  stand in for values), so it is not run but must compile, and every name it imports and every
  attribute it reads from one (``ApiClient.connect``) must exist;
- any other fence (JSON, YAML, Python, diagrams, tables of figures) is text, unless its first
  line reads like a command: then the test asks for a ``bash`` fence.

A directive is an HTML comment on the lines before a fence (invisible when rendered):

- ``<!-- doc-test: skip REASON -->``: the block is not run, for the reason given (required);
- ``<!-- doc-test: parse REASON -->``: the block's ``hypd`` commands are parsed by the CLI's
  own parser (a command or flag that does not exist fails) and files it runs must exist,
  but nothing is run (a summary of commands whose placeholders a reader fills in);
- ``<!-- doc-test: before COMMAND -->``: a command the reader is assumed to have run first
  (state an earlier page made), run before the block and shown in the doc's source;
- ``<!-- doc-test: output -->``: see above.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

SCRIPT_LANGUAGES = frozenset({"bash", "sh", "shell"})
PYTHON_LANGUAGES = frozenset({"python", "py"})
DIRECTIVE = re.compile(r"^<!--\s*doc-test:\s*(\w+)\s*(.*?)\s*-->\s*$")
FENCE = re.compile(r"^(\s*)```(\S*)\s*$")
# A plain block starting like this is a command a reader types, so it needs a `bash` fence.
COMMAND_START = re.compile(
    r"^(\./dev\b|\.venv[-\w]*/bin/|hypd |curl |aws |sam |kubectl |pip |PYTHONPATH=|export )")


@dataclass(frozen=True)
class Directive:
    name: str
    argument: str


@dataclass(frozen=True)
class Block:
    path: Path
    line: int  # of the opening fence, 1-based
    language: str
    lines: tuple[str, ...]
    directives: tuple[Directive, ...] = field(default=())

    @property
    def where(self) -> str:
        return f"{self.path.name}:{self.line}"

    def directive(self, name: str) -> Directive | None:
        return next((d for d in self.directives if d.name == name), None)

    @property
    def kind(self) -> str:
        """script, transcript, output, python or text."""
        if self.language in SCRIPT_LANGUAGES:
            return "script"
        if self.language in PYTHON_LANGUAGES:
            return "python"
        first = next((line for line in self.lines if line.strip()), "")
        if self.language == "console" or (not self.language and first.startswith("$ ")):
            return "transcript"
        if not self.language and self.directive("output"):
            return "output"
        return "text"

    @property
    def looks_like_commands(self) -> bool:
        first = next((line for line in self.lines if line.strip()), "")
        return self.kind == "text" and not self.language and bool(COMMAND_START.match(first))


KNOWN_DIRECTIVES = frozenset({"skip", "parse", "before", "output"})


def read_blocks(path: Path) -> list[Block]:
    """Every fenced block of the document, with the directives on the lines before it."""
    lines = path.read_text(encoding="utf-8").splitlines()
    blocks: list[Block] = []
    pending: list[Directive] = []
    index = 0
    while index < len(lines):
        line = lines[index]
        directive = DIRECTIVE.match(line.strip())
        fence = FENCE.match(line)
        if directive:
            if directive.group(1) not in KNOWN_DIRECTIVES:
                raise ValueError(f"{path.name}:{index + 1}: unknown doc-test directive "
                                 f"{directive.group(1)!r} (known: {sorted(KNOWN_DIRECTIVES)})")
            pending.append(Directive(directive.group(1), directive.group(2)))
        elif fence:
            indent, language = fence.group(1), fence.group(2)
            end = index + 1
            while end < len(lines) and lines[end].strip() != "```":
                end += 1
            body = tuple(text[len(indent):] if text.startswith(indent) else text
                         for text in lines[index + 1:end])
            blocks.append(Block(path, index + 1, language, body, tuple(pending)))
            pending = []
            index = end
        elif line.strip() and pending and not line.lstrip().startswith("<!--"):
            raise ValueError(f"{path.name}:{index + 1}: a doc-test directive must come right "
                             f"before the fence it applies to")
        index += 1
    return blocks


@dataclass(frozen=True)
class Exchange:
    """One ``$ command`` of a transcript and the lines it is shown to print."""

    command: str
    expected: tuple[str, ...]


def transcript(block: Block) -> list[Exchange]:
    """The commands of a transcript block, each with its expected output. A command may go on
    over lines ending in a backslash, or lines starting with ``> `` (a shell's continuation
    prompt)."""
    exchanges: list[Exchange] = []
    command: list[str] = []
    expected: list[str] = []
    continuing = False
    for line in block.lines:
        if line.startswith("$ "):
            if command:
                exchanges.append(Exchange("\n".join(command), tuple(expected)))
            command, expected = [line[2:]], []
            continuing = line.endswith("\\")
        elif command and (continuing or line.startswith("> ")) and not expected:
            command.append(line[2:] if line.startswith("> ") else line)
            continuing = line.endswith("\\")
        else:
            expected.append(line)
            continuing = False
    if command:
        exchanges.append(Exchange("\n".join(command), tuple(expected)))
    return exchanges
