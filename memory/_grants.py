"""Standing grants: "Approve and allow for 1 hour in this thread".

A grant is stored in the same transaction as the approval that gave it (`RunStore.transition(grant=...)`),
so only the approval that won the call makes one. The runtime looks for a live grant when a call of the
same tool is proposed in the same thread (`GrantStore.matching`); revoking is one conditional UPDATE with
its audit line (`grant_revoked`). A grant holds only under the policy it was given under: a policy change
that touches who may decide or whether grants are allowed ends every live grant of the tool in the policy
change's own transaction (`end_grants_of_tool`), so no later change can bring one back; a new grant is
stored only while the policy is still the version it was checked against (`check_grant_policy`). "Now"
is `storage.clock`.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, cast

from sqlalchemy import CursorResult, bindparam, insert, or_, select, update
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncSession

from .exceptions import GrantNotAllowedError
from .tables import AuditRow, GrantRow, PolicyRow

if TYPE_CHECKING:
    from ._database import Database
    from .dialects import Dialect


@dataclass(frozen=True, kw_only=True)
class Grant:
    """One standing grant, as stored."""

    id: str
    agent_id: str
    tool_name: str
    thread_id: str
    """The thread it covers (the run's thread)."""
    resource_id: str | None
    granted_by: str
    """Who approved with the grant (a Slack user ID)."""
    run_id: str
    tool_call_id: str
    """The call whose approval gave it."""
    args_fingerprint: str | None
    """Set: only calls with exactly these arguments are covered; None: any arguments."""
    policy_version: int
    granted_at: datetime
    expires_at: datetime
    revoked_at: datetime | None = None
    revoked_by: str | None = None

    @property
    def same_arguments(self) -> bool:
        return self.args_fingerprint is not None

    def live_at(self, now: datetime) -> bool:
        return self.revoked_at is None and self.expires_at > now

    def describe(self) -> str:
        """One line for the audit trail and the logs."""
        scope = "same arguments only" if self.same_arguments else "any arguments"
        return (
            f"grant {self.id} by {self.granted_by} from call {self.tool_call_id}, {scope}, "
            f"until {self.expires_at.isoformat(timespec='seconds')}"
        )


def new_grant_values(
    *,
    agent_id: str,
    tool_name: str,
    thread_id: str,
    resource_id: str | None,
    granted_by: str,
    run_id: str,
    tool_call_id: str,
    args_fingerprint: str | None,
    policy_version: int,
    now: datetime,
    seconds: int,
) -> dict[str, Any]:
    """The row of a new grant, for `RunStore.transition(grant=...)`."""
    return {
        "id": uuid.uuid4().hex,
        "agent_id": agent_id,
        "tool_name": tool_name,
        "thread_id": thread_id,
        "resource_id": resource_id,
        "granted_by": granted_by,
        "run_id": run_id,
        "tool_call_id": tool_call_id,
        "args_fingerprint": args_fingerprint,
        "policy_version": policy_version,
        "granted_at": now,
        "expires_at": now + timedelta(seconds=seconds),
        "revoked_at": None,
        "revoked_by": None,
    }


class GrantStore:
    """Reads and revokes standing grants (the `tool_grants` table)."""

    def __init__(self, storage: Database):
        self._storage = storage

    async def matching(
        self,
        *,
        agent_id: str,
        tool_name: str,
        thread_id: str,
        fingerprint: str | None,
        longest: int,
        not_granted_by: str | None = None,
    ) -> Grant | None:
        """A live grant that covers a call of `tool_name` in `thread_id` with arguments `fingerprint`, or None.

        Live: not revoked, not past its end, and not older than `longest` seconds (the policy's grant limit
        as it is now: a lower limit shortens the grants given before). `not_granted_by`: a grant given by
        this person does not count (self-approval refused: the requester's own grant does not cover them)."""
        now = self._storage.clock.now()
        statement = (
            select(GrantRow)
            .where(
                GrantRow.agent_id == agent_id,
                GrantRow.tool_name == tool_name,
                GrantRow.thread_id == thread_id,
                GrantRow.revoked_at.is_(None),
                GrantRow.expires_at > now,
                GrantRow.granted_at > now - timedelta(seconds=longest),
                or_(GrantRow.args_fingerprint.is_(None), GrantRow.args_fingerprint == fingerprint),
            )
            .order_by(GrantRow.expires_at.desc(), GrantRow.id)
            .limit(1)
        )
        if not_granted_by is not None:
            statement = statement.where(GrantRow.granted_by != not_granted_by)
        async with self._storage.read_session() as session:
            row = (await session.scalars(statement)).first()
        return grant_of(row) if row is not None else None

    async def get(self, grant_id: str) -> Grant | None:
        async with self._storage.read_session() as session:
            row = await session.get(GrantRow, grant_id)
        return grant_of(row) if row is not None else None

    async def live(self, *, agent_id: str | None = None, granted_by: str | None = None) -> list[Grant]:
        """The grants not revoked and not past their end, soonest to end first; of one agent, of one granter."""
        now = self._storage.clock.now()
        statement = (
            select(GrantRow)
            .where(GrantRow.revoked_at.is_(None), GrantRow.expires_at > now)
            .order_by(GrantRow.expires_at, GrantRow.id)
        )
        if agent_id is not None:
            statement = statement.where(GrantRow.agent_id == agent_id)
        if granted_by is not None:
            statement = statement.where(GrantRow.granted_by == granted_by)
        async with self._storage.read_session() as session:
            return [grant_of(row) for row in await session.scalars(statement)]

    async def revoke(self, grant_id: str, *, by: str | None, via: str) -> Grant | None:
        """End a live grant now; the revoked grant, or None when it was not live (unknown, revoked, ended).

        One conditional UPDATE (`revoked_at IS NULL AND expires_at > now`) and its `grant_revoked` audit line
        in one transaction: the next proposed call no longer finds it."""
        now = self._storage.clock.now()
        async with self._storage.session() as session:
            # an UPDATE's result is a `CursorResult` (its rowcount); `Session.execute` is typed for any statement
            result = cast(
                "CursorResult[Any]",
                await session.execute(
                    update(GrantRow)
                    .where(GrantRow.id == grant_id, GrantRow.revoked_at.is_(None), GrantRow.expires_at > now)
                    .values(revoked_at=now, revoked_by=by)
                ),
            )
            if result.rowcount != 1:
                return None
            grant = grant_of(await session.get(GrantRow, grant_id, populate_existing=True))
            await session.execute(
                insert(AuditRow).values(
                    run_id=grant.run_id,
                    tool_call_id=grant.tool_call_id,
                    tool_name=grant.tool_name,
                    action="grant_revoked",
                    actor=by or "system",
                    via=via,
                    args_fingerprint=grant.args_fingerprint,
                    policy_version=grant.policy_version,
                    detail=grant.describe(),
                    at=now,
                )
            )
        return grant


async def end_grants_of_tool(
    session: AsyncSession, tool_name: str, *, now: datetime, reason: str, via: str, policy_version: int
) -> list[Grant]:
    """End every live grant of `tool_name` (of any agent) inside the caller's transaction, each with one
    `grant_revoked` audit line by `system` saying `reason`; the grants ended.

    One conditional UPDATE (`revoked_at IS NULL AND expires_at > now`) with RETURNING: a grant a person
    revokes at the same moment is ended once, by whichever UPDATE the database orders first."""
    ended = await session.scalars(
        update(GrantRow)
        .where(GrantRow.tool_name == tool_name, GrantRow.revoked_at.is_(None), GrantRow.expires_at > now)
        .values(revoked_at=now, revoked_by=None)
        .returning(GrantRow)
        .execution_options(synchronize_session=False)
    )
    grants = sorted((grant_of(row) for row in ended), key=lambda grant: (grant.granted_at, grant.id))
    for grant in grants:
        await session.execute(
            insert(AuditRow).values(
                run_id=grant.run_id,
                tool_call_id=grant.tool_call_id,
                tool_name=grant.tool_name,
                action="grant_revoked",
                actor="system",
                via=via,
                args_fingerprint=grant.args_fingerprint,
                policy_version=policy_version,
                detail=f"{grant.describe()}, given under policy version {grant.policy_version}: {reason}",
                at=now,
            )
        )
    return grants


async def check_grant_policy(connection: AsyncConnection, dialect: Dialect, grant: dict[str, Any]) -> None:
    """Refuse (`GrantNotAllowedError`) a new grant whose tool's policy changed since the decision read it,
    inside the transaction that would store it. The policy row is locked against writers first: a policy
    change that committed meanwhile is seen here, and one that comes later waits for this transaction and
    then ends the grant with the others (`end_grants_of_tool`)."""
    statement = dialect.locked(_POLICY_VERSION, shared=True)
    version = (await connection.execute(statement, {"b_tool": grant["tool_name"]})).scalar()
    if version != grant["policy_version"]:
        raise GrantNotAllowedError(
            grant["tool_name"],
            f"its policy changed while you decided (version {grant['policy_version']} -> {version}); "
            "look at the request again",
        )


_POLICY_VERSION = select(PolicyRow.version).where(PolicyRow.tool_name == bindparam("b_tool"))


LIVE_GRANTS_OF_AGENT = select(*GrantRow.__table__.c).where(
    GrantRow.agent_id == bindparam("b_agent"), GrantRow.revoked_at.is_(None), GrantRow.expires_at > bindparam("b_now")
)
"""An agent's live grants (as `GrantStore.live(agent_id=...)` reads them, unordered), its binds `b_agent` and
`b_now`: for a read that takes them with others in one statement (`memory.OneRead`)."""


def grant_of(row: Any) -> Grant:
    return Grant(
        id=row.id,
        agent_id=row.agent_id,
        tool_name=row.tool_name,
        thread_id=row.thread_id,
        resource_id=row.resource_id,
        granted_by=row.granted_by,
        run_id=row.run_id,
        tool_call_id=row.tool_call_id,
        args_fingerprint=row.args_fingerprint,
        policy_version=row.policy_version,
        granted_at=row.granted_at,
        expires_at=row.expires_at,
        revoked_at=row.revoked_at,
        revoked_by=row.revoked_by,
    )


__all__ = [
    "LIVE_GRANTS_OF_AGENT",
    "Grant",
    "GrantStore",
    "grant_of",
    "check_grant_policy",
    "end_grants_of_tool",
    "new_grant_values",
]
