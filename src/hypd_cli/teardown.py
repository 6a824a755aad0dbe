"""``hypd clusters plan|delete|protect``: a cluster's teardown (docs/teardown.md).

``plan`` shows what ``DELETE /clusters/{tag}`` would delete, in order, what it keeps and why,
and what blocks it now. ``delete`` deletes (an operation; ``--wait`` follows it) once the user
has confirmed by typing the tag (``--yes`` skips the question), or, with ``--forget``, removes
the record of a discovered cluster. ``protect`` turns deletion protection on or off.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hypd_cli.cli import EXIT_FAILED, EXIT_OK, Context, UsageError, api_command
from hypd_cli.operations import add_wait_flag, follow_accepted
from hypd_cli.output import print_json


def register_under(commands: Any) -> None:
    """The teardown commands, under ``hypd clusters``."""
    plan = commands.add_parser("plan", help="what deleting the cluster would delete, keep and "
                               "be blocked by (GET /clusters/{tag}/teardown-plan)")
    plan.add_argument("tag", metavar="TAG")
    plan.add_argument("--force", action="store_true", help="the plan with running workloads "
                      "stopped")
    api_command(plan, "clusters plan", show_plan)

    delete = commands.add_parser(
        "delete", help="delete the cluster and everything hypd made for it "
        "(DELETE /clusters/{tag}; read hypd clusters plan first)")
    delete.add_argument("tag", metavar="TAG")
    delete.add_argument("--force", action="store_true",
                        help="also stop running jobs and endpoints")
    delete.add_argument("--forget", action="store_true",
                        help="a discovered cluster: remove hypd's record only")
    delete.add_argument("--yes", action="store_true",
                        help="do not ask to type the tag to confirm")
    add_wait_flag(delete)
    api_command(delete, "clusters delete", delete_cluster)

    protect = commands.add_parser("protect", help="turn deletion protection on or off "
                                  "(PUT /clusters/{tag}/protection)")
    protect.add_argument("tag", metavar="TAG")
    state = protect.add_mutually_exclusive_group(required=True)
    state.add_argument("--on", action="store_true", help="refuse deletion")
    state.add_argument("--off", action="store_true", help="allow deletion")
    api_command(protect, "clusters protect", set_protection)


def describe_plan(plan: Mapping[str, Any]) -> str:
    lines = [f"Teardown of cluster {plan.get('tag')}"
             + (" (with --force)" if plan.get("force") else "") + ":"]
    parallel = {stage for branch in plan.get("parallel") or [] for stage in branch}
    for number, step in enumerate(plan.get("steps") or [], 1):
        side = "  (beside the others marked ||)" if step["stage"] in parallel else ""
        marker = "||" if step["stage"] in parallel else "  "
        lines.append(f"{marker}{number}. {step['stage']}{side if number == 1 else ''}")
        for resource in step.get("resources") or []:
            where = f"  {resource['arn']}" if resource.get("arn") else ""
            lines.append(f"       delete {resource['type']} {resource['name']}{where}")
        if not step.get("resources"):
            lines.append("       nothing")
    for kept in plan.get("kept") or []:
        lines.append(f"  keep {kept['type']} {kept['name']}: {kept['reason']}")
    blockers = plan.get("blockers") or []
    if blockers:
        lines.append("Blocked now:")
        lines += [f"  {b['code']}: {b['message']}" for b in blockers]
    else:
        lines.append("Nothing blocks it.")
    return "\n".join(lines)


def show_plan(ctx: Context) -> int:
    plan = ctx.client.get_teardown_plan(ctx.args.tag, force=ctx.args.force)
    if ctx.json:
        print_json(ctx, plan)
    else:
        ctx.say(describe_plan(plan))
    return EXIT_OK if plan.get("deletable") else EXIT_FAILED


def delete_cluster(ctx: Context) -> int:
    args = ctx.args
    if args.forget:
        answer = ctx.client.delete_cluster(args.tag, forget=True)
        if ctx.json:
            print_json(ctx, answer)
        else:
            ctx.say(f"Forgot cluster {args.tag}: its resources are as they were.")
        return EXIT_OK
    if not args.yes:
        if not ctx.stdin.isatty():
            raise UsageError("give --yes to delete without typing the tag (stdin is not a "
                             "terminal); read the plan first: "
                             + ctx.command_line(f"clusters plan {args.tag}"))
        ctx.say(f"This deletes cluster {args.tag} and everything hypd made for it; "
                f"{ctx.command_line(f'clusters plan {args.tag}')} lists it.")
        print(f"Type the cluster's tag ({args.tag}) to delete it: ", end="", file=ctx.err,
              flush=True)
        if ctx.stdin.readline().strip() != args.tag:
            raise UsageError("not confirmed: nothing was deleted")
    accepted = ctx.client.delete_cluster(args.tag, force=args.force)
    return follow_accepted(ctx, accepted, f"Deleting cluster {args.tag}")


def set_protection(ctx: Context) -> int:
    answer = ctx.client.set_protection(ctx.args.tag, bool(ctx.args.on))
    if ctx.json:
        print_json(ctx, answer)
    else:
        state = "on" if answer.get("enabled") else "off"
        ctx.say(f"Deletion protection of cluster {ctx.args.tag} is {state}.")
    return EXIT_OK
