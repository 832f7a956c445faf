"""The HTTP API's delegation routes: who decides for whom while someone is away.

`GET /api/delegations` lists every delegation in force (`?person=U...`: those one person gave or holds);
`POST /api/delegations` makes one (`delegator`, `delegate`, `until`, and `actor`: who makes it, the
delegator or an admin; without `actor`, the delegator); `POST /api/delegations/{id}/end` ends one
(`endedBy`: its delegator, its delegate or an admin). Status codes as the other routes: 400 bad input,
401 without the token, 403 not this person's to make or end, 404 unknown, 409 one already in force or
already ended. What a delegate may decide is the runtime's rule; decisions go through the usual routes.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from aiohttp import web

from bot.agent import Agent
from bot.delegations import end_delegation, make_delegation, read_until
from memory import Delegation, DelegationError, limits


class ApiFront(Protocol):
    """What the routes need of `bot.api.routes.ApiFront` (see there)."""

    agent: Agent
    identify: Callable[[str], Awaitable[str | None]] | None
    is_admin: Callable[[str], Awaitable[bool]] | None
    grants_changed: Callable[[], None] | None


_STATUS = {"invalid": 400, "forbidden": 403, "unknown": 404, "conflict": 409}


class ApiDelegations:
    """The delegation routes over `front` (its token, its directory's `identify` and `is_admin`)."""

    def __init__(
        self,
        front: ApiFront,
        *,
        answer: Callable[..., Awaitable[web.Response]],
        error: Callable[[int, str], Exception],
        body: Callable[[web.Request], Awaitable[dict[str, Any]]],
    ):
        self.front = front
        self._answer = answer
        self._error = error
        self._body = body

    def add_routes(self, web_app: web.Application) -> None:
        web_app.router.add_get("/api/delegations", self.list)
        web_app.router.add_post("/api/delegations", self.create)
        web_app.router.add_post("/api/delegations/{delegation_id}/end", self.end)

    async def list(self, request: web.Request) -> web.Response:
        return await self._answer(request, self._list, agent=False)

    async def create(self, request: web.Request) -> web.Response:
        return await self._answer(request, self._create, agent=False)

    async def end(self, request: web.Request) -> web.Response:
        return await self._answer(request, self._end, agent=False)

    async def _list(self, request: web.Request) -> dict[str, Any]:
        person = self._person(request.query.get("person", ""), "person", required=False)
        found = await self.front.agent.storage.delegations.in_force(person=person or None)
        return {"delegations": [delegation_json(d) for d in found]}

    async def _create(self, request: web.Request) -> dict[str, Any]:
        body = await self._body(request)
        unknown = sorted(set(body) - {"delegator", "delegate", "until", "actor"})
        if unknown:
            raise self._error(400, f"unknown fields {', '.join(unknown)[:200]}; give delegator, delegate, until, actor")
        delegator = self._person(body.get("delegator"), "delegator")
        delegate = self._person(body.get("delegate"), "delegate")
        actor = self._person(body.get("actor"), "actor", required=False) or delegator
        until = body.get("until")
        if not isinstance(until, str):
            raise self._error(400, "until must be a string: an ISO time or date, or 3d, 8h, 90m")
        storage = self.front.agent.storage
        for person in dict.fromkeys((delegator, delegate, actor)):
            await self._identify(person)
        try:
            made = await make_delegation(
                storage, delegator=delegator, delegate=delegate, until=read_until(until, storage.clock.now()),
                by=actor, via="api", admin=await self._admin(actor),
            )  # fmt: skip
        except DelegationError as exc:
            raise self._error(_STATUS[exc.kind], str(exc)) from None
        self._changed()
        return {"status": "delegated", "delegation": delegation_json(made)}

    async def _end(self, request: web.Request) -> dict[str, Any]:
        body = await self._body(request)
        by = self._person(body.get("endedBy"), "endedBy")
        await self._identify(by)
        try:
            delegation_id = limits.fitting(request.match_info["delegation_id"], limits.DELEGATION_ID, "id")
        except limits.TooLongError as exc:
            raise self._error(400, str(exc)) from None
        try:
            ended = await end_delegation(
                self.front.agent.storage, delegation_id, by=by, via="api", admin=await self._admin(by)
            )
        except DelegationError as exc:
            raise self._error(_STATUS[exc.kind], str(exc)) from None
        self._changed()
        return {"status": "ended", "delegation": delegation_json(ended)}

    def _person(self, value: Any, name: str, *, required: bool = True) -> str:
        if value is None or value == "":
            if required:
                raise self._error(400, f"{name} is required: a Slack user ID")
            return ""
        if not isinstance(value, str):
            raise self._error(400, f"{name} must be a string")
        try:
            return limits.fitting(value.strip(), limits.PERSON, name)
        except limits.TooLongError as exc:
            raise self._error(400, str(exc)) from None

    async def _identify(self, person: str) -> None:
        if self.front.identify is not None and (unknown := await self.front.identify(person)):
            raise self._error(400, unknown)

    async def _admin(self, person: str) -> bool:
        return self.front.is_admin is None or await self.front.is_admin(person)

    def _changed(self) -> None:
        if self.front.grants_changed is not None:
            self.front.grants_changed()  # the Homes list delegations in force


def delegation_json(delegation: Delegation) -> dict[str, Any]:
    return {
        "id": delegation.id,
        "delegator": delegation.delegator,
        "delegate": delegation.delegate,
        "createdBy": delegation.created_by,
        "startsAt": delegation.starts_at.isoformat(),
        "endsAt": delegation.ends_at.isoformat(),
        "endedAt": delegation.ended_at.isoformat() if delegation.ended_at else None,
        "endedBy": delegation.ended_by,
    }


__all__ = ["ApiDelegations", "delegation_json"]
