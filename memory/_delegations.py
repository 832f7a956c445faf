"""Delegation: an approver hands their approvals to someone else for a time ("out of office until Friday:
@bob decides for me").

A delegation is in force from when it is made until its end time or until it is ended (by the delegator,
the delegate or an admin). While it is, the runtime's one rule (`bot.agent._authorize`) lets the delegate
decide what the delegator may decide, weighed as the delegator, live at each decision: never a right the
delegator lacks, never beyond it, and one step only (a delegate's own delegation passes on their own
rights, not those they hold for someone else). Making and ending one are audit lines (`delegated`,
`delegation_ended`), in the same transaction; a delegation whose time ran out is in force no more at once,
and the sweep (`end_lapsed`) writes its `delegation_ended` line. "Now" is `storage.clock`.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, cast

from sqlalchemy import CursorResult, bindparam, insert, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from ._audit import SYSTEM
from ._reconnect import retried_while_away
from .exceptions import DelegationError
from .tables import AuditRow, DelegationRow

if TYPE_CHECKING:
    from ._database import Database

DELEGATION_LIMIT = 365 * 24 * 3600
"""The longest a delegation may last, in seconds (as a policy's expiry: one year)."""
EVERY_TOOL = "*"
"""The `tool_name` of a delegation's audit lines: it covers the delegator's approvals of every tool."""


@dataclass(frozen=True, kw_only=True)
class Delegation:
    """One delegation, as stored."""

    id: str
    delegator: str
    """Whose approvals are handed over (a person's ID)."""
    delegate: str
    """Who decides them meanwhile."""
    created_by: str
    starts_at: datetime
    ends_at: datetime
    ended_at: datetime | None = None
    ended_by: str | None = None

    def in_force_at(self, now: datetime) -> bool:
        return self.ended_at is None and self.starts_at <= now < self.ends_at

    def describe(self) -> str:
        """One line for the audit trail: "U1's approvals go to U2 until 2026-12-11T17:00:00+00:00"."""
        return f"{self.delegator}'s approvals go to {self.delegate} until {self.ends_at.isoformat(timespec='seconds')}"


@retried_while_away
class DelegationStore:
    """Makes, ends and reads delegations (the `delegations` table)."""

    def __init__(self, storage: Database):
        self._storage = storage

    async def create(self, *, delegator: str, delegate: str, ends_at: datetime, by: str, via: str) -> Delegation:
        """Hand `delegator`'s approvals to `delegate` from now until `ends_at`; the delegation made, audited
        `delegated`. Raises `DelegationError` (one line) for a delegation to oneself, an end time not within 1
        second to 365 days from now, or when `delegator` already has one in force (end it first)."""
        now = self._storage.clock.now()
        if not delegator or not delegate:
            raise DelegationError("name both the person who is away and the one who decides for them")
        if delegator == delegate:
            raise DelegationError(f"{delegator} cannot delegate to themselves")
        if ends_at.tzinfo is None:
            raise DelegationError("the end time needs a time zone (e.g. 2026-12-11T17:00:00+00:00)")
        if not now + timedelta(seconds=1) <= ends_at <= now + timedelta(seconds=DELEGATION_LIMIT):
            raise DelegationError("a delegation ends 1 second to 365 days from now")
        delegation = Delegation(
            id=uuid.uuid4().hex, delegator=delegator, delegate=delegate, created_by=by, starts_at=now, ends_at=ends_at
        )
        async with self._storage.session() as session:
            current = await session.scalars(_in_force(now).where(DelegationRow.delegator == delegator).limit(1))
            if (row := current.first()) is not None:
                raise DelegationError(
                    f"{delegator} already delegates to {row.delegate} until "
                    f"{row.ends_at.isoformat(timespec='seconds')}; end that delegation first",
                    kind="conflict",
                )
            session.add(DelegationRow(**_values(delegation)))
            await _audit(session, "delegated", delegation, actor=by, via=via, detail=delegation.describe(), at=now)
        return delegation

    async def end(self, delegation_id: str, *, by: str | None, via: str) -> Delegation | None:
        """End a delegation in force now; the ended delegation, or None when it was not in force (unknown,
        ended, past its end). One conditional UPDATE and its `delegation_ended` line in one transaction."""
        now = self._storage.clock.now()
        async with self._storage.session() as session:
            result = cast(
                "CursorResult[Any]",
                await session.execute(
                    update(DelegationRow)
                    .where(
                        DelegationRow.id == delegation_id,
                        DelegationRow.ended_at.is_(None),
                        DelegationRow.ends_at > now,
                    )
                    .values(ended_at=now, ended_by=by)
                ),
            )
            if result.rowcount != 1:
                return None
            delegation = delegation_of(await session.get(DelegationRow, delegation_id, populate_existing=True))
            await _audit(
                session,
                "delegation_ended",
                delegation,
                actor=by,
                via=via,
                detail=f"{delegation.describe()}: ended",
                at=now,
            )
        return delegation

    async def end_lapsed(self) -> list[Delegation]:
        """Write down the end of every delegation whose time ran out (each one once, whichever replica's sweep
        comes first): `ended_at` its end time, one `delegation_ended` line by `system`. It was in force no
        more from its end time on, whether or not this ran."""
        now = self._storage.clock.now()
        async with self._storage.session() as session:
            ended = await session.scalars(
                update(DelegationRow)
                .where(DelegationRow.ended_at.is_(None), DelegationRow.ends_at <= now)
                .values(ended_at=DelegationRow.ends_at)
                .returning(DelegationRow)
                .execution_options(synchronize_session=False)
            )
            delegations = sorted((delegation_of(row) for row in ended), key=lambda d: (d.ends_at, d.id))
            for delegation in delegations:
                await _audit(
                    session, "delegation_ended", delegation, actor=SYSTEM, via="expiry",
                    detail=f"{delegation.describe()}: its time ran out", at=now,
                )  # fmt: skip
        return delegations

    async def get(self, delegation_id: str) -> Delegation | None:
        async with self._storage.read_session() as session:
            row = await session.get(DelegationRow, delegation_id)
        return delegation_of(row) if row is not None else None

    async def in_force(self, *, person: str | None = None) -> list[Delegation]:
        """The delegations in force now, soonest to end first; with `person`: those they gave or hold."""
        statement = _in_force(self._storage.clock.now())
        if person is not None:
            statement = statement.where((DelegationRow.delegator == person) | (DelegationRow.delegate == person))
        async with self._storage.read_session() as session:
            return [delegation_of(row) for row in await session.scalars(statement)]

    async def ends_not_written(self) -> list[datetime]:
        """The end times of the delegations whose end is not written down yet (in force, to come, or lapsed
        and left to `end_lapsed`), soonest first: what the expiry sweep waits for."""
        statement = (
            select(DelegationRow.ends_at).where(DelegationRow.ended_at.is_(None)).order_by(DelegationRow.ends_at)
        )
        async with self._storage.read() as connection:
            return list(await connection.scalars(statement))

    async def delegators_of(self, delegate: str) -> tuple[str, ...]:
        """Whose approvals `delegate` holds now, oldest delegation first (`bot.agent`'s `Delegations`)."""
        statement = (
            select(DelegationRow.delegator)
            .where(
                DelegationRow.delegate == delegate,
                DelegationRow.ended_at.is_(None),
                DelegationRow.starts_at <= self._storage.clock.now(),
                DelegationRow.ends_at > self._storage.clock.now(),
            )
            .order_by(DelegationRow.starts_at, DelegationRow.id)
        )
        async with self._storage.read_session() as session:
            return tuple(dict.fromkeys(await session.scalars(statement)))


IN_FORCE = select(*DelegationRow.__table__.c).where(
    DelegationRow.ended_at.is_(None),
    DelegationRow.starts_at <= bindparam("b_now"),
    DelegationRow.ends_at > bindparam("b_now"),
)
"""The delegations in force at `b_now` (as `DelegationStore.in_force` reads them, unordered): for a read that
takes them with others in one statement (`memory.OneRead`)."""


def _in_force(now: datetime) -> Any:
    return (
        select(DelegationRow)
        .where(DelegationRow.ended_at.is_(None), DelegationRow.starts_at <= now, DelegationRow.ends_at > now)
        .order_by(DelegationRow.ends_at, DelegationRow.id)
    )


async def _audit(
    session: AsyncSession,
    action: str,
    delegation: Delegation,
    *,
    actor: str | None,
    via: str,
    detail: str,
    at: datetime,
) -> None:
    await session.execute(
        insert(AuditRow).values(
            run_id=None,
            tool_call_id=None,
            tool_name=EVERY_TOOL,
            action=action,
            actor=actor or SYSTEM,
            via=via,
            detail=detail,
            at=at,
        )  # fmt: skip
    )


def _values(delegation: Delegation) -> dict[str, Any]:
    return {
        "id": delegation.id,
        "delegator": delegation.delegator,
        "delegate": delegation.delegate,
        "created_by": delegation.created_by,
        "starts_at": delegation.starts_at,
        "ends_at": delegation.ends_at,
        "ended_at": delegation.ended_at,
        "ended_by": delegation.ended_by,
    }


def delegation_of(row: Any) -> Delegation:
    return Delegation(
        id=row.id,
        delegator=row.delegator,
        delegate=row.delegate,
        created_by=row.created_by,
        starts_at=row.starts_at,
        ends_at=row.ends_at,
        ended_at=row.ended_at,
        ended_by=row.ended_by,
    )


__all__ = ["DELEGATION_LIMIT", "EVERY_TOOL", "IN_FORCE", "Delegation", "DelegationStore", "delegation_of"]
