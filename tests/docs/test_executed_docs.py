"""The docs are executed: every command block of README.md and docs/*.md runs against the
local cloud in the order a reader follows it, its output compared with what the doc shows, or
is marked with the reason it cannot run (tests/docs/blocks.py). A doc whose command or output
drifts fails here, naming its line."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.docs.blocks import read_blocks
from tests.docs.runner import check_document

ROOT = Path(__file__).resolve().parents[2]
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda p: str(p.relative_to(ROOT)))
def test_document_runs_as_written(document: Path, tmp_path: Path) -> None:
    report = check_document(document, ROOT, tmp_path)

    assert report.failure is None, report.failure


def test_every_command_block_is_covered() -> None:
    """Every command block of every user doc is run, parsed or skipped with a reason; the
    skipped ones stay a minority of the README's and the CLI guide's."""
    for document in (ROOT / "README.md", ROOT / "docs" / "cli.md"):
        blocks = [b for b in read_blocks(document) if b.kind in ("script", "transcript")]
        skipped = [b for b in blocks if b.directive("skip")]
        assert blocks, document.name
        assert len(skipped) * 4 <= len(blocks), (document.name, [b.where for b in skipped])
