"""The command line's `policy rules add|remove|move`: edit the ordered rules of one tool's policy.

Each change is checked (the condition against the tool's input schema) and stored whole through
`bot.admin`, audited as `policy_changed` with the policy before and after.
"""

from __future__ import annotations

import argparse
from typing import Any, TextIO

from memory import SYSTEM, PolicyError, RuleEffect, Storage, ToolRule, rule_of

from . import admin


def add_rules_commands(policy_commands: Any) -> list[argparse.ArgumentParser]:
    """`policy rules add|remove|move`: the parsers that name a tool (they take `--agent`, `--mcp`)."""
    rules = policy_commands.add_parser("rules", help="add, remove or move a rule of a tool's policy")
    commands = rules.add_subparsers(dest="rules_command", required=True, metavar="{add,remove,move}")
    add = commands.add_parser("add", help="add a rule (at the end, or --at a position)")
    add.add_argument("tool", metavar="TOOL")
    add.add_argument("--if", dest="condition", required=True, metavar="CEL", help="e.g. 'args.amount > 100.0'")
    add.add_argument("--then", dest="effect", required=True, choices=[e.value for e in RuleEffect])
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
    return [add, remove, move]


async def run_rules_command(
    options: argparse.Namespace, storage: Storage, agent: Any, out: TextIO | None = None
) -> None:
    """Carry out `policy rules ...` and print the tool's rules as they are now."""

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
