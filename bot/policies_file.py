"""Policies as code: a YAML file of tool policies, exported from the database, planned and applied.

`python -m bot policy export` writes every tool's policy; `python -m bot policy apply FILE [--plan]`
checks the whole file first (each problem one line: file, line, what) and writes nothing if any part
is wrong; then it applies every change in one transaction, one `policy_changed` audit line per tool it
changes (`via` `file`, the detail naming the file). `BOT_POLICIES_FILE` applies a file at every start.

A tool in the file gets exactly the policy the file says: a field left out has its default. A tool not
in the file keeps its policy.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import yaml

from bot.agent import ConditionError, check_condition
from memory import UNDO_DEFAULT, PolicyChange, PolicyError, PolicyMode, Storage, ToolPolicy, ToolRule, rule_of, rules_of

from .admin import agent_tools, rule_words

FIELDS = (
    "mode",
    "approvers",
    "self_approval",
    "expires_after",
    "approvals_required",
    "grant_seconds",
    "escalate_to",
    "escalate_after",
    "undo_seconds",
    "rules",
)
"""What a tool's entry in the file may say, in the order the export writes it."""

FILE_LIMIT = 1_000_000
"""The largest policies file read, in bytes."""


class PoliciesFileError(ValueError):
    """A policies file that cannot be applied: one line per problem (`file:line: what`)."""

    def __init__(self, problems: Sequence[str]):
        super().__init__("\n".join(problems))
        self.problems = list(problems)


@dataclass(frozen=True, kw_only=True)
class PlannedChange:
    """What applying the file changes about one tool: its new policy and the changes in words."""

    tool_name: str
    change: PolicyChange
    lines: tuple[str, ...]


# --- export ---------------------------------------------------------------------------------
async def export_text(storage: Storage, agent: Any) -> str:
    """Every tool of the agent, and every tool with a stored policy, with its policy, as YAML."""
    stored = {p.tool_name: p for p in await storage.policies.all()}
    names = sorted(set(agent_tools(agent)) | set(stored))
    policies = {name: _entry(stored.get(name) or ToolPolicy(tool_name=name)) for name in names}
    header = "# Tool policies: `python -m bot policy apply FILE --plan` shows what applying this file changes.\n"
    return header + yaml.safe_dump({"policies": policies}, allow_unicode=True, sort_keys=False, width=120)


def _entry(policy: ToolPolicy) -> dict[str, Any]:
    fields = policy.fields()
    return {name: fields[name] for name in FIELDS}


# --- reading and checking -------------------------------------------------------------------
async def plan_file(storage: Storage, agent: Any, path: str | Path) -> list[PlannedChange]:
    """What applying the file at `path` would change, tool by tool (only the tools it changes); raises
    `PoliciesFileError` with every problem of the file, and then nothing may be applied."""
    name = str(path)
    try:
        raw = Path(path).read_bytes()
    except OSError as exc:
        raise PoliciesFileError([f"{name}: cannot read it ({exc.strerror or exc})"]) from None
    if len(raw) > FILE_LIMIT:
        raise PoliciesFileError([f"{name}: larger than {FILE_LIMIT} bytes"])
    try:
        text = raw.decode("utf-8")
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except UnicodeDecodeError:
        raise PoliciesFileError([f"{name}: not UTF-8 text"]) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else 1
        problem = getattr(exc, "problem", None) or "not YAML"
        raise PoliciesFileError([f"{name}:{line}: not valid YAML: {problem}"]) from None
    tools = agent_tools(agent)
    stored = {p.tool_name: p for p in await storage.policies.all()}
    reader = _Reader(name, tools, stored)
    planned = reader.read(root)
    if reader.problems:
        raise PoliciesFileError(reader.problems)
    return planned


class _Reader:
    """Walks the YAML node tree, so that each problem names the line it is on."""

    def __init__(self, name: str, tools: Mapping[str, Any], stored: Mapping[str, ToolPolicy]):
        self.name = name
        self.tools = tools
        self.stored = stored
        self.problems: list[str] = []

    def problem(self, node: Any, what: str) -> None:
        line = node.start_mark.line + 1 if node is not None else 1
        self.problems.append(f"{self.name}:{line}: {what}")

    def read(self, root: Any) -> list[PlannedChange]:
        if root is None:
            self.problem(None, "the file is empty: it needs `policies:` with one entry per tool")
            return []
        if not isinstance(root, yaml.MappingNode):
            self.problem(root, "the file must be a mapping with `policies:`")
            return []
        policies = None
        for key, value in root.value:
            if _scalar(key) == "policies":
                policies = value
            else:
                self.problem(key, f"unknown key {_scalar(key)!r}: the file has `policies:` only")
        if policies is None:
            self.problem(root, "no `policies:` in the file")
            return []
        if not isinstance(policies, yaml.MappingNode):
            self.problem(policies, "`policies:` must map each tool's name to its policy")
            return []
        planned: list[PlannedChange] = []
        seen: set[str] = set()
        for key, value in policies.value:
            tool_name = _scalar(key)
            if not isinstance(tool_name, str) or not tool_name.strip():
                self.problem(key, "a tool's name must be text")
                continue
            if tool_name in seen:
                self.problem(key, f"{tool_name} is in the file twice")
                continue
            seen.add(tool_name)
            if tool_name not in self.tools and tool_name not in self.stored:
                known = ", ".join(sorted(self.tools)) or "none"
                self.problem(key, f"unknown tool {tool_name[:100]!r}; the agent's tools are: {known}")
                continue
            change = self.read_tool(tool_name, key, value)
            if change is not None:
                planned.append(change)
        return planned

    def read_tool(self, tool_name: str, key: Any, node: Any) -> PlannedChange | None:
        if not isinstance(node, yaml.MappingNode):
            self.problem(node, f"{tool_name}: its policy must be a mapping of fields ({', '.join(FIELDS)})")
            return None
        before = len(self.problems)
        wanted: dict[str, Any] = {}
        for field_key, value in node.value:
            field = _scalar(field_key)
            if field not in FIELDS:
                self.problem(field_key, f"{tool_name}: unknown field {field!r} (a policy has: {', '.join(FIELDS)})")
                continue
            if field == "rules":
                wanted["rules"] = self.read_rules(tool_name, value)
                continue
            data = _python(value)
            try:
                PolicyChange(**_change_values({field: data})).checked()
            except (PolicyError, TypeError, ValueError) as exc:
                self.problem(value, f"{tool_name}: {field}: {exc}")
                continue
            wanted[field] = data
        if len(self.problems) > before:
            return None
        change = PolicyChange(**_change_values({**_entry(ToolPolicy(tool_name=tool_name)), **wanted}))
        current = self.stored.get(tool_name) or ToolPolicy(tool_name=tool_name)
        values = change.checked()
        after = _policy_with(current, values)
        if after.escalate_after and after.expires_after and after.escalate_after >= after.expires_after:
            self.problem(key, f"{tool_name}: the escalation delay must be shorter than the expiry")
            return None
        lines = tuple(_differences(current, after))
        return PlannedChange(tool_name=tool_name, change=change, lines=lines) if lines else None

    def read_rules(self, tool_name: str, node: Any) -> list[ToolRule]:
        if isinstance(node, yaml.ScalarNode) and _python(node) is None:
            return []
        if not isinstance(node, yaml.SequenceNode):
            self.problem(node, f"{tool_name}: rules must be a list")
            return []
        tool = self.tools.get(tool_name)
        schema = tool.parameters() if tool is not None and hasattr(tool, "parameters") else None
        rules = []
        for position, item in enumerate(node.value, 1):
            try:
                rule = rule_of(_python(item), position)
                check_condition(rule.condition, schema)
            except ConditionError as exc:
                self.problem(item, f"{tool_name}: rule {position}: {exc}")
                continue
            except PolicyError as exc:
                self.problem(item, f"{tool_name}: {exc}")
                continue
            rules.append(rule)
        return rules


def _scalar(node: Any) -> Any:
    return _python(node) if isinstance(node, yaml.ScalarNode) else None


def _python(node: Any) -> Any:
    """The plain value of a YAML node (safe: no tags beyond YAML's own)."""
    return yaml.SafeLoader("").construct_object(node, deep=True)


def _change_values(fields: Mapping[str, Any]) -> dict[str, Any]:
    """A file's fields as `PolicyChange` arguments: a null or missing expiry, grant or escalation is "none"."""
    values = dict(fields)
    for name in ("expires_after", "grant_seconds", "escalate_after"):
        if name in values and values[name] is None:
            values[name] = 0
    if "undo_seconds" in values and values["undo_seconds"] is None:
        values["undo_seconds"] = UNDO_DEFAULT
    if "escalate_to" in values and values["escalate_to"] is None:
        values["escalate_to"] = ""
    if "approvers" in values:
        approvers = values["approvers"]
        if approvers is None:
            values["approvers"] = []
        elif not isinstance(approvers, list) or not all(isinstance(a, str) for a in approvers):
            raise PolicyError("approvers are a list of Slack user or user-group IDs")
    if "self_approval" in values and not isinstance(values["self_approval"], bool):
        raise PolicyError("self_approval is true or false")
    return values


def _policy_with(current: ToolPolicy, values: Mapping[str, Any]) -> ToolPolicy:
    """`current` as the checked columns `values` would leave it (what the plan compares)."""
    return replace(
        current,
        mode=PolicyMode(values["mode"]),
        approvers=tuple(values["approvers"]),
        self_approval=values["self_approval"],
        expires_after=values["expires_after"],
        approvals_required=values["approvals_required"],
        grant_seconds=values["grant_seconds"],
        escalate_to=values["escalate_to"],
        escalate_after=values["escalate_after"],
        undo_seconds=values["undo_seconds"],
        rules=rules_of(values["rules"]),
    )


def _differences(before: ToolPolicy, after: ToolPolicy) -> list[str]:
    """What changes from `before` to `after`, one line each: fields, then rules added, changed, removed."""
    lines = []
    old, new = before.fields(), after.fields()
    for name in FIELDS[:-1]:
        if old[name] != new[name]:
            lines.append(f"{name}: {_shown(old[name])} -> {_shown(new[name])}")
    for position in range(1, max(len(before.rules), len(after.rules)) + 1):
        was = before.rules[position - 1] if position <= len(before.rules) else None
        now = after.rules[position - 1] if position <= len(after.rules) else None
        if was == now:
            continue
        if was is None and now is not None:
            lines.append(f"rule {position} added: {rule_words(now)}")
        elif now is None and was is not None:
            lines.append(f"rule {position} removed: {rule_words(was)}")
        elif was is not None and now is not None:
            lines.append(f"rule {position} changed: {rule_words(was)} -> {rule_words(now)}")
    return lines


def _shown(value: Any) -> str:
    if value is None or value == []:
        return "none"
    if isinstance(value, list):
        return ",".join(str(v) for v in value)
    return str(value).lower() if isinstance(value, bool) else str(value)


def plan_lines(planned: Sequence[PlannedChange]) -> list[str]:
    """The plan in words: `TOOL: what` per change, or that nothing would change."""
    if not planned:
        return ["No changes: the database already holds what the file says."]
    return [f"{change.tool_name}: {line}" for change in planned for line in change.lines]


# --- applying -------------------------------------------------------------------------------
async def apply_file(
    storage: Storage, agent: Any, path: str | Path, *, actor: str, detail: str | None = None
) -> list[PlannedChange]:
    """Check the whole file, then apply its changes in one transaction (one `policy_changed` line per tool,
    `via` `file`); raises `PoliciesFileError` (and writes nothing) when any part of it is wrong."""
    planned = await plan_file(storage, agent, path)
    if planned:
        try:
            await storage.policies.set_many(
                {change.tool_name: change.change for change in planned},
                actor=actor,
                via="file",
                detail=detail or f"policies file {Path(path).name}",
            )
        except PolicyError as exc:
            raise PoliciesFileError([f"{path}: {exc}"]) from None
    return planned
