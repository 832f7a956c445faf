"""Delegation as every admin surface offers it (the App Home, the HTTP API, `python -m bot delegate`): read
an end time people write, and check who may make or end a delegation before storage does it.

Who may: anyone hands their own approvals on (an admin may for anyone); the delegator, the delegate or an
admin ends one. What a delegate may then decide is the runtime's rule (`bot.agent._authorize`), not this.
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, timedelta

from memory import Delegation, DelegationError, Storage

_DURATION = re.compile(r"(?P<count>[0-9]{1,4})\s*(?P<unit>[mhdw])", re.IGNORECASE)
_UNITS = {"m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
UNTIL_HELP = "write a date (2026-12-11: to the end of that day, UTC), a time (2026-12-11T17:00+09:00) or 3d, 8h, 90m"


def read_until(text: str, now: datetime) -> datetime:
    """The end time `text` names: an ISO date (the end of that day, UTC), an ISO time with its zone (UTC if
    none), or a duration from `now` (`3d`, `8h`, `90m`, `2w`). Raises `DelegationError` (one line)."""
    text = (text or "").strip()
    if not text:
        raise DelegationError(f"until when? {UNTIL_HELP}")
    if found := _DURATION.fullmatch(text):
        return now + timedelta(seconds=int(found["count"]) * _UNITS[found["unit"].lower()])
    try:
        if re.fullmatch(r"[0-9]{4}-[0-9]{2}-[0-9]{2}", text):
            return datetime.combine(date.fromisoformat(text) + timedelta(days=1), datetime.min.time(), UTC)
        until = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise DelegationError(f"{text[:40]!r} is not an end time: {UNTIL_HELP}") from None
    return until if until.tzinfo is not None else until.replace(tzinfo=UTC)


async def make_delegation(
    storage: Storage, *, delegator: str, delegate: str, until: datetime, by: str, via: str, admin: bool
) -> Delegation:
    """Hand `delegator`'s approvals to `delegate` until `until`, for `by` (the delegator, or an admin:
    `admin`); audited `delegated` via `via`. Raises `DelegationError` (one line)."""
    if by != delegator and not admin:
        raise DelegationError(
            f"only {delegator} or an admin may hand {delegator}'s approvals to someone else", kind="forbidden"
        )
    return await storage.delegations.create(delegator=delegator, delegate=delegate, ends_at=until, by=by, via=via)


async def end_delegation(storage: Storage, delegation_id: str, *, by: str, via: str, admin: bool) -> Delegation:
    """End a delegation in force, for `by` (its delegator, its delegate or an admin); audited
    `delegation_ended`. Raises `DelegationError` (one line): unknown, not `by`'s to end, already ended."""
    found = await storage.delegations.get(delegation_id)
    if found is None:
        raise DelegationError(f"no delegation {delegation_id!r}", kind="unknown")
    if by not in (found.delegator, found.delegate) and not admin:
        raise DelegationError(
            f"only {found.delegator}, {found.delegate} or an admin may end this delegation", kind="forbidden"
        )
    ended = await storage.delegations.end(delegation_id, by=by, via=via)
    if ended is None:
        raise DelegationError("this delegation already ended", kind="conflict")
    return ended


__all__ = ["UNTIL_HELP", "end_delegation", "make_delegation", "read_until"]
