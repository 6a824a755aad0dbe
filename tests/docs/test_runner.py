"""The executed-docs runner itself: it fails on a doc whose command or output drifts, and on a
block it cannot classify; these run no local cloud."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.docs.blocks import read_blocks, transcript
from tests.docs.matching import matches
from tests.docs.runner import check_document, commands

ROOT = Path(__file__).resolve().parents[2]


def _doc(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "doc.md"
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize(("expected", "actual", "same"), [
    (["a  b", "c"], ["a b   ", "c", ""], True),
    (["op-... SUCCEEDED"], ["op-9f2 SUCCEEDED"], True),
    (["first", "...", "last"], ["first", "x", "y", "last"], True),
    (["first", "...", "last"], ["first", "last"], True),
    (["NAME  TYPE", "----  ----"], ["NAME TYPE", "------- ----------"], True),
    (["first", "last"], ["first", "middle", "last"], False),
    (["op-... SUCCEEDED"], ["op-9f2 FAILED"], False),
    (["a"], ["a", "b"], False),
])
def test_output_matching(expected: list[str], actual: list[str], same: bool) -> None:
    assert matches(expected, actual) is same


def test_transcript_reads_commands_and_their_output() -> None:
    block = read_blocks(ROOT / "docs" / "cli.md")
    first = next(b for b in block if b.kind == "transcript")
    exchanges = transcript(first)

    assert exchanges[0].command.startswith("hypd ")
    assert all(not line.startswith("$ ") for e in exchanges for line in e.expected)


def test_commands_split_as_the_shell_does() -> None:
    lines = ("A=1 hypd clusters list -o json | jq .  # a comment",
             "curl -s -X POST $API/x -H \"$JSON\" \\",
             "     -d '{\"a\": 1,", "          \"b\": 2}' && hypd ops watch -")

    assert list(commands(lines)) == [
        ["A=1", "hypd", "clusters", "list", "-o", "json"], ["jq", "."],
        ["curl", "-s", "-X", "POST", "$API/x", "-H", "$JSON", "-d", '{"a": 1,\n          "b": 2}'],
        ["hypd", "ops", "watch", "-"]]


@pytest.mark.parametrize(("commands_shown", "failure"), [
    ("hypd clusters list\nhypd clusters frobnicate demo", "invalid choice"),
    ("hypd groups scale demo spot 2 --wiat", "unrecognized arguments: --wiat"),
    (".venv/bin/python bench/no_such_bench.py --runs 3", "bench/no_such_bench.py does not exist"),
    ("hypd groups scale demo spot 2 --wait\n.venv/bin/python bench/teardown.py", None),
])
def test_a_parsed_block_fails_on_what_does_not_exist(
        tmp_path: Path, commands_shown: str, failure: str | None) -> None:
    doc = _doc(tmp_path, f"<!-- doc-test: parse a summary -->\n```bash\n{commands_shown}\n```\n")

    report = check_document(doc, ROOT, tmp_path)

    if failure is None:
        assert report.failure is None
        assert report.parsed == ["doc.md:2"]
    else:
        assert report.failure is not None
        assert failure in report.failure
        assert commands_shown.splitlines()[-1] in report.failure


def test_drifted_output_and_a_failing_command_fail_a_run(tmp_path: Path) -> None:
    drifted = _doc(tmp_path, "```console\n$ echo one two\none three\n```\n")
    failing = tmp_path / "failing.md"
    failing.write_text("```bash\nX=1\nfalse\necho never\n```\n", encoding="utf-8")
    good = tmp_path / "good.md"
    good.write_text("```bash\nexport X=kept\n```\n\n```console\n$ echo $X\nkept\n"
                    "$ sh -c 'exit 3'\n[3]\n```\n", encoding="utf-8")

    assert "printed other output" in (check_document(drifted, ROOT, tmp_path / "a").failure or "")
    failure = check_document(failing, ROOT, tmp_path / "b").failure or ""
    assert "exit status 1 from: false" in failure
    assert "never" not in failure
    assert check_document(good, ROOT, tmp_path / "c").failure is None


def test_a_block_of_commands_needs_a_fence_and_a_skip_its_reason(tmp_path: Path) -> None:
    unlabeled = _doc(tmp_path, "```\n./dev bench\n```\n")
    reasonless = tmp_path / "reasonless.md"
    reasonless.write_text("<!-- doc-test: skip -->\n```bash\nhypd clusters list\n```\n",
                          encoding="utf-8")

    assert "give it a ```bash fence" in (check_document(unlabeled, ROOT, tmp_path).failure or "")
    assert "needs its reason" in (check_document(reasonless, ROOT, tmp_path).failure or "")


def test_keep_going_lists_every_drifted_transcript_and_a_reader_stops_at_the_first(
        tmp_path: Path) -> None:
    doc = _doc(tmp_path, "```console\n$ echo one\nuno\n$ echo two\ntwo\n$ echo three\ntres\n"
                         "```\n\n```console\n$ echo four\ncuatro\n```\n")

    reader = check_document(doc, ROOT, tmp_path / "a").failure or ""
    writer = check_document(doc, ROOT, tmp_path / "b", keep_going=True).failure or ""

    assert [c for c in ("echo one", "echo three", "echo four") if f"`{c}`" in reader] == [
        "echo one"]
    assert [c for c in ("echo one", "echo two", "echo three", "echo four")
            if f"`{c}`" in writer] == ["echo one", "echo three", "echo four"]


@pytest.mark.parametrize(("sketch", "found"), [
    ("from hypd_cli.api_client import ApiClient\nApiClient.connect('http://h/v1')\n", None),
    ("api.anything(x={...}, id='op-...')\n", None),
    ("from hypd_cli.api_client import ApiClient\nApiClient.no_such_method()\n",
     "ApiClient.no_such_method does not exist"),
    ("from hypd_cli.api_client import NoSuchName\n", "hypd_cli.api_client has no NoSuchName"),
    ("import hypd_cli.no_such_module\n", "No module named 'hypd_cli.no_such_module'"),
    ("f(a, *, b=1)\n", "does not compile"),
])
def test_a_python_sketch_compiles_and_names_what_exists(
        tmp_path: Path, sketch: str, found: str | None) -> None:
    doc = _doc(tmp_path, f"```python\n{sketch}```\n")

    report = check_document(doc, ROOT, tmp_path / "s")

    if found is None:
        assert report.failure is None, report.failure
        assert report.parsed == ["doc.md:1"]
    else:
        assert found in (report.failure or ""), report.failure
