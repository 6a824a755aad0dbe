"""Output as a doc shows it against output as a command printed it, doctest-style.

Both sides are compared line by line after trailing spaces are cut, runs of spaces are made
one (a table's column widths follow its widest value, which a doc elides) and blank lines at
either end are dropped. In the doc's lines, ``...`` inside a line stands for any text (an id,
a time), and a line that is only ``...`` stands for any number of lines, none included. A
table's rule (a line of dashes) matches a rule of any widths.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import cache

ELLIPSIS = "..."
_SPACES = re.compile(r"[ \t]+")


def normalise(lines: Sequence[str]) -> list[str]:
    cut = [_SPACES.sub(" ", line.rstrip()) for line in lines]
    while cut and not cut[0].strip():
        cut.pop(0)
    while cut and not cut[-1].strip():
        cut.pop()
    return cut


_RULE = re.compile(r"^-+( -+)*$")


def _line_pattern(line: str) -> re.Pattern[str]:
    if _RULE.match(line):
        return _RULE
    pieces = [re.escape(piece) for piece in line.split(ELLIPSIS)]
    return re.compile(".*".join(pieces) + r"\Z", re.DOTALL)


def matches(expected: Sequence[str], actual: Sequence[str]) -> bool:
    """Whether what was printed (actual) is what the doc shows (expected)."""
    want = normalise(expected)
    got = normalise(actual)
    patterns = [None if line.strip() == ELLIPSIS else _line_pattern(line.strip())
                for line in want]

    @cache
    def match(i: int, j: int) -> bool:
        if i == len(patterns):
            return j == len(got)
        pattern = patterns[i]
        if pattern is None:  # any number of lines
            return any(match(i + 1, k) for k in range(j, len(got) + 1))
        return j < len(got) and bool(pattern.match(got[j].strip())) and match(i + 1, j + 1)

    return match(0, 0)


def first_difference(expected: Sequence[str], actual: Sequence[str]) -> str:
    """A short account of where they part, for the failure message."""
    want, got = normalise(expected), normalise(actual)
    shown = "\n".join(f"    {line}" for line in got[:60])
    more = f"\n    ... ({len(got) - 60} more lines)" if len(got) > 60 else ""
    wanted = "\n".join(f"    {line}" for line in want[:60])
    return f"the doc shows:\n{wanted}\n  the command printed:\n{shown}{more}"
