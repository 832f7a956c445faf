"""Tool policies: what an admin decided about one tool, stored with a version every change bumps.

A policy can add an approval to a tool or disable it; it never removes a requirement the code
declares. Who may decide is read live from here whenever someone decides; whether a call needs
approval is fixed when it is proposed. What crosses this module's boundary is a frozen `ToolPolicy`,
never a row.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from sqlalchemy import bindparam, select, update

from . import limits
from ._grants import end_grants_of_tool
from ._reconnect import retried_while_away
from ._rules import ToolRule, rules_of
from .exceptions import PolicyError
from .tables import AuditRow, PolicyRow, utcnow

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncSession

    from ._database import Database

_SLACK_ID = re.compile(r"^[UWS][A-Z0-9]+$")

EXPIRY_LIMIT = 365 * 24 * 3600
"""The longest expiry a policy may set: 365 days, in seconds (the shortest is 1 second)."""
APPROVALS_LIMIT = 10
"""The most distinct approvers a policy may require for one call."""

_ESCALATION_TARGET = re.compile(r"^[SC][A-Z0-9]+$")


def N_(template: str) -> str:
    """Mark `template` as a message of a `PolicyError` (gettext's name for it): the Slack adapter's catalogs
    translate it; here it is left as it is."""
    return template


@dataclass(frozen=True)
class _SecondsWords:
    """How a bounded number of seconds is refused, one template per way of being wrong."""

    not_seconds: str
    negative: str
    not_whole: str
    digits_too_long: str
    too_long: str


_EXPIRY_WORDS = _SecondsWords(
    not_seconds=N_(
        "the expiry must be a whole number of seconds, not {value!r}: "
        "an expiry is 1 second to 365 days ({limit} seconds), or 0 for none"
    ),
    negative=N_("{value} is negative: an expiry is 1 second to 365 days ({limit} seconds), or 0 for none"),
    not_whole=N_(
        "{value!r} is not a whole number of seconds: an expiry is 1 second to 365 days ({limit} seconds), or 0 for none"
    ),
    digits_too_long=N_(
        "that is more than 365 days: an expiry is 1 second to 365 days ({limit} seconds), or 0 for none"
    ),
    too_long=N_(
        "{value} seconds is more than 365 days: an expiry is 1 second to 365 days ({limit} seconds), or 0 for none"
    ),
)
_ESCALATION_WORDS = _SecondsWords(
    not_seconds=N_(
        "the escalation delay must be a whole number of seconds, not {value!r}: "
        "an escalation delay is 1 second to 365 days ({limit} seconds), or 0 for none"
    ),
    negative=N_("{value} is negative: an escalation delay is 1 second to 365 days ({limit} seconds), or 0 for none"),
    not_whole=N_(
        "{value!r} is not a whole number of seconds: "
        "an escalation delay is 1 second to 365 days ({limit} seconds), or 0 for none"
    ),
    digits_too_long=N_(
        "that is more than 365 days: an escalation delay is 1 second to 365 days ({limit} seconds), or 0 for none"
    ),
    too_long=N_(
        "{value} seconds is more than 365 days: "
        "an escalation delay is 1 second to 365 days ({limit} seconds), or 0 for none"
    ),
)


def escalation_target(value: str) -> str | None:
    """The escalation target `value` names: a user-group ID (`S…`: a DM to each member) or a channel ID
    (`C…`: one post there); "" clears it (None). Raises `PolicyError` (one line) for anything else."""
    text = (value or "").strip()
    if not text:
        return None
    if len(text) > limits.SLACK_ID:  # its column's width: PostgreSQL would refuse it
        raise PolicyError("an escalation target is a Slack ID of at most {limit} characters", limit=limits.SLACK_ID)
    if not _ESCALATION_TARGET.match(text):
        raise PolicyError(
            "{value!r} is not a Slack user-group ID (S…) or channel ID (C…) to escalate to", value=text[:40]
        )
    return text


def escalation_seconds(value: str | int) -> int:
    """The escalation delay `value` names, in seconds (0: none), bounded like an expiry."""
    return _bounded_seconds(value, _ESCALATION_WORDS)


GRANT_LIMIT = 7 * 24 * 3600
"""The longest standing grant a policy may allow: 7 days, in seconds."""


def grant_seconds_of(value: str | int) -> int:
    """The longest standing grant `value` names, in seconds (0: no grants); the one rule of the command
    line, the App Home and storage. Raises `PolicyError` (one line) for anything else."""
    if isinstance(value, bool):
        raise PolicyError(
            "{value!r} is not a number of seconds: a grant lasts 60 seconds to 7 days ({limit} seconds), "
            "or 0 for no grants",
            value=value,
            limit=GRANT_LIMIT,
        )
    if isinstance(value, str):
        text = value.strip()
        if not (text.isascii() and text.isdigit()) or len(text) > 9:
            raise PolicyError(
                "{value!r} is not a whole number of seconds: a grant lasts 60 seconds to 7 days ({limit} seconds), "
                "or 0 for no grants",
                value=text[:40],
                limit=GRANT_LIMIT,
            )
        value = int(text)
    if not isinstance(value, int) or not (value == 0 or 60 <= value <= GRANT_LIMIT):
        raise PolicyError(
            "{value!r}: a grant lasts 60 seconds to 7 days ({limit} seconds), or 0 for no grants",
            value=value,
            limit=GRANT_LIMIT,
        )
    return value


UNDO_DEFAULT = 300
"""Seconds after a call ran during which it may be undone, when its tool declares how (`undo=`) and no
admin changed its policy's `undo_seconds`."""
UNDO_LIMIT = 7 * 24 * 3600
_UNDO_BOUNDS = f"an undo window lasts 1 second to 7 days ({UNDO_LIMIT} seconds), or 0 for no undo"


def undo_seconds_of(value: str | int) -> int:
    """The undo window `value` names, in seconds (0: no undo); the one rule of the command line, the App
    Home, the HTTP API and storage. Raises `PolicyError` (one line) for anything else."""
    if isinstance(value, bool):
        raise PolicyError(f"{value!r} is not a number of seconds: {_UNDO_BOUNDS}")
    if isinstance(value, str):
        text = value.strip()
        if not (text.isascii() and text.isdigit()) or len(text) > 9:
            raise PolicyError(f"{text[:40]!r} is not a whole number of seconds: {_UNDO_BOUNDS}")
        value = int(text)
    if not isinstance(value, int) or not 0 <= value <= UNDO_LIMIT:
        raise PolicyError(f"{value!r}: {_UNDO_BOUNDS}")
    return value


def approvals_count(value: str | int) -> int:
    """The number of approvals `value` names (1 to `APPROVALS_LIMIT`); the one rule of the command line,
    the App Home, the HTTP API and storage. Raises `PolicyError` (one line) for anything else."""
    if isinstance(value, bool):
        raise PolicyError(
            "{value!r} is not a number: the approvals required are a whole number from 1 to {limit}",
            value=value,
            limit=APPROVALS_LIMIT,
        )
    if isinstance(value, str):
        text = value.strip()
        if not (text.isascii() and text.isdigit()) or len(text) > 3:
            raise PolicyError(
                "{value!r} is not a whole number: the approvals required are a whole number from 1 to {limit}",
                value=text[:40],
                limit=APPROVALS_LIMIT,
            )
        value = int(text)
    if not isinstance(value, int) or not 1 <= value <= APPROVALS_LIMIT:
        raise PolicyError(
            "{value!r}: the approvals required are a whole number from 1 to {limit}", value=value, limit=APPROVALS_LIMIT
        )
    return value


def expiry_seconds(value: str | int) -> int:
    """The expiry `value` names, in seconds (0: none); the one rule of the command line, the App Home
    and storage. Raises `PolicyError` (one line) for anything but a whole number from 0 to 365 days."""
    return _bounded_seconds(value, _EXPIRY_WORDS)


def _bounded_seconds(value: str | int, words: _SecondsWords) -> int:
    limit = EXPIRY_LIMIT
    if isinstance(value, bool):
        raise PolicyError(words.not_seconds, value=value, limit=limit)
    if isinstance(value, str):
        text = value.strip()
        if text.startswith("-") and text[1:].isascii() and text[1:].isdigit():
            raise PolicyError(words.negative, value=text[:40], limit=limit)
        if not (text.isascii() and text.isdigit()):  # "²" is a digit to str.isdigit, not to int()
            raise PolicyError(words.not_whole, value=text[:40], limit=limit)
        if len(text.lstrip("0")) > len(str(EXPIRY_LIMIT)):
            raise PolicyError(words.digits_too_long, limit=limit)
        value = int(text)
    if not isinstance(value, int):
        raise PolicyError(words.not_seconds, value=value, limit=limit)
    if value < 0:
        raise PolicyError(words.negative, value=value, limit=limit)
    if value > EXPIRY_LIMIT:
        raise PolicyError(words.too_long, value=value, limit=limit)
    return value


class PolicyMode(StrEnum):
    """What a policy does to a tool's calls."""

    INHERIT = "inherit"
    """The code decides whether a call needs approval (the default)."""
    REQUIRE_APPROVAL = "require_approval"
    """Every call waits for approval, whatever the code says."""
    DISABLED = "disabled"
    """The tool never runs; the model is told it is disabled."""


@dataclass(frozen=True, kw_only=True)
class ToolPolicy:
    """The policy in force for one tool (the defaults when no admin changed it: version 0)."""

    tool_name: str
    mode: PolicyMode = PolicyMode.INHERIT
    approvers: tuple[str, ...] = ()
    """Slack user IDs (`U…`, `W…`) and user-group IDs (`S…`); empty: anyone in the conversation."""
    self_approval: bool = True
    """Whether the person whose message led to a call may approve it."""
    expires_after: int | None = None
    """Seconds a call may wait for approval before it is declined as expired; None: never."""
    approvals_required: int = 1
    """Distinct approvers a call needs before it runs (four eyes: 2); the requester never counts toward
    more than one, and one decline declines."""
    grant_seconds: int | None = None
    """The longest standing grant an approver may give ("Approve and allow for 1 hour in this thread"),
    in seconds; None: no grants (the default). Grants are never offered or used while
    `approvals_required` > 1."""
    escalate_to: str | None = None
    """Where a call still waiting after `escalate_after` is brought: a user-group ID (`S…`, a DM to each
    member) or a channel ID (`C…`, one post there); None: no escalation. Who may approve does not change."""
    escalate_after: int | None = None
    """Seconds a call waits for approval before it is escalated (shorter than `expires_after`); None: never."""
    rules: tuple[ToolRule, ...] = ()
    """Ordered conditions on a call, each with what follows when it matches; the first that matches
    decides, none: the fields above do (see `memory._rules`)."""
    undo_seconds: int = UNDO_DEFAULT
    """Seconds after a call ran during which it may be undone, when its tool declares how (`undo=`);
    0: never."""
    version: int = 0
    """0 for the defaults; every stored change adds one."""
    updated_by: str | None = None
    updated_at: datetime | None = None

    @property
    def disabled(self) -> bool:
        return self.mode == PolicyMode.DISABLED

    def fields(self) -> dict[str, Any]:
        """The whole policy as JSON (what an audit line's `before` and `after` hold)."""
        return {
            "mode": str(self.mode),
            "approvers": list(self.approvers),
            "self_approval": self.self_approval,
            "expires_after": self.expires_after,
            "approvals_required": self.approvals_required,
            "grant_seconds": self.grant_seconds,
            "escalate_to": self.escalate_to,
            "escalate_after": self.escalate_after,
            "rules": [rule.fields() for rule in self.rules],
            "undo_seconds": self.undo_seconds,
            "version": self.version,
        }

    @property
    def allows_grants(self) -> bool:
        """Whether an approver may give a standing grant now (and a live grant may be used): grants are
        allowed, the tool is not disabled, and one approval is enough (a grant would bypass a quorum)."""
        return bool(self.grant_seconds) and not self.disabled and self.approvals_required <= 1

    @property
    def escalates(self) -> bool:
        return bool(self.escalate_to and self.escalate_after)

    @property
    def adds_approval(self) -> bool:
        return self.mode == PolicyMode.REQUIRE_APPROVAL

    @property
    def users(self) -> tuple[str, ...]:
        return tuple(a for a in self.approvers if not a.startswith("S"))

    @property
    def groups(self) -> tuple[str, ...]:
        return tuple(a for a in self.approvers if a.startswith("S"))


@dataclass(frozen=True, kw_only=True)
class UnreadablePolicy:
    """A stored policy row that does not make a `ToolPolicy`: what is wrong with it, in one line."""

    tool_name: str
    version: int
    problem: str


@dataclass(frozen=True, kw_only=True)
class PolicyChange:
    """A patch to a policy: a field left None keeps its value."""

    mode: PolicyMode | str | None = None
    approvers: Iterable[str] | None = None
    """An empty list clears the approvers (anyone in the conversation may decide)."""
    self_approval: bool | None = None
    expires_after: int | None = None
    """Seconds; 0 removes the expiry."""
    approvals_required: int | None = None
    """Distinct approvers a call needs, 1 to `APPROVALS_LIMIT`."""
    grant_seconds: int | None = None
    """The longest standing grant, 60 s to `GRANT_LIMIT`; 0 allows no grants."""
    escalate_to: str | None = None
    """A user-group ID (`S…`) or channel ID (`C…`); "" removes the escalation target."""
    escalate_after: int | None = None
    """Seconds; 0 removes the escalation delay."""
    rules: Iterable[ToolRule | dict[str, Any]] | None = None
    """The whole ordered list of rules (an empty list removes them all)."""
    undo_seconds: int | None = None
    """Seconds after a call ran during which it may be undone (its tool must declare how); 0: no undo."""

    def checked(self) -> dict[str, object]:
        """The columns this change sets, validated; raises `PolicyError`."""
        values: dict[str, object] = {}
        if self.mode is not None:
            try:
                values["mode"] = str(PolicyMode(self.mode))
            except ValueError:
                modes = ", ".join(m.value for m in PolicyMode)
                raise PolicyError("unknown mode {mode!r}: use one of {modes}", mode=self.mode, modes=modes) from None
        if self.approvers is not None:
            approvers = [a.strip() for a in self.approvers if a.strip()]
            bad = [a[:40] for a in approvers if len(a) > limits.SLACK_ID or not _SLACK_ID.match(a)]
            if bad:
                raise PolicyError(
                    "not a Slack user or user-group ID: {ids} (users start with U or W, groups with S)",
                    ids=", ".join(bad),
                )
            values["approvers"] = list(dict.fromkeys(approvers))
        if self.self_approval is not None:
            values["self_approval"] = bool(self.self_approval)
        if self.expires_after is not None:
            values["expires_after"] = expiry_seconds(self.expires_after) or None
        if self.approvals_required is not None:
            values["approvals_required"] = approvals_count(self.approvals_required)
        if self.grant_seconds is not None:
            values["grant_seconds"] = grant_seconds_of(self.grant_seconds) or None
        if self.escalate_to is not None:
            values["escalate_to"] = escalation_target(self.escalate_to)
        if self.escalate_after is not None:
            values["escalate_after"] = escalation_seconds(self.escalate_after) or None
        if self.rules is not None:
            values["rules"] = [rule.fields() for rule in rules_of(self.rules)]
        if self.undo_seconds is not None:
            values["undo_seconds"] = undo_seconds_of(self.undo_seconds)
        return values


@retried_while_away
class PolicyStore:
    """Reads and changes tool policies. Every change is one transaction that bumps the version."""

    def __init__(self, storage: Database):
        self._storage = storage

    async def get(self, tool_name: str) -> ToolPolicy:
        """The policy of `tool_name`, or the defaults when none is stored."""
        async with self._storage.read() as connection:
            row = (await connection.execute(_POLICY, {"b_tool": tool_name})).first()
        return policy_of(row) if row is not None else ToolPolicy(tool_name=tool_name)

    async def all(self) -> list[ToolPolicy]:
        """Every stored policy, by tool name."""
        async with self._storage.read_session() as session:
            rows = await session.scalars(select(PolicyRow).order_by(PolicyRow.tool_name))
            return [policy_of(row) for row in rows]

    async def with_expiry(self) -> list[ToolPolicy | UnreadablePolicy]:
        """The stored policies that set an expiry (what the expiry sweep looks at). A row that does not
        make a policy (an unknown mode, an expiry outside 1 s to 365 days, stored by an older version or
        by hand) is an `UnreadablePolicy`, so the others are still swept."""
        async with self._storage.read_session() as session:
            rows = await session.scalars(select(PolicyRow).where(PolicyRow.expires_after.is_not(None)))
            found: list[ToolPolicy | UnreadablePolicy] = []
            for row in rows:
                try:
                    policy = policy_of(row)
                    expiry_seconds(policy.expires_after or 0)
                except (ValueError, TypeError) as exc:  # PolicyError is a ValueError
                    found.append(UnreadablePolicy(tool_name=row.tool_name, version=row.version, problem=str(exc)))
                else:
                    found.append(policy)
            return found

    async def with_escalation(self) -> list[ToolPolicy | UnreadablePolicy]:
        """The stored policies that escalate (a target and a delay): what the escalation sweep looks at;
        a row that does not make a policy is an `UnreadablePolicy`, so the others are still swept."""
        async with self._storage.read_session() as session:
            rows = await session.scalars(
                select(PolicyRow).where(PolicyRow.escalate_after.is_not(None), PolicyRow.escalate_to.is_not(None))
            )
            found: list[ToolPolicy | UnreadablePolicy] = []
            for row in rows:
                try:
                    policy = policy_of(row)
                    escalation_seconds(policy.escalate_after or 0)
                    escalation_target(policy.escalate_to or "")
                except (ValueError, TypeError) as exc:
                    found.append(UnreadablePolicy(tool_name=row.tool_name, version=row.version, problem=str(exc)))
                else:
                    found.append(policy)
            return found

    async def set(
        self,
        tool_name: str,
        change: PolicyChange,
        *,
        actor: str | None = None,
        via: str = "runtime",
        detail: str | None = None,
    ) -> ToolPolicy:
        """Apply `change` to the policy of `tool_name` (creating it from the defaults) and bump its version.

        In the same transaction, a `policy_changed` audit line says who (`actor`) changed it through what
        (`via`: `home`, `cli`, `api`), with the whole policy before and after."""
        tool_name = _named(tool_name)
        values = change.checked()
        async with self._storage.session() as session:
            return await self._set_in(session, tool_name, values, actor=actor, via=via, detail=detail)

    async def set_many(
        self,
        changes: Mapping[str, PolicyChange],
        *,
        actor: str | None = None,
        via: str = "runtime",
        detail: str | None = None,
    ) -> list[ToolPolicy]:
        """Apply several changes in one transaction (a policies file): each bumps its policy's version and
        has its own `policy_changed` line; if one is refused, none is stored. By tool name, the order in
        which the rows are locked, so two such transactions cannot deadlock."""
        checked = sorted((_named(name), change.checked()) for name, change in changes.items())
        async with self._storage.session() as session:
            return [
                await self._set_in(session, name, values, actor=actor, via=via, detail=detail)
                for name, values in checked
            ]

    async def _set_in(
        self,
        session: AsyncSession,
        tool_name: str,
        values: dict[str, object],
        *,
        actor: str | None,
        via: str,
        detail: str | None,
    ) -> ToolPolicy:
        defaults = ToolPolicy(tool_name=tool_name)
        await session.execute(
            self._storage.dialect.insert(PolicyRow)
            .values(
                tool_name=tool_name,
                mode=str(defaults.mode),
                approvers=[],
                self_approval=defaults.self_approval,
                expires_after=None,
                approvals_required=1,
                grant_seconds=None,
                escalate_to=None,
                escalate_after=None,
                rules=[],
                version=0,
                updated_at=utcnow(),
            )
            .on_conflict_do_nothing(index_elements=["tool_name"])
        )
        # the row locked first: concurrent changes are serialised, each gets its own version and its
        # own `before`
        locked = self._storage.dialect.locked(select(PolicyRow).where(PolicyRow.tool_name == tool_name))
        before = policy_of((await session.scalars(locked)).one())
        await session.execute(
            update(PolicyRow)
            .where(PolicyRow.tool_name == tool_name)
            .values(**values, version=PolicyRow.version + 1, updated_by=actor, updated_at=utcnow())
        )
        row = await session.get(PolicyRow, tool_name, populate_existing=True)
        after = policy_of(row)
        check_escalation(after)  # raised inside the transaction: nothing is changed
        changed = grant_basis_changes(before, after)
        if changed:
            # a grant stands in for its approver's later decisions under the rules it was given under:
            # ended here, in the change's own transaction, so changing them back cannot revive it
            reason = "the tool's policy changed: " + "; ".join(changed)
            await end_grants_of_tool(
                session,
                tool_name,
                now=self._storage.clock.now(),
                reason=reason,
                via=via,
                policy_version=after.version,
            )
        session.add(
            AuditRow(
                run_id=None,
                tool_call_id=None,
                tool_name=tool_name,
                action="policy_changed",
                actor=actor or "system",
                via=via,
                policy_version=after.version,
                detail=detail,
                before=before.fields(),
                after=after.fields(),
                at=self._storage.clock.now(),
            )
        )
        return after


def _named(tool_name: str) -> str:
    tool_name = tool_name.strip()
    if not tool_name:
        raise PolicyError("a tool name is required")
    return tool_name


def grant_basis_changes(before: ToolPolicy, after: ToolPolicy) -> list[str]:
    """What changed between two versions of a policy that a standing grant rests on, one phrase each
    (e.g. "grant time 60 s -> none"); empty when the change keeps every grant.

    A grant is its approver's decision standing in for later ones, so it rests on what decides who may
    decide and whether a grant may stand: the mode, the approvers, self-approval, the approvals required
    and the grant time. The expiry and the escalation only govern calls that wait, which a grant skips."""
    changes = []
    if before.mode != after.mode:
        changes.append(f"mode {before.mode} -> {after.mode}")
    if set(before.approvers) != set(after.approvers):
        changes.append(f"approvers {_approvers(before)} -> {_approvers(after)}")
    if before.self_approval != after.self_approval:
        changes.append(f"self-approval {_allowed(before.self_approval)} -> {_allowed(after.self_approval)}")
    if before.approvals_required != after.approvals_required:
        changes.append(f"approvals required {before.approvals_required} -> {after.approvals_required}")
    if before.grant_seconds != after.grant_seconds:
        changes.append(f"grant time {_seconds(before.grant_seconds)} -> {_seconds(after.grant_seconds)}")
    return changes


def _approvers(policy: ToolPolicy) -> str:
    return ", ".join(policy.approvers) or "anyone in the conversation"


def _allowed(allowed: bool) -> str:
    return "allowed" if allowed else "refused"


def _seconds(seconds: int | None) -> str:
    return f"{seconds} s" if seconds else "0"


def check_escalation(policy: ToolPolicy) -> None:
    """Refuse (one line) an escalation delay that is not shorter than the policy's expiry."""
    if policy.escalate_after and policy.expires_after and policy.escalate_after >= policy.expires_after:
        raise PolicyError(
            "the escalation delay ({delay} s) must be shorter than the expiry ({expiry} s): "
            "a call would expire before anyone is asked",
            delay=policy.escalate_after,
            expiry=policy.expires_after,
        )


_POLICY = select(PolicyRow.__table__).where(PolicyRow.__table__.c.tool_name == bindparam("b_tool"))


def policy_of(row: Any) -> ToolPolicy:
    return ToolPolicy(
        tool_name=row.tool_name,
        mode=PolicyMode(row.mode),
        approvers=tuple(row.approvers or ()),
        self_approval=row.self_approval,
        expires_after=row.expires_after,
        approvals_required=row.approvals_required or 1,
        grant_seconds=row.grant_seconds or None,
        escalate_to=row.escalate_to,
        escalate_after=row.escalate_after,
        rules=rules_of(row.rules or ()),
        undo_seconds=UNDO_DEFAULT if row.undo_seconds is None else row.undo_seconds,
        version=row.version,
        updated_by=row.updated_by,
        updated_at=row.updated_at,
    )


__all__ = [
    "APPROVALS_LIMIT",
    "EXPIRY_LIMIT",
    "GRANT_LIMIT",
    "UNDO_DEFAULT",
    "PolicyChange",
    "PolicyError",
    "PolicyMode",
    "PolicyStore",
    "ToolPolicy",
    "UnreadablePolicy",
    "approvals_count",
    "undo_seconds_of",
    "escalation_seconds",
    "escalation_target",
    "expiry_seconds",
    "grant_seconds_of",
]
