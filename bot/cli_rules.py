"""The command line's `policy rules add|remove|move` (the ordered rules of one tool's policy) and
`policy export` / `policy apply FILE [--plan]` (policies as code, `bot.policies_file`).

Each change is checked (a condition against the tool's input schema) and stored through `bot.admin` or
`bot.policies_file`, audited as `policy_changed` with the policy before and after.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    from memory import ToolRule

EFFECTS = ("allow", "require_approval", "refuse")
"""`memory.RuleEffect`'s values (named here: the parser is built without importing the runtime)."""


def add_rules_commands(policy_commands: Any) -> list[argparse.ArgumentParser]:
    """`policy rules add|remove|move`: the parsers that name a tool (they take `--agent`, `--mcp`)."""
    rules = policy_commands.add_parser("rules", help="add, remove or move a rule of a tool's policy")
    commands = rules.add_subparsers(dest="rules_command", required=True, metavar="{add,remove,move}")
    add = commands.add_parser("add", help="add a rule (at the end, or --at a position)")
    add.add_argument("tool", metavar="TOOL")
    add.add_argument("--if", dest="condition", required=True, metavar="CEL", help="e.g. 'args.amount > 100.0'")
    add.add_argument("--then", dest="effect", required=True, choices=EFFECTS)
    add.add_argument("--name", default="", help='what people call it ("finance"): "Needs finance: ..."')
    add.add_argument("--approvers", default="", metavar="U1,S2", help="who decides what it matches (require_approval)")
    add.add_argument("--trial", action="store_true", help="audit what it would do, change nothing")
    add.add_argument("--at", type=int, metavar="N", help="its position, 1 first (default: last)")
    remove = commands.add_parser("remove", help="remove the rule at a position")
    remove.add_argument("tool", metavar="TOOL")
    remove.add_argument("position", type=int, metavar="N")
    move = commands.add_parser("move", help="move the rule at a position to another")
    move.add_argument("tool", metavar="TOOL")
    move.add_argument("position", type=int, metavar="N")
    move.add_argument("to", type=int, metavar="TO")
    export = policy_commands.add_parser("export", help="print every tool's policy as YAML (policies as code)")
    apply = policy_commands.add_parser(
        "apply", help="apply a policies file: all of it, or nothing if any part is wrong"
    )
    apply.add_argument("file", metavar="FILE", help="a YAML file as `policy export` writes it")
    apply.add_argument("--plan", action="store_true", help="print what would change, change nothing")
    return [add, remove, move, export, apply]


async def run_file_command(options: argparse.Namespace, storage: Any, agent: Any, out: TextIO | None = None) -> None:
    """`policy export` or `policy apply FILE [--plan]`; a bad file raises `AdminInputError` with one line per
    problem (and nothing is written)."""
    from memory import SYSTEM

    from . import admin
    from .policies_file import PoliciesFileError, apply_file, export_text, plan_file, plan_lines

    out = out or sys.stdout
    if options.policy_command == "export":
        out.write(await export_text(storage, agent))
        return
    try:
        if options.plan:
            planned = await plan_file(storage, agent, options.file)
        else:
            planned = await apply_file(
                storage,
                agent,
                options.file,
                actor=SYSTEM,
                detail=f"policies file {options.file}; {admin.cli_operator()}",
            )
    except PoliciesFileError as exc:
        raise admin.AdminInputError(str(exc)) from None
    for line in plan_lines(planned):
        print(line, file=out)
    if planned and not options.plan:
        print(f"Applied {len(planned)} tool polic{'y' if len(planned) == 1 else 'ies'} from {options.file}.", file=out)


async def run_rules_command(options: argparse.Namespace, storage: Any, agent: Any, out: TextIO | None = None) -> None:
    """Carry out `policy rules ...` and print the tool's rules as they are now."""
    from memory import SYSTEM, PolicyError, rule_of

    from . import admin

    def edit(rules: list[ToolRule]) -> list[ToolRule]:
        if options.rules_command == "add":
            try:
                rule = rule_of(
                    {
                        "condition": options.condition,
                        "effect": options.effect,
                        "name": options.name,
                        "approvers": options.approvers,
                        "trial": options.trial,
                    },
                    len(rules) + 1 if options.at is None else options.at,
                )
            except PolicyError as exc:
                raise ValueError(str(exc)) from None
            at = len(rules) + 1 if options.at is None else options.at
            if not 1 <= at <= len(rules) + 1:
                raise IndexError(f"--at {at}: a position from 1 to {len(rules) + 1}")
            rules.insert(at - 1, rule)
        elif options.rules_command == "remove":
            rules.pop(admin.rule_at(rules, options.position))
        else:
            rule = rules.pop(admin.rule_at(rules, options.position))
            if not 1 <= options.to <= len(rules) + 1:
                raise IndexError(f"there is no position {options.to}: the policy has {len(rules) + 1} rule(s)")
            rules.insert(options.to - 1, rule)
        return rules

    policy = await admin.edit_rules(
        storage, agent, options.tool, edit, actor=SYSTEM, via="cli", detail=admin.cli_operator()
    )
    admin.print_rules(policy, out)
