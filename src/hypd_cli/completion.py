"""``hypd completion bash|zsh|fish``: a shell completion script for every command, subcommand
and flag, made from the CLI's own parsers (so it never lists a command that does not exist).

    source <(hypd completion bash)              # ~/.bashrc
    source <(hypd completion zsh)               # ~/.zshrc (through bashcompinit)
    hypd completion fish | source               # ~/.config/fish/config.fish
"""

from __future__ import annotations

import argparse
import shlex
from typing import Any

SHELLS = ("bash", "zsh", "fish")


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "completion", help="print a shell completion script (bash, zsh or fish)",
        description="Print the completion script of a shell: `source <(hypd completion "
        "bash)` in ~/.bashrc, `source <(hypd completion zsh)` in ~/.zshrc, `hypd completion "
        "fish | source` in ~/.config/fish/config.fish.",
    )
    parser.add_argument("shell", choices=SHELLS, help="the shell")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from hypd_cli.main import build_parser

    tree = command_tree(build_parser())
    print({"bash": bash, "zsh": zsh, "fish": fish}[args.shell](tree))
    return 0


def command_tree(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()
                 ) -> dict[tuple[str, ...], tuple[list[str], list[str]]]:
    """Each command path (``()``, ``("clusters",)``, ``("clusters", "list")``) -> (its
    subcommands, its flags)."""
    subcommands: list[str] = []
    flags: list[str] = []
    found: dict[tuple[str, ...], tuple[list[str], list[str]]] = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                subcommands.append(name)
                found.update(command_tree(sub, (*path, name)))
        else:
            flags += [o for o in action.option_strings if o.startswith("--")]
    found[path] = (subcommands, flags)
    return found


def bash(tree: dict[tuple[str, ...], tuple[list[str], list[str]]]) -> str:
    cases = []
    for path, (subcommands, flags) in sorted(tree.items()):
        words = " ".join(subcommands or flags)
        cases.append(f"        {shlex.quote(' '.join(path))}) words={shlex.quote(words)} ;;")
    return "\n".join([
        "# hypd completion for bash (hypd completion bash)",
        "_hypd() {",
        "    local cur=${COMP_WORDS[COMP_CWORD]} path='' word i",
        "    for ((i = 1; i < COMP_CWORD; i++)); do",
        "        word=${COMP_WORDS[i]}",
        "        [[ $word == -* ]] && break",
        "        local next=${path:+$path }$word",
        "        case $next in",
        *[f"            {shlex.quote(' '.join(p))}) path=$next ;;" for p in sorted(tree) if p],
        "            *) break ;;",
        "        esac",
        "    done",
        "    local words=''",
        "    case $path in",
        *cases,
        "    esac",
        "    [[ $cur == -* ]] && words=${_HYPD_FLAGS[hypd${path:+ $path}]:-$words}",
        '    COMPREPLY=($(compgen -W "$words" -- "$cur"))',
        "}",
        "declare -A _HYPD_FLAGS=(",
        *[f"    [{shlex.quote(' '.join(('hypd', *p)))}]={shlex.quote(' '.join(flags))}"
          for p, (_subs, flags) in sorted(tree.items()) if flags],
        ")",
        "complete -F _hypd hypd",
    ])


def zsh(tree: dict[tuple[str, ...], tuple[list[str], list[str]]]) -> str:
    return "\n".join([
        "# hypd completion for zsh (hypd completion zsh): the bash script, through bashcompinit",
        "autoload -U +X bashcompinit && bashcompinit",
        bash(tree),
    ])


def fish(tree: dict[tuple[str, ...], tuple[list[str], list[str]]]) -> str:
    lines = ["# hypd completion for fish (hypd completion fish)", "complete -c hypd -f"]
    for path, (subcommands, flags) in sorted(tree.items()):
        if path:
            seen = " && ".join(f"__fish_seen_subcommand_from {shlex.quote(p)}" for p in path)
            condition = seen
        else:
            condition = "__fish_use_subcommand"
        if subcommands:
            inner = (f"{condition} && not __fish_seen_subcommand_from "
                     f"{' '.join(subcommands)}") if path else condition
            lines.append(f"complete -c hypd -n {shlex.quote(inner)} -a "
                         f"{shlex.quote(' '.join(subcommands))}")
        else:
            for flag in flags:
                lines.append(f"complete -c hypd -n {shlex.quote(condition)} -l {flag[2:]}")
    return "\n".join(lines)
