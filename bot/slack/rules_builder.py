"""An admin's rules as the App Home lists them under a tool's policy: one line a rule, in order, and next to
each trial rule how many calls it would have changed (`bot.admin.trial_counts_per_rule`). Pure: a policy,
the counts and the reader's `Translator` in, mrkdwn lines out."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from memory import RuleEffect, ToolPolicy, ToolRule

from .mrkdwn import escape
from .translator import Translator

RULES_SHOWN = 8
"""Rules listed per tool (the policy form shows them all)."""


def rules_lines(policy: ToolPolicy, trials: Mapping[int, Mapping[str, int]], tr: Translator) -> list[str]:
    """The policy's rules, numbered, first match first; a trial rule with what it would have changed since
    the policy's last change (`trials`: per position, per `would_*` action, a count)."""
    lines = []
    for position, rule in enumerate(policy.rules[:RULES_SHOWN], 1):
        line = f"{position}. {escape(rule_said(rule, tr)[:150])}"
        if rule.trial:
            counts = trials.get(position, {})
            total = sum(counts.values())
            line += " · " + tr.ngettext(
                "_trial_: would have changed {n} call since v{version}",
                "_trial_: would have changed {n} calls since v{version}",
                total,
                version=policy.version,
            )
            said = []
            if counts.get("would_require"):
                said.append(tr.gettext("{count} would have waited for approval", count=counts["would_require"]))
            if counts.get("would_allow"):
                said.append(tr.gettext("{count} would have run at once", count=counts["would_allow"]))
            if counts.get("would_refuse"):
                said.append(tr.gettext("{count} would have been refused", count=counts["would_refuse"]))
            if said:
                line += f" ({', '.join(said)})"
        lines.append(line)
    if len(policy.rules) > RULES_SHOWN:
        lines.append(tr.ngettext("…and {n} more rule.", "…and {n} more rules.", len(policy.rules) - RULES_SHOWN))
    return lines


def rule_said(rule: ToolRule, tr: Translator) -> str:
    """A rule in one line in the reader's words ("Needs finance: args.amount > 100.0"): its name is the
    admin's and its condition is code, both shown as written."""
    name, condition = rule.name, rule.condition
    if rule.effect == RuleEffect.ALLOW:
        if name:
            return tr.gettext("Allowed by {name}: {condition}", name=name, condition=condition)
        return tr.gettext("Allowed by no approval: {condition}", condition=condition)
    if rule.effect == RuleEffect.REFUSE:
        if name:
            return tr.gettext("Refused by {name}: {condition}", name=name, condition=condition)
        return tr.gettext("Refused by refusal: {condition}", condition=condition)
    if name:
        return tr.gettext("Needs {name}: {condition}", name=name, condition=condition)
    return tr.gettext("Needs approval: {condition}", condition=condition)


def call_rule_line(stored: Mapping[str, Any] | None, tr: Translator) -> str | None:
    """The rule a call keeps (`ToolCallRecord.rule_fields`) in one line in the reader's words, as
    `bot.agent.rule_line` says it in the audit: "rule 1: Needs finance: args.amount > 100.0", or why its
    condition could not be evaluated (the evaluator's own words, shown as written); None: no rule."""
    if not isinstance(stored, Mapping):
        return None
    position, why = stored.get("position"), stored.get("failed")
    if why and not position:
        return tr.gettext("the rules could not be evaluated ({why}), so the call needs approval", why=why)
    if why:
        condition = stored.get("condition") or ""
        if stored.get("name"):
            return tr.gettext(
                "rule {position} ({name}) could not be evaluated ({why}), so the call needs approval: {condition}",
                position=position, name=stored["name"], why=why, condition=condition,
            )  # fmt: skip
        return tr.gettext(
            "rule {position} could not be evaluated ({why}), so the call needs approval: {condition}",
            position=position, why=why, condition=condition,
        )  # fmt: skip
    try:
        rule = ToolRule(
            condition=str(stored.get("condition", "")), effect=RuleEffect(str(stored.get("effect"))),
            name=str(stored.get("name") or ""),
        )  # fmt: skip
    except (TypeError, ValueError):
        return tr.gettext("rule {position}", position=position)
    return tr.gettext("rule {position}: {rule}", position=position, rule=rule_said(rule, tr))
