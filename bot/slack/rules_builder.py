"""An admin's rules as the App Home lists them under a tool's policy: one line a rule, in order, and next to
each trial rule how many calls it would have changed (`bot.admin.trial_counts_per_rule`). Pure: a policy,
the counts and the reader's `Translator` in, mrkdwn lines out."""

from __future__ import annotations

from collections.abc import Mapping

from memory import ToolPolicy

from .mrkdwn import escape
from .translator import Translator

RULES_SHOWN = 8
"""Rules listed per tool (the policy form shows them all)."""


def rules_lines(policy: ToolPolicy, trials: Mapping[int, Mapping[str, int]], tr: Translator) -> list[str]:
    """The policy's rules, numbered, first match first; a trial rule with what it would have changed since
    the policy's last change (`trials`: per position, per `would_*` action, a count)."""
    lines = []
    for position, rule in enumerate(policy.rules[:RULES_SHOWN], 1):
        line = f"{position}. {escape(rule.describe()[:150])}"
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
