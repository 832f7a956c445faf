"""The admin commands: `policy list`, `policy set` and `audit`, on the database in DATABASE_URL.

They read and change the same policies the App Home and the HTTP API use; bad input is one line on
stderr and exit status 2, and changes nothing.
"""

from __future__ import annotations

import ast
import csv
import dataclasses
import getpass
import io
import json
import re
import socket
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict
from datetime import UTC, datetime
from typing import Any, TextIO

from bot.agent import ConditionError, check_condition, rule_line
from memory import SYSTEM, AuditEntry, PolicyChange, PolicyError, Storage, ToolPolicy, ToolRule, Worded, rules_of

AUDIT_FIELDS = (
    "at",
    "run_id",
    "tool_call_id",
    "tool_name",
    "action",
    "actor",
    "on_behalf_of",
    "via",
    "args_fingerprint",
    "policy_version",
    "detail",
    "before",
    "after",
)


class AdminInputError(Worded, ValueError):
    """Bad input to an admin command; the message is the one line the user sees."""


def agent_tools(agent: Any) -> dict[str, Any]:
    """Every tool of `agent` and of its sub-agents (at any depth), by name."""
    found: dict[str, Any] = {}
    agents, seen = [agent], set()
    while agents:
        current = agents.pop(0)
        if id(current) in seen:
            continue
        seen.add(id(current))
        for name, tool in (getattr(current, "tools", None) or {}).items():
            found.setdefault(name, tool)
        agents.extend((getattr(current, "agents", None) or {}).values())
    return found


def code_rule(tool: Any) -> str:
    """What the code says about approving the tool's calls: `always`, `sometimes` (a callable), `never`."""
    if tool is None:
        return "unknown"
    rule = getattr(tool, "require_approval", False)
    if callable(rule):
        return "sometimes"
    return "always" if rule else "never"


def describe(policy: ToolPolicy) -> dict[str, str]:
    """A policy in words, column by column."""
    return {
        "mode": str(policy.mode),
        "approvers": ",".join(policy.approvers) or "anyone",
        "self_approval": "allowed" if policy.self_approval else "refused",
        "expires": f"{policy.expires_after}s" if policy.expires_after else "never",
        "approvals": str(policy.approvals_required),
        "grants": f"{policy.grant_seconds}s" if policy.grant_seconds else "none",
        "escalation": f"{policy.escalate_to}@{policy.escalate_after}s" if policy.escalates else "none",
        "version": str(policy.version),
    }


async def list_policies(storage: Storage, agent: Any, out: TextIO | None = None) -> None:
    """Print every tool of the agent, and every tool with a stored policy, with its policy (to `out`, else
    to `sys.stdout` as it is when called)."""
    out = out or sys.stdout
    tools = agent_tools(agent)
    stored = {p.tool_name: p for p in await storage.policies.all()}
    names = sorted(set(tools) | set(stored))
    header = (
        "TOOL",
        "CODE",
        "MODE",
        "APPROVERS",
        "SELF-APPROVAL",
        "EXPIRES",
        "VERSION",
        "APPROVALS",
        "GRANTS",
        "ESCALATION",
        "FROM",
    )
    lines = [header]
    for name in names:
        words = describe(stored.get(name) or ToolPolicy(tool_name=name))
        lines.append(
            (
                name,
                code_rule(tools.get(name)),
                words["mode"],
                words["approvers"],
                words["self_approval"],
                words["expires"],
                words["version"],
                words["approvals"],
                words["grants"],
                words["escalation"],
                tool_origin(tools.get(name)),
            )
        )
    _print_table(lines, out)
    for name in names:
        if name in stored and stored[name].rules:
            print_rules(stored[name], out)
            if any(rule.trial for rule in stored[name].rules):
                print(f"  {await trial_counts(storage, stored[name])}", file=out)


def print_rules(policy: ToolPolicy, out: TextIO | None = None) -> None:
    """The rules of a policy, one a line, numbered (what `policy rules` and `policy list` print)."""
    if not policy.rules:
        print(f"{policy.tool_name}: no rules (version {policy.version})", file=out)
        return
    print(f"{policy.tool_name}: {len(policy.rules)} rule(s), first match wins (version {policy.version})", file=out)
    for position, rule in enumerate(policy.rules, 1):
        print(f"  {position}. {rule_words(rule)}", file=out)


TRIAL_ACTIONS = ("would_require", "would_allow", "would_refuse")


async def trial_counts(storage: Storage, policy: ToolPolicy) -> str:
    """What the policy's trial rules would have changed since it was last changed, in words."""
    counts = await storage.audit_log.counts(policy.tool_name, TRIAL_ACTIONS, since=policy.updated_at)
    said = ", ".join(f"{action} {counts.get(action, 0)}" for action in TRIAL_ACTIONS)
    return f"trial since version {policy.version}: {said}"


async def trial_counts_per_rule(storage: Storage, policy: ToolPolicy) -> dict[int, dict[str, int]]:
    """Per trial rule (by position), how many calls it would have changed since the policy was last
    changed, per audit action (`would_require`, ...): the audit lines whose detail names that rule."""
    counts = await storage.audit_log.counts_by_detail(policy.tool_name, TRIAL_ACTIONS, since=policy.updated_at)
    found: dict[int, dict[str, int]] = {}
    for position, rule in enumerate(policy.rules, 1):
        if rule.trial:
            detail = f"trial {rule_line({**rule.fields(), 'position': position})}"
            found[position] = {action: counts.get((action, detail), 0) for action in TRIAL_ACTIONS}
    return found


_RULE_WORDS = re.compile(
    r"^if (?P<condition>.+) then (?P<effect>allow|require_approval|refuse)"
    r"(?: by (?P<approvers>[A-Za-z0-9,]+))?(?: \(named (?P<name>'.*'|\".*\")\))?(?P<trial> \[trial\])?$"
)


def rules_from_words(text: str) -> list[dict[str, Any]]:
    """Rules written one a line as `rule_words` writes them (`if CONDITION then EFFECT [by U1,S2] [(named
    'NAME')] [[trial]]`), in order; raises `PolicyError` (one line: which line, what is wrong)."""
    rules = []
    for number, line in enumerate((line.strip() for line in text.splitlines() if line.strip()), 1):
        found = _RULE_WORDS.match(line)
        if found is None:
            raise PolicyError(
                "line {number}: write `if CONDITION then allow|require_approval|refuse`, optionally followed by "
                "`by U1,S2`, `(named 'NAME')` and `[trial]`",
                number=number,
            )
        try:
            name = ast.literal_eval(found["name"]) if found["name"] else ""
        except (ValueError, SyntaxError):
            raise PolicyError(
                "line {number}: the name is text in quotes, e.g. (named 'finance')", number=number
            ) from None
        rules.append(
            {
                "condition": found["condition"].strip(),
                "effect": found["effect"],
                "name": name,
                "approvers": (found["approvers"] or "").split(","),
                "trial": bool(found["trial"]),
            }
        )
    return rules


def rule_words(rule: ToolRule) -> str:
    """One rule in words: `if CONDITION then EFFECT [by APPROVERS] [named NAME] [trial]`."""
    words = f"if {rule.condition} then {rule.effect}"
    if rule.approvers:
        words += f" by {','.join(rule.approvers)}"
    if rule.name:
        words += f" (named {rule.name!r})"
    if rule.trial:
        words += " [trial]"
    return words


def tool_origin(tool: Any) -> str:
    """Where a tool comes from and what it says of itself, e.g. `MCP server tickets (read-only, closed world)`;
    "" for the deployer's own tools."""
    source = getattr(tool, "source", None)
    if not source:
        return ""
    hints = getattr(tool, "hints", ())
    return source.replace("`", "") + (f" ({', '.join(hints)})" if hints else "")


async def change_policy(
    storage: Storage,
    agent: Any,
    tool_name: str,
    change: PolicyChange,
    *,
    actor: str,
    via: str,
    detail: str | None = None,
) -> ToolPolicy:
    """Patch the policy of one of the agent's tools (or of a tool that already has a policy): the one
    rule of the command line and the App Home. Audited as `policy_changed` (who, through what, the
    whole policy before and after). Raises `AdminInputError` (one line) and then changes nothing."""
    tool_name = tool_name.strip()
    tools = agent_tools(agent)
    if tool_name not in tools and (await storage.policies.get(tool_name)).version == 0:
        known = ", ".join(sorted(tools)) or "none"
        raise AdminInputError(
            "unknown tool {tool!r}; the agent's tools are: {known}", tool=tool_name[:100], known=known
        )
    try:
        if change.rules is not None:
            change = dataclasses.replace(change, rules=checked_rules(tools.get(tool_name), change.rules))
        return await storage.policies.set(tool_name, change, actor=actor, via=via, detail=detail)
    except PolicyError as exc:
        raise AdminInputError(exc.template, **exc.values) from None


def checked_rules(tool: Any, rules: Iterable[ToolRule | dict[str, Any]]) -> tuple[ToolRule, ...]:
    """`rules` with each condition checked against the tool's input schema (a syntax error, an unknown
    field, a wrong type); raises `PolicyError` with one line that names the rule and what is wrong."""
    checked = rules_of(rules)
    schema = tool.parameters() if tool is not None and hasattr(tool, "parameters") else None
    for position, rule in enumerate(checked, 1):
        try:
            check_condition(rule.condition, schema)
        except ConditionError as exc:
            raise PolicyError(
                "rule {position} ({condition}): {problem}",
                position=position,
                condition=rule.condition[:60],
                problem=exc,
            ) from None
    return checked


async def edit_rules(
    storage: Storage,
    agent: Any,
    tool_name: str,
    edit: Callable[[list[ToolRule]], list[ToolRule]],
    *,
    actor: str,
    via: str,
    detail: str | None = None,
) -> ToolPolicy:
    """Change the ordered rules of a tool's policy with `edit` (add, remove, move one) and store them whole."""
    current = list((await storage.policies.get(tool_name.strip())).rules)
    try:
        rules = edit(current)
    except (IndexError, ValueError) as exc:
        raise AdminInputError(str(exc)) from None
    return await change_policy(
        storage, agent, tool_name, PolicyChange(rules=rules), actor=actor, via=via, detail=detail
    )


def rule_at(rules: Sequence[ToolRule], position: int) -> int:
    """The index of the rule at 1-based `position`; raises `IndexError` (one line) when there is none."""
    if not 1 <= position <= len(rules):
        raise IndexError(f"there is no rule {position}: the policy has {len(rules)} rule(s)")
    return position - 1


def cli_operator() -> str:
    """Who ran `policy set`, as far as the machine tells: the login and the host (the audit line's
    detail; its actor is `system`, as nobody signed in to Slack)."""
    try:
        login = getpass.getuser()
    except (KeyError, OSError):
        login = "unknown user"
    return f"command line: {login}@{socket.gethostname()}"


async def set_policy(
    storage: Storage,
    agent: Any,
    tool_name: str,
    change: PolicyChange,
    *,
    out: TextIO | None = None,
) -> ToolPolicy:
    """`policy set`: patch the policy of one of the agent's tools and print it."""
    policy = await change_policy(storage, agent, tool_name, change, actor=SYSTEM, via="cli", detail=cli_operator())
    words = describe(policy)
    print(
        f"{policy.tool_name}: mode {words['mode']}, approvers {words['approvers']}, "
        f"self-approval {words['self_approval']}, expires {words['expires']}, "
        f"approvals required {words['approvals']}, grants {words['grants']}, "
        f"escalation {words['escalation']} (version {policy.version})",
        file=out,
    )
    return policy


def parse_since(value: str | None) -> datetime | None:
    """An ISO-8601 date or time; one without a zone is UTC."""
    if value is None:
        return None
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        raise AdminInputError(f"--since {value!r}: not an ISO-8601 date or time (e.g. 2026-11-30T09:00:00Z)") from None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


async def print_audit(
    storage: Storage,
    *,
    since: datetime | None = None,
    tool_name: str | None = None,
    format: str = "table",
    out: TextIO | None = None,
) -> int:
    """Print the audit trail oldest first (to `out`, else to `sys.stdout` as it is when called); returns
    how many entries were printed."""
    out = out or sys.stdout
    entries = await storage.audit_log.entries(since=since, tool_name=tool_name)
    rows = [_audit_record(entry) for entry in entries]
    if format == "jsonl":
        for row in rows:
            print(json.dumps(row, ensure_ascii=False), file=out)
    elif format == "csv":
        buffer = io.StringIO()
        writer = csv.DictWriter(buffer, fieldnames=AUDIT_FIELDS, lineterminator="\n")
        writer.writeheader()
        for row in rows:
            writer.writerow({**row, "before": _json_cell(row["before"]), "after": _json_cell(row["after"])})
        out.write(buffer.getvalue())
    elif format == "table":
        shown = ("at", "action", "tool_name", "actor", "via", "policy_version", "run_id", "tool_call_id", "detail")
        lines = [(*(f.upper().replace("_", " ") for f in shown), "CHANGE")]
        for row in rows:
            named = {
                **row,
                "actor": f"{row['actor']} for {row['on_behalf_of']}" if row["on_behalf_of"] else row["actor"],
            }
            cells = ["" if named[f] is None else " ".join(str(named[f]).split()) for f in shown]
            lines.append((*cells, change_words(row["before"], row["after"])))
        _print_table(lines, out)
    else:
        raise AdminInputError(f"--format {format!r}: use table, jsonl or csv")
    return len(rows)


def change_words(before: Any, after: Any) -> str:
    """What a change changed, in one line: `mode inherit -> disabled; approvers [] -> ['U1']` for two
    objects (a policy, arguments), else `before -> after`; empty when nothing was recorded."""
    if before is None and after is None:
        return ""
    if isinstance(before, dict) and isinstance(after, dict):
        keys = [k for k in dict.fromkeys([*before, *after]) if k != "version" and before.get(k) != after.get(k)]
        return "; ".join(f"{k} {_short(before.get(k))} -> {_short(after.get(k))}" for k in keys) or "no change"
    return f"{_short(before)} -> {_short(after)}"


def _short(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= 60 else text[:59] + "…"


def _json_cell(value: Any) -> str:
    return "" if value is None else json.dumps(value, ensure_ascii=False, default=str)


def _audit_record(entry: AuditEntry) -> dict[str, Any]:
    record = asdict(entry)
    record["at"] = entry.at.astimezone(UTC).isoformat().replace("+00:00", "Z")
    return {field: record[field] for field in AUDIT_FIELDS}


def _print_table(lines: Sequence[tuple[str, ...]], out: TextIO) -> None:
    widths = [max(len(line[i]) for line in lines) for i in range(len(lines[0]))]
    for line in lines:
        print("  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)).rstrip(), file=out)


__all__ = [
    "AdminInputError",
    "agent_tools",
    "code_rule",
    "describe",
    "change_policy",
    "list_policies",
    "parse_since",
    "print_audit",
    "set_policy",
]
