"""``hypd clusters plan|delete|protect``: a cluster's teardown (docs/teardown.md).

``plan`` shows what ``DELETE /clusters/{tag}`` would delete, in order, what it keeps and why,
and what blocks it now. ``delete`` deletes (an operation; ``--wait`` follows it) once the user
has confirmed by typing the tag (``--yes`` skips the question), or, with ``--forget``, removes
the record of a discovered cluster; ``delete --plan`` is ``plan``. ``protect`` turns deletion
protection on or off. What blocks a deletion (in the plan, or the API's 409) comes with the
command that clears it (`blocker_hint`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hypd_cli.api_client import ApiError
from hypd_cli.cli import (
    EXIT_FAILED,
    EXIT_OK,
    Context,
    UsageError,
    api_command,
    refused_with_hint,
)
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
    delete.add_argument("--plan", action="store_true",
                        help="print the plan (as hypd clusters plan) and delete nothing")
    add_wait_flag(delete)
    api_command(delete, "clusters delete", delete_cluster)

    protect = commands.add_parser("protect", help="turn deletion protection on or off "
                                  "(PUT /clusters/{tag}/protection)")
    protect.add_argument("tag", metavar="TAG")
    state = protect.add_mutually_exclusive_group(required=True)
    state.add_argument("--on", action="store_true", help="refuse deletion")
    state.add_argument("--off", action="store_true", help="allow deletion")
    api_command(protect, "clusters protect", set_protection)


def describe_plan(plan: Mapping[str, Any], ctx: Context | None = None) -> str:
    """The plan as text; with ``ctx``, each blocker with the command that clears it."""
    lines = [f"Teardown of cluster {plan.get('tag')}"
             + (" (with --force)" if plan.get("force") else "") + ":"]
    branches = [list(branch) for branch in plan.get("parallel") or []]
    parallel = {stage for branch in branches for stage in branch}
    # Said once, on the first of the steps that run side by side.
    side = "  (|| side by side: " + " beside ".join(" -> ".join(b) for b in branches) + ")"
    for number, step in enumerate(plan.get("steps") or [], 1):
        marker = "||" if step["stage"] in parallel else "  "
        note = side if marker == "||" else ""
        side = "" if note else side
        lines.append(f"{marker}{number}. {step['stage']}{note}")
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
        for blocker in blockers:
            lines.append(f"  {blocker['code']}: {blocker['message']}")
            hint = blocker_hint(ctx, str(plan.get("tag")), blocker) if ctx else None
            if hint:
                lines.append(f"    {hint}")
    else:
        lines.append("Nothing blocks it.")
    return "\n".join(lines)


def show_plan(ctx: Context) -> int:
    try:
        plan = ctx.client.get_teardown_plan(ctx.args.tag, force=ctx.args.force)
    except ApiError as exc:  # a DELETED cluster has no plan: its 409 says what the tag allows
        return refused(ctx, exc)
    if ctx.structured:
        print_json(ctx, plan)
    else:
        ctx.say(describe_plan(plan, ctx))
    return EXIT_OK if plan.get("deletable") else EXIT_FAILED


def blocker_hint(ctx: Context, tag: str, blocker: Mapping[str, Any]) -> str | None:
    """The command that clears what blocks the deletion (a plan's blocker ``{code, message,
    details}``, or the API's 409 of a deleted or deleting cluster), or None."""
    code, details = blocker.get("code"), blocker.get("details") or {}
    operation = details.get("operationId")
    if code == "DeletionProtected":
        return ("Deletion protection is on; if the cluster may go, turn it off first: "
                + ctx.command_line(f"clusters protect {tag} --off"))
    if code in ("WorkloadsRunning", "WorkloadsUnknown"):
        return ("Delete the jobs and endpoints first, or stop them with the cluster: "
                + ctx.command_line(f"clusters delete {tag} --force"))
    if code == "NotCreatedByHypd":
        return ("hypd deletes only what it created; remove its record only (every resource "
                "stays): " + ctx.command_line(f"clusters delete {tag} --forget"))
    if code == "ClusterDeleted":
        return ("It is deleted; remove its record: "
                + ctx.command_line(f"clusters delete {tag} --forget"))
    if code == "ClusterDeleting" and operation:
        return (f"Follow the teardown: {ctx.command_line(f'ops watch {operation}')}; if it "
                f"FAILED, resume it: {ctx.command_line(f'ops retry {operation} --wait')}")
    if code == "OperationRunning" and operation:
        return (f"Follow it to its end, then delete: {ctx.command_line(f'ops watch {operation}')}"
                f" (or stop it: {ctx.command_line(f'ops cancel {operation}')})")
    return None


def refused(ctx: Context, exc: ApiError) -> int:
    """The API's refusal of a teardown, its plan or a protection change, with the command that
    clears each reason it gave (every blocker of a refused DELETE); any other error goes to the
    usual reporting."""
    reasons = exc.details.get("blockers") or [
        {"code": exc.code, "message": exc.message, "details": exc.details}]
    hints = [hint for reason in reasons if (hint := blocker_hint(ctx, ctx.args.tag, reason))]
    if exc.status != 409 or not hints:
        raise exc
    return refused_with_hint(ctx, exc, "\n".join(hints))


def delete_cluster(ctx: Context) -> int:
    args = ctx.args
    if args.plan:
        if args.forget:
            raise UsageError("--forget deletes nothing (it removes hypd's record only): it "
                             "has no plan")
        return show_plan(ctx)
    try:
        return _delete(ctx)
    except ApiError as exc:
        return refused(ctx, exc)


def _delete(ctx: Context) -> int:
    args = ctx.args
    if args.forget:
        answer = ctx.client.delete_cluster(args.tag, forget=True)
        if ctx.structured:
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
    try:
        answer = ctx.client.set_protection(ctx.args.tag, bool(ctx.args.on))
    except ApiError as exc:
        return refused(ctx, exc)
    if ctx.structured:
        print_json(ctx, answer)
    else:
        state = "on" if answer.get("enabled") else "off"
        ctx.say(f"Deletion protection of cluster {ctx.args.tag} is {state}.")
    return EXIT_OK
