"""`hypd completion bash|zsh|fish`: real bash completes commands, subcommands and flags from the
script; the zsh and fish scripts name the same commands."""

from __future__ import annotations

import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from hypd_cli.completion import command_tree
from hypd_cli.main import build_parser, main

BASH = shutil.which("bash") or "/bin/bash"


def script(shell: str, capsys: pytest.CaptureFixture[str]) -> str:
    assert main(["completion", shell]) == 0
    return capsys.readouterr().out


def complete(script_path: Path, *words: str) -> list[str]:
    """What bash offers for the last of `words` (the word being typed)."""
    quoted = " ".join(f"'{w}'" for w in words)
    program = (f"source {script_path}; COMP_WORDS=(hypd {quoted}); "
               f"COMP_CWORD={len(words)}; _hypd; printf '%s\\n' \"${{COMPREPLY[@]}}\"")
    done = subprocess.run([BASH, "-c", program], capture_output=True, text=True,  # noqa: S603
                          check=True, timeout=30)
    assert done.stderr == ""
    return done.stdout.split()


def test_bash_completes_commands_subcommands_and_the_flags_of_the_command_given(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "hypd.bash"
    path.write_text(script("bash", capsys))

    assert complete(path, "clu") == ["clusters"]
    assert complete(path, "clusters", "") == ["list", "get", "create", "discover", "plan",
                                              "delete", "protect", "upgrades", "upgrade"]
    # after a positional (the tag), the flags are still the command's own
    assert complete(path, "clusters", "get", "demo", "--qu") == ["--query"]
    assert "--follow" in complete(path, "events", "tail", "--")
    assert complete(path, "--vers") == ["--version"]


def test_zsh_and_fish_scripts_name_every_command(capsys: pytest.CaptureFixture[str]) -> None:
    tree = command_tree(build_parser())
    groups = tree[()][0]
    zsh, fish = script("zsh", capsys), script("fish", capsys)

    assert "bashcompinit" in zsh
    assert "complete -F _hypd hypd" in zsh
    assert f"-a {shlex.quote(' '.join(groups))}" in fish
    for path, (subcommands, _flags) in tree.items():
        if len(path) == 1 and subcommands:
            assert f"-a {shlex.quote(' '.join(subcommands))}" in fish, path
