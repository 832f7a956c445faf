"""The command line's `delegate list|add|end`: who decides for whom while someone is away, as the App Home
and the HTTP API offer it (`bot.delegations`). The operator acts as an admin (`system`, via `cli`); bad
input is one line on stderr and exit status 2, and changes nothing."""

from __future__ import annotations

import argparse
import sys
from typing import Any, TextIO


def add_delegation_command(commands: Any) -> argparse.ArgumentParser:
    delegate = commands.add_parser("delegate", help="hand someone's approvals to someone else for a time")
    actions = delegate.add_subparsers(dest="delegate_command", required=True, metavar="{list,add,end}")
    actions.add_parser("list", help="every delegation in force, soonest to end first")
    add = actions.add_parser("add", help="DELEGATOR's approvals go to DELEGATE until --until")
    add.add_argument("delegator", metavar="DELEGATOR", help="who is away (a Slack user ID)")
    add.add_argument("delegate", metavar="DELEGATE", help="who decides for them meanwhile")
    add.add_argument("--until", required=True, help="2026-12-11 (its end, UTC), 2026-12-11T17:00+09:00, 3d, 8h")
    end = actions.add_parser("end", help="end a delegation now")
    end.add_argument("id", metavar="ID", help="as `delegate list` prints it")
    return delegate


async def run_delegation_command(options: argparse.Namespace, storage: Any, out: TextIO | None = None) -> None:
    from memory import SYSTEM, DelegationError

    from .admin import AdminInputError
    from .delegations import end_delegation, make_delegation, read_until

    out = out or sys.stdout
    try:
        if options.delegate_command == "add":
            until = read_until(options.until, storage.clock.now())
            made = await make_delegation(
                storage, delegator=options.delegator, delegate=options.delegate, until=until, by=SYSTEM, via="cli",
                admin=True,
            )  # fmt: skip
            print(f"{made.id}  {made.describe()}", file=out)
        elif options.delegate_command == "end":
            ended = await end_delegation(storage, options.id, by=SYSTEM, via="cli", admin=True)
            print(f"{ended.id}  ended: {ended.describe()}", file=out)
        else:
            found = await storage.delegations.in_force()
            for delegation in found:
                print(f"{delegation.id}  {delegation.describe()}", file=out)
            if not found:
                print("No delegation in force.", file=out)
    except DelegationError as exc:
        raise AdminInputError(str(exc)) from None
