"""The audit trail: one entry for everything that happens to a tool call a human may care about.

Requested, approved, declined, edited, resumed, expired, cancelled, executed, failed, interrupted;
undone and undo_failed (an undo of a call that ran); refused (a
click or an API call the policy did not allow), blocked (a call the model made to a disabled tool);
granted, grant_used, grant_revoked (a standing grant given with an approval, a call it let run without
asking, its early end);
and every change of who may do what (`policy_changed`, which belongs to no run). Each says who did
it (a Slack user ID, or `system`), through what (a button, the App Home, the HTTP API, the thread,
the expiry sweep, recovery, the runtime itself, the command line), when, the fingerprint of the
arguments it applied to, and the version of the tool's policy in force; a change also says what was
`before` and what is `after` (a policy change: the whole policy; an edit: the arguments). Entries are
kept after their run is finished.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from sqlalchemy import func, select

from ._reconnect import retried_while_away
from .tables import AuditRow

if TYPE_CHECKING:
    from ._database import Database

SYSTEM = "system"
"""The actor of what nobody clicked: an expiry, a recovery, the runtime running an approved call."""


class AuditAction(StrEnum):
    REQUESTED = "requested"
    APPROVED = "approved"
    DECLINED = "declined"
    EDITED = "edited"
    RESUMED = "resumed"
    EXPIRED = "expired"
    EXECUTED = "executed"
    FAILED = "failed"
    INTERRUPTED = "interrupted"
    REFUSED = "refused"
    BLOCKED = "blocked"
    POLICY_CHANGED = "policy_changed"
    GRANTED = "granted"
    GRANT_USED = "grant_used"
    GRANT_REVOKED = "grant_revoked"
    ESCALATED = "escalated"
    """A call still waiting after its policy's `escalate_after` was brought to `escalate_to`."""
    WOULD_REQUIRE = "would_require"
    """A trial rule would have made this call wait for approval (it ran without)."""
    WOULD_ALLOW = "would_allow"
    """A trial rule would have let this call run without approval (it waited)."""
    WOULD_REFUSE = "would_refuse"
    """A trial rule would have refused this call."""
    DELEGATED = "delegated"
    """Someone's approvals were handed to someone else until a time (`memory._delegations`)."""
    DELEGATION_ENDED = "delegation_ended"
    """A delegation was ended early, or its time ran out."""
    CANCELLED = "cancelled"
    """Someone who may decide a waiting call (or an admin) withdrew it: it never ran (not a decline)."""
    UNDONE = "undone"
    """A call that ran was undone by its tool's undo, within its policy's window."""
    UNDO_FAILED = "undo_failed"
    """The tool's undo raised or did not answer in time: the call's effect may stand."""
    ESCALATION_FAILED = "escalation_failed"
    """The escalation could not be delivered for good (a group with no members, an unknown channel)."""


class AuditVia(StrEnum):
    BUTTON = "button"
    HOME = "home"
    API = "api"
    THREAD = "thread"
    EXPIRY = "expiry"
    RECOVERY = "recovery"
    RUNTIME = "runtime"
    CLI = "cli"
    FILE = "file"
    """A policies file (`python -m bot policy apply`, `BOT_POLICIES_FILE`); the detail names it."""
    ESCALATION = "escalation"


@dataclass(frozen=True, kw_only=True)
class AuditEntry:
    """One line of the audit trail."""

    at: datetime
    run_id: str | None
    """None for a line that belongs to no run (a policy change)."""
    tool_call_id: str | None
    tool_name: str
    action: str
    actor: str
    via: str
    on_behalf_of: str | None = None
    """Whom the actor stood in for (a delegation in force): "U2 for U1"; None: on their own behalf."""
    args_fingerprint: str | None = None
    policy_version: int | None = None
    """The version of the tool's policy in force (0: the defaults); None where no policy was read."""
    detail: str | None = None
    """A decline's reason, a failure's error, an expiry's limit, a refusal's explanation."""
    before: Any = None
    """What changed, as it was: the whole policy (a `policy_changed` line), the arguments (`edited`)."""
    after: Any = None
    """What changed, as it is now."""


@retried_while_away
class AuditLog:
    """Writes and reads the audit trail (the `audit` table)."""

    def __init__(self, storage: Database):
        self._storage = storage

    async def record(
        self,
        *,
        run_id: str | None,
        tool_call_id: str | None,
        tool_name: str,
        action: AuditAction | str,
        actor: str | None,
        via: AuditVia | str,
        args_fingerprint: str | None = None,
        policy_version: int | None = None,
        detail: str | None = None,
        before: Any = None,
        after: Any = None,
        on_behalf_of: str | None = None,
    ) -> None:
        async with self._storage.session() as session:
            session.add(
                AuditRow(
                    run_id=run_id,
                    tool_call_id=tool_call_id,
                    tool_name=tool_name,
                    action=str(action),
                    actor=actor or SYSTEM,
                    on_behalf_of=on_behalf_of,
                    via=str(via),
                    args_fingerprint=args_fingerprint,
                    policy_version=policy_version,
                    detail=detail,
                    before=before,
                    after=after,
                    at=self._storage.clock.now(),
                )
            )

    async def entries(
        self,
        *,
        since: datetime | None = None,
        tool_name: str | None = None,
        run_id: str | None = None,
        limit: int | None = None,
    ) -> list[AuditEntry]:
        """Entries oldest first, optionally from `since` on, of one tool, of one run."""
        statement = select(AuditRow).order_by(AuditRow.at, AuditRow.id)
        if since is not None:
            statement = statement.where(AuditRow.at >= since)
        if tool_name is not None:
            statement = statement.where(AuditRow.tool_name == tool_name)
        if run_id is not None:
            statement = statement.where(AuditRow.run_id == run_id)
        if limit is not None:
            statement = statement.limit(limit)
        async with self._storage.read_session() as session:
            return [entry_of(row) for row in await session.scalars(statement)]

    async def counts(self, tool_name: str, actions: Iterable[str], *, since: datetime | None = None) -> dict[str, int]:
        """How many lines of each of `actions` one tool has (from `since` on): one grouped query."""
        statement = (
            select(AuditRow.action, func.count())
            .where(AuditRow.tool_name == tool_name, AuditRow.action.in_(list(actions)))
            .group_by(AuditRow.action)
        )
        if since is not None:
            statement = statement.where(AuditRow.at >= since)
        async with self._storage.read_session() as session:
            return {action: count for action, count in (await session.execute(statement)).all()}

    async def counts_by_detail(
        self, tool_name: str, actions: Iterable[str], *, since: datetime | None = None
    ) -> dict[tuple[str, str], int]:
        """How many lines of each of `actions` one tool has (from `since` on), per action and detail (a trial
        rule's lines name the rule in their detail): one grouped query."""
        statement = (
            select(AuditRow.action, AuditRow.detail, func.count())
            .where(AuditRow.tool_name == tool_name, AuditRow.action.in_(list(actions)))
            .group_by(AuditRow.action, AuditRow.detail)
        )
        if since is not None:
            statement = statement.where(AuditRow.at >= since)
        async with self._storage.read_session() as session:
            return {(action, detail or ""): count for action, detail, count in (await session.execute(statement)).all()}


def entry_of(row: AuditRow) -> AuditEntry:
    return AuditEntry(
        at=row.at,
        run_id=row.run_id,
        tool_call_id=row.tool_call_id,
        tool_name=row.tool_name,
        action=row.action,
        actor=row.actor or SYSTEM,
        on_behalf_of=row.on_behalf_of,
        via=row.via or AuditVia.RUNTIME,
        args_fingerprint=row.args_fingerprint,
        policy_version=row.policy_version,
        detail=row.detail,
        before=row.before,
        after=row.after,
    )


__all__ = ["SYSTEM", "AuditAction", "AuditEntry", "AuditLog", "AuditVia"]
