"""The rules of a tool policy: ordered conditions on a call, each with what follows when it matches.

This module keeps a rule's shape (its effect, approvers, name, the length of its condition); whether
the condition is CEL that fits the tool's arguments is checked where the tool is known (`bot.admin`),
and the runtime evaluates it when a call is proposed. What crosses the boundary is a frozen `ToolRule`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from .exceptions import PolicyError

RULES_LIMIT = 20
"""The most rules one tool's policy may hold."""
NAME_LIMIT = 80
CONDITION_TEXT_LIMIT = 500

_SLACK_ID = re.compile(r"^[UWS][A-Z0-9]+$")


class RuleEffect(StrEnum):
    """What a rule does to a call it matches."""

    ALLOW = "allow"
    """The call runs without asking, unless the code itself requires approval (a rule never removes that)."""
    REQUIRE_APPROVAL = "require_approval"
    """The call waits for approval, by the rule's approvers when it names some."""
    REFUSE = "refuse"
    """The call is not run; the model is told an admin's rule refused it."""


@dataclass(frozen=True, kw_only=True)
class ToolRule:
    """One rule of a tool's policy. The first rule whose condition holds decides; none: the policy does."""

    condition: str
    """A CEL expression over `args`, `requester`, `channel`, `tool` and `now` (see the README's "Rules")."""
    effect: RuleEffect
    name: str = ""
    """What people call it ("finance"): the approval message says "Needs finance: <condition>"."""
    approvers: tuple[str, ...] = ()
    """For `require_approval`: who may decide the calls it matches (user and user-group IDs), instead of
    the policy's approvers; empty: the policy's."""
    trial: bool = False
    """A trial rule changes nothing: each call it would have changed is only audited (`would_require`,
    `would_allow`, `would_refuse`)."""

    def fields(self) -> dict[str, Any]:
        """The rule as JSON (stored, audited, exported)."""
        found: dict[str, Any] = {"condition": self.condition, "effect": str(self.effect)}
        if self.name:
            found["name"] = self.name
        if self.approvers:
            found["approvers"] = list(self.approvers)
        if self.trial:
            found["trial"] = True
        return found

    def describe(self) -> str:
        """The rule in one line, as an approval message and the audit show it ("Needs finance: args.amount > 100.0")."""
        label = (
            self.name
            or {
                RuleEffect.ALLOW: "no approval",
                RuleEffect.REQUIRE_APPROVAL: "approval",
                RuleEffect.REFUSE: "refusal",
            }[self.effect]
        )
        verb = {RuleEffect.ALLOW: "Allowed by", RuleEffect.REQUIRE_APPROVAL: "Needs", RuleEffect.REFUSE: "Refused by"}
        return f"{verb[self.effect]} {label}: {self.condition}"


def rule_of(value: ToolRule | Mapping[str, Any], position: int = 1) -> ToolRule:
    """A rule from its JSON (or a rule, checked again); raises `PolicyError` with one line that names it."""
    if isinstance(value, ToolRule):
        value = value.fields()
    if not isinstance(value, Mapping):
        raise PolicyError("rule {position}: a rule is an object with a condition and an effect", position=position)
    unknown = sorted(set(value) - {"condition", "effect", "name", "approvers", "trial"})
    if unknown:
        raise PolicyError(
            "rule {position}: unknown field {field!r} (a rule has condition, effect, name, approvers, trial)",
            position=position,
            field=unknown[0],
        )
    condition = value.get("condition")
    if not isinstance(condition, str) or not condition.strip():
        raise PolicyError(
            "rule {position}: a rule needs a condition (a CEL expression, e.g. args.amount > 100.0)", position=position
        )
    if len(condition.strip()) > CONDITION_TEXT_LIMIT:
        raise PolicyError(
            "rule {position}: a condition is at most {limit} characters", position=position, limit=CONDITION_TEXT_LIMIT
        )
    try:
        effect = RuleEffect(str(value.get("effect")))
    except ValueError:
        effects = ", ".join(e.value for e in RuleEffect)
        raise PolicyError(
            "rule {position}: unknown effect {effect!r}: use one of {effects}",
            position=position,
            effect=value.get("effect"),
            effects=effects,
        ) from None
    name = value.get("name") or ""
    if not isinstance(name, str) or len(name.strip()) > NAME_LIMIT:
        raise PolicyError(
            "rule {position}: a rule's name is text of at most {limit} characters", position=position, limit=NAME_LIMIT
        )
    approvers = value.get("approvers") or []
    if isinstance(approvers, str):
        approvers = approvers.split(",")
    if not isinstance(approvers, list | tuple) or not all(isinstance(a, str) for a in approvers):
        raise PolicyError("rule {position}: approvers are a list of Slack user or user-group IDs", position=position)
    approvers = [a.strip() for a in approvers if a.strip()]
    bad = [a for a in approvers if not _SLACK_ID.match(a)]
    if bad:
        raise PolicyError(
            "rule {position}: not a Slack user or user-group ID: {ids}", position=position, ids=", ".join(bad)[:100]
        )
    if approvers and effect != RuleEffect.REQUIRE_APPROVAL:
        raise PolicyError("rule {position}: only a rule that requires approval names approvers", position=position)
    trial = value.get("trial", False)
    if not isinstance(trial, bool):
        raise PolicyError("rule {position}: trial is true or false", position=position)
    return ToolRule(
        condition=condition.strip(),
        effect=effect,
        name=name.strip(),
        approvers=tuple(dict.fromkeys(approvers)),
        trial=trial,
    )


def rules_of(values: Iterable[ToolRule | Mapping[str, Any]] | None) -> tuple[ToolRule, ...]:
    """Rules from their JSON, in order; raises `PolicyError` (one line) for the first one that is wrong."""
    if values is None:
        return ()
    if isinstance(values, str | bytes | Mapping):
        raise PolicyError("rules are a list")
    rules = tuple(rule_of(value, position) for position, value in enumerate(values, 1))
    if len(rules) > RULES_LIMIT:
        raise PolicyError("a policy holds at most {limit} rules", limit=RULES_LIMIT)
    return rules


__all__ = ["RULES_LIMIT", "RuleEffect", "ToolRule", "rule_of", "rules_of"]
