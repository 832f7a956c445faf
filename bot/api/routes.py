"""The HTTP API's routes (aiohttp), in the contract's camelCase JSON.

Status codes: 400 bad input (a body that is not a JSON object, a missing `approver`, resume data
that fails the schema), 401 without the token, 403 when the tool's policy does not let that approver
decide, 404 for an unknown agent, run or call, 409 for a call already decided (or that waits for the
other kind of answer). Every error body is `{"error": "<what went wrong>"}`.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hmac
import logging
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from bot.admin import AdminInputError, agent_tools, change_policy, code_rule
from bot.agent import (
    Agent,
    AgentStream,
    AlreadyDecided,
    Approve,
    Cancel,
    CancelQuestion,
    Counted,
    Decided,
    Decision,
    DecisionKind,
    Decline,
    DeclineQuestion,
    Gone,
    GrantEnded,
    GrantRequest,
    Invalid,
    NoGrant,
    RefusalReason,
    Refused,
    Resume,
    ToolCallState,
    offered_actions,
    revoke_grant,
    waits_instead,
)
from memory import SYSTEM, Grant, PolicyChange, ToolPolicy, limits
from tools import JsonValueError, clean_text, read_json

from .delegations import ApiDelegations
from .openapi import camel, json_type, openapi_document

log = logging.getLogger("bot.api")

PREFIX = "/api/agents/{agent_id}"
CALL = PREFIX + "/runs/{run_id}/tool-calls/{tool_call_id}"


@dataclass(frozen=True, kw_only=True)
class ApiDecision:
    """A decision the API made, as the front end shows it."""

    action: str
    """`approve`, `decline`, `answer` (a resume) or `cancel`."""
    user_id: str
    """The approver the token holder names (for a resume: `resumedBy`, or empty)."""
    run_id: str
    tool_call_id: str
    tool_name: str
    args: Any


@dataclass(kw_only=True)
class ApiFront:
    """What the API needs besides the runtime (which holds the rule of who may decide): who is a person,
    who is an admin, and a way to show a decision."""

    agent: Agent
    token: str
    identify: Callable[[str], Awaitable[str | None]] | None = None
    """None when the named approver (or `resumedBy`) is a person the workspace knows; otherwise why
    not (400). Without it any non-empty name is taken."""
    after_decision: Callable[[ApiDecision, AgentStream | None], Awaitable[None]] | None = None
    """Called with the decision and the run's `AgentStream` as it goes on (e.g. to update Slack); None for
    an approval that counted while the call waits for more (four eyes)."""
    is_admin: Callable[[str], Awaitable[bool]] | None = None
    """Whether a person the body names as `actor` of a policy change (or `revokedBy` of someone else's
    standing grant) is an admin (403 otherwise); None: anyone named is taken."""
    grants_changed: Callable[[], None] | None = None
    """Called after a standing grant was revoked, or a policy changed (which may end grants), e.g. to
    refresh the App Homes that list them."""


class ApiError(Exception):
    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status
        self.message = message


def add_api_routes(web_app: web.Application, front: ApiFront) -> None:
    """Add the API's routes to `web_app` (the bot's aiohttp app)."""
    api = _Api(front)
    web_app.router.add_get("/api/openapi.json", api.openapi)
    web_app.router.add_get(PREFIX + "/suspended-runs", api.suspended_runs)
    web_app.router.add_post(CALL + "/approve", api.approve)
    web_app.router.add_post(CALL + "/decline", api.decline)
    web_app.router.add_post(CALL + "/resume", api.resume)
    web_app.router.add_post(CALL + "/cancel", api.cancel)
    web_app.router.add_post(PREFIX + "/decisions", api.bulk_decisions)
    web_app.router.add_get(PREFIX + "/grants", api.grants)
    web_app.router.add_post(PREFIX + "/grants/{grant_id}/revoke", api.revoke_grant)
    web_app.router.add_get("/api/policies", api.policies)
    web_app.router.add_patch("/api/policies/{tool}", api.change_policy)
    ApiDelegations(front, answer=api._answer, error=ApiError, body=_json_object).add_routes(web_app)


class _Api:
    def __init__(self, front: ApiFront):
        self.front = front
        self.tasks: set[asyncio.Task] = set()
        """What the front shows after each decision (`_show`), held until done. The web server's stop does not
        cut it off: it relays a run that goes on, which gets the shutdown's grace as a click's does; what is
        left after the grace is cut off before the storage closes (`bot.cli._run`)."""

    async def openapi(self, _request: web.Request) -> web.Response:
        return web.json_response(openapi_document())

    async def suspended_runs(self, request: web.Request) -> web.Response:
        return await self._answer(request, self._suspended_runs)

    async def approve(self, request: web.Request) -> web.Response:
        return await self._answer(request, self._decide, "approve")

    async def decline(self, request: web.Request) -> web.Response:
        return await self._answer(request, self._decide, "decline")

    async def resume(self, request: web.Request) -> web.Response:
        return await self._answer(request, self._decide, "answer")

    async def cancel(self, request: web.Request) -> web.Response:
        return await self._answer(request, self._decide, "cancel")

    async def bulk_decisions(self, request: web.Request) -> web.Response:
        return await self._answer(request, self._bulk_decisions)

    async def grants(self, request: web.Request) -> web.Response:
        return await self._answer(request, self._grants)

    async def revoke_grant(self, request: web.Request) -> web.Response:
        return await self._answer(request, self._revoke_grant)

    async def policies(self, request: web.Request) -> web.Response:
        return await self._answer(request, self._policies, agent=False)

    async def change_policy(self, request: web.Request) -> web.Response:
        return await self._answer(request, self._change_policy, agent=False)

    async def _answer(
        self, request: web.Request, handler: Callable[..., Awaitable[Any]], *args: Any, agent: bool = True
    ) -> web.Response:
        try:
            self._check_token(request)
            if agent and (agent_id := _path(request, "agent_id")) != self.front.agent.id:
                raise ApiError(404, f"unknown agent {agent_id!r}")
            return web.json_response(await handler(request, *args))
        except ApiError as exc:
            return web.json_response({"error": exc.message}, status=exc.status)

    def _check_token(self, request: web.Request) -> None:
        scheme, _, given = request.headers.get("Authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(given.strip().encode(), self.front.token.encode()):
            raise ApiError(401, "a valid bearer token is required (Authorization: Bearer $BOT_API_TOKEN)")

    async def _suspended_runs(self, request: web.Request) -> dict[str, Any]:
        page = _whole(_query(request, "page", "0"), "page", minimum=0, maximum=MAX_PAGE)
        per_page = _whole(_query(request, "perPage", "50"), "perPage", minimum=1, maximum=200)
        viewer = _query(request, "viewer") or None
        if viewer is not None:
            await self._identify(viewer)
        found = await self.front.agent.list_suspended_runs(
            thread_id=_query(request, "threadId") or None,
            resource_id=_query(request, "resourceId") or None,
            page=page,
            per_page=per_page,
        )
        runs = []
        for run in found.runs:
            calls = []
            for call in run.tool_calls:
                shown = {
                    "toolCallId": call.tool_call_id,
                    "toolName": call.tool_name,
                    "args": call.args,
                    "requiresApproval": call.requires_approval,
                    "suspendPayload": call.suspend_payload,
                    "preview": call.preview.as_json() if call.preview is not None else None,
                    "escalatedAt": call.escalated_at.isoformat() if call.escalated_at else None,
                    "rule": call.rule,
                }
                calls.append(shown | await self._view_json(run.run_id, call.tool_call_id, viewer))
            runs.append(
                {
                    "runId": run.run_id,
                    "status": run.status,
                    "threadId": run.thread_id,
                    "resourceId": run.resource_id,
                    "suspendedAt": run.suspended_at.isoformat() if run.suspended_at else None,
                    "toolCalls": calls,
                }
            )
        return {"runs": runs, "total": found.total, "totalExact": found.total_exact}

    async def _view_json(self, run_id: str, tool_call_id: str, viewer: str | None) -> dict[str, Any]:
        """The runtime's one view of a waiting call, as the thread's message and the Home show it: who asked,
        the approvals so far, who may decide and until when, the grant on offer, and the actions the rule
        allows `viewer` (without one: the actions someone may take)."""
        agent = self.front.agent
        shown = await agent.waiting_call_view(run_id, tool_call_id)
        if shown is None:  # it stopped waiting between the two reads
            return {"requester": None, "approvals": [], "approvalsRequired": 1, "deciders": [], "answerers": [],
                    "expiresAt": None, "grantSeconds": None, "actions": []}  # fmt: skip
        if viewer is None:
            actions = await offered_actions(shown)
        else:
            actions = await agent.actions_for(shown, viewer)
        return {
            "requester": shown.requester,
            "approvals": list(shown.approvals),
            "approvalsRequired": shown.approvals_required,
            "deciders": list(shown.deciders),
            "answerers": list(shown.answerers) if shown.is_question else [],
            "expiresAt": shown.expires_at.isoformat() if shown.expires_at else None,
            "grantSeconds": shown.grant_seconds,
            "actions": sorted(str(action) for action in actions),
        }

    async def _decide(self, request: web.Request, action: str) -> dict[str, Any]:
        body = await _json_object(request)
        run_id, tool_call_id = _path(request, "run_id"), _path(request, "tool_call_id")
        if action == "answer":
            user_id = _optional_text(body, "resumedBy") or ""
            # a live question (an MCP server's) may be declined or cancelled instead of answered
            if _optional_text(body, "action") not in (None, "accept", "decline", "cancel"):
                raise ApiError(400, "action must be accept, decline or cancel")
            if "resumeData" not in body and _optional_text(body, "action") in (None, "accept"):
                raise ApiError(400, "resumeData is required")
        elif action == "cancel":
            user_id = _optional_text(body, "actor") or ""
            if not user_id:
                raise ApiError(400, "actor is required: the Slack user ID of who cancels")
        else:
            user_id = _optional_text(body, "approver") or ""
            if not user_id:
                raise ApiError(400, "approver is required: the Slack user ID of who decides")
        await self._identify(user_id)
        return await self._decide_call(action, _decision_of(action, body), user_id, run_id, tool_call_id)

    async def _identify(self, user_id: str) -> None:
        if user_id and self.front.identify is not None:
            unknown = await self.front.identify(user_id)
            if unknown:
                raise ApiError(400, unknown)

    async def _decide_call(
        self, action: str, decision: Decision, user_id: str, run_id: str, tool_call_id: str
    ) -> dict[str, Any]:
        """Decide one call for `user_id` (already identified); raises `ApiError` when nothing was decided."""
        agent = self.front.agent
        result = await agent.decide_as(run_id, tool_call_id, decision, actor=user_id or None, via="api")
        match result:
            case Gone():
                raise ApiError(404, f"no tool call {tool_call_id!r} in run {run_id!r}")
            case AlreadyDecided(record=record):
                if isinstance(decision, DeclineQuestion | CancelQuestion) and record.waits_for(DecisionKind.RESUME):
                    raise ApiError(409, "only a live question (an MCP server's) can be declined or cancelled: "
                                   "send resumeData")  # fmt: skip
                raise ApiError(409, _not_waiting(record.state, decision.kind))
            case Invalid():
                raise ApiError(400, result.message)
            case Refused():
                raise ApiError(409 if result.reason == RefusalReason.HELD_ELSEWHERE else 403, result.text())
        assert isinstance(result, Decided | Counted)
        record = result.record
        asked = ApiDecision(
            action=action, user_id=user_id, run_id=run_id, tool_call_id=tool_call_id, tool_name=record.tool_name,
            args=record.args,
        )  # fmt: skip
        for_whom = record.named(user_id)[1] if user_id else None  # a delegate: whom they stood in for
        if isinstance(result, Counted):  # four eyes: this approval counted; the call waits for more
            self._show(asked, None)
            return {"runId": run_id, "toolCallId": tool_call_id, "status": "waiting",
                    "approvals": list(result.approvals)} | ({"onBehalfOf": for_whom} if for_whom else {})  # fmt: skip
        self._show(asked, result.stream)
        # a live question's refusal is said as the question's outcome
        decided = record.decision or decision.kind
        refused = decided in (DecisionKind.DECLINE_QUESTION, DecisionKind.CANCEL_QUESTION)
        status = decided.outcome if refused else decided.recorded_as
        answer: dict[str, Any] = {"runId": run_id, "toolCallId": tool_call_id, "status": status}
        if for_whom:
            answer["onBehalfOf"] = for_whom
        if isinstance(decision, Approve) and decision.grant is not None:
            answer["grant"] = _grant_json(result.grant) if result.grant is not None else None
        return answer

    async def _grants(self, request: web.Request) -> dict[str, Any]:
        """The agent's live standing grants, soonest to end first; `grantedBy=U...` for one granter's."""
        agent = self.front.agent
        granted_by = _query(request, "grantedBy") or None
        found = await agent.storage.grants.live(agent_id=agent.id, granted_by=granted_by)
        return {"grants": [_grant_json(grant) for grant in found]}

    async def _revoke_grant(self, request: web.Request) -> dict[str, Any]:
        """End a live standing grant now, for `revokedBy` (the granter, or an admin of the workspace);
        audited `grant_revoked` via `api`. The very next proposed call no longer finds it."""
        body = await _json_object(request)
        user_id = _optional_text(body, "revokedBy") or ""
        if not user_id:
            raise ApiError(400, "revokedBy is required: the Slack user ID of who revokes the grant")
        await self._identify(user_id)
        result = await revoke_grant(self.front.agent, _path(request, "grant_id"), actor=user_id, via="api")
        match result:
            case NoGrant(grant_id=grant_id):
                raise ApiError(404, f"no standing grant {grant_id!r}")
            case Refused():
                raise ApiError(403, result.text())
            case GrantEnded():
                raise ApiError(409, "this grant already ended (revoked or past its end)")
        if self.front.grants_changed is not None:
            self.front.grants_changed()
        return {"status": "revoked", "grant": _grant_json(result.grant)}

    async def _bulk_decisions(self, request: web.Request) -> dict[str, Any]:
        """Several decisions by one approver, each made as if asked alone (its own policy check, counted
        once, audited each): one result per item, in order, `status` or `error` with the HTTP code it
        would have had alone. A malformed body decides nothing (400)."""
        body = await _json_object(request)
        user_id = _optional_text(body, "approver") or ""
        if not user_id:
            raise ApiError(400, "approver is required: the Slack user ID of who decides")
        items = body.get("decisions")
        if not isinstance(items, list) or not 1 <= len(items) <= MAX_BULK:
            raise ApiError(400, f"decisions must be a list of 1 to {MAX_BULK} items")
        asked = []
        for index, item in enumerate(items):
            if not isinstance(item, dict):
                raise ApiError(400, f"decisions[{index}] must be an object")
            unknown = sorted(set(item) - {"runId", "toolCallId", "action", "reason"})
            if unknown:
                raise ApiError(400, f"decisions[{index}] has unknown fields: {', '.join(unknown)[:200]}")
            run_id, tool_call_id = _optional_text(item, "runId"), _optional_text(item, "toolCallId")
            if not run_id or not tool_call_id:
                raise ApiError(400, f"decisions[{index}] needs runId and toolCallId")
            action = _optional_text(item, "action")
            if action not in ("approve", "decline"):
                raise ApiError(400, f"decisions[{index}].action must be approve or decline")
            reason = _optional_text(item, "reason")
            if reason is not None and action != "decline":
                raise ApiError(400, f"decisions[{index}]: a reason goes with a decline")
            asked.append((clean_text(run_id), clean_text(tool_call_id), action, _decision_of(action, item)))
        await self._identify(user_id)
        results = []
        for run_id, tool_call_id, action, decision in asked:
            try:
                done = await self._decide_call(action, decision, user_id, run_id, tool_call_id)
                results.append({**done, "code": 200})
            except ApiError as exc:
                results.append({"runId": run_id, "toolCallId": tool_call_id, "error": exc.message, "code": exc.status})
        return {"results": results}

    async def _policies(self, _request: web.Request) -> dict[str, Any]:
        storage = self.front.agent.storage
        tools = agent_tools(self.front.agent)
        stored = {p.tool_name: p for p in await storage.policies.all()}
        return {
            "policies": [
                _policy_json(stored.get(name) or ToolPolicy(tool_name=name), code_rule(tools.get(name)))
                for name in sorted(set(tools) | set(stored))
            ]
        }

    async def _change_policy(self, request: web.Request) -> dict[str, Any]:
        """Patch one tool's policy with the body's fields (`PolicyChange`'s, in camelCase), as the CLI and the
        Home do; audited `policy_changed` via `api`, by `actor` if the body names one (who must be an admin
        of the workspace), else by `system` (the token holder, as the CLI's operator)."""
        tool = _path(request, "tool")
        body = await _json_object(request)
        actor = _optional_text(body, "actor")
        fields = {camel(f.name): f.name for f in dataclasses.fields(PolicyChange)}
        unknown = sorted(set(body) - set(fields) - {"actor"})
        if unknown:
            raise ApiError(400, f"unknown fields {', '.join(unknown)[:200]}; a policy has: {', '.join(fields)}")
        if not set(body) & set(fields):
            raise ApiError(400, f"nothing to change: give one of {', '.join(fields)}")
        values = {}
        for key, name in fields.items():
            if key in body:
                values[name] = _policy_value(key, body[key], PolicyChange.__dataclass_fields__[name].type)
        if actor is not None:
            await self._identify(actor)
            if self.front.is_admin is not None and not await self.front.is_admin(actor):
                raise ApiError(403, f"only admins change tool policies; {actor} is not one")
        try:
            policy = await change_policy(
                self.front.agent.storage, self.front.agent, tool, PolicyChange(**values),
                actor=actor or SYSTEM, via="api", detail=None if actor else "HTTP API: the token holder",
            )  # fmt: skip
        except AdminInputError as exc:
            raise ApiError(400, str(exc)) from None
        if self.front.grants_changed is not None:
            self.front.grants_changed()  # the change may have ended grants an opened Home lists
        return _policy_json(policy, code_rule(agent_tools(self.front.agent).get(policy.tool_name)))

    def _show(self, decision: ApiDecision, stream: AgentStream | None) -> None:
        """Let the front end show the decision and relay the run, after the response is sent."""
        if self.front.after_decision is None:
            return
        task = asyncio.create_task(self._after(decision, stream))
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def _after(self, decision: ApiDecision, stream: AgentStream | None) -> None:
        if self.front.after_decision is None:
            return
        try:
            await self.front.after_decision(decision, stream)
        except Exception:
            log.exception("showing the decision about %s/%s failed", decision.run_id, decision.tool_call_id)


MAX_BULK = 100
"""Items of one bulk decision request."""


def _policy_json(policy: ToolPolicy, code: str) -> dict[str, Any]:
    """A policy as the API shows it: every field of `ToolPolicy.fields()` in camelCase, with what the code
    says (`always`, `sometimes`, `never`, `unknown`) and the version."""
    return {
        "tool": policy.tool_name,
        "code": code,
        **{camel(name): value for name, value in policy.fields().items()},
        "version": policy.version,
        "updatedBy": policy.updated_by,
        "updatedAt": policy.updated_at.isoformat() if policy.updated_at else None,
    }


def _policy_value(key: str, value: Any, annotation: Any) -> Any:
    """A body value for the `PolicyChange` field annotated `annotation`, of the JSON type it needs (a list of
    strings for an `Iterable[str]`, a boolean, a whole number; a string where a mode or text is); the field's
    own rules (`PolicyChange.checked`) come after."""
    wanted = json_type(annotation)["type"]
    if value is None:
        raise ApiError(400, f"{key} cannot be null: leave it out to keep it")
    if key == "rules":
        if not isinstance(value, list) or not all(isinstance(item, dict) for item in value):
            raise ApiError(400, "rules must be a list of objects, each with a condition and an effect")
        return value  # each rule is checked whole (`bot.admin.checked_rules`)
    if wanted == "array":
        if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
            raise ApiError(400, f"{key} must be a list of strings")
        return [clean_text(item) for item in value]
    if wanted == "boolean":
        if not isinstance(value, bool):
            raise ApiError(400, f"{key} must be true or false")
        return value
    if wanted == "integer":
        if isinstance(value, bool) or not isinstance(value, int):
            raise ApiError(400, f"{key} must be a whole number")
        return value
    if not isinstance(value, str):
        raise ApiError(400, f"{key} must be a string")
    return clean_text(value)


def _grant_json(grant: Grant) -> dict[str, Any]:
    return {
        "grantId": grant.id,
        "toolName": grant.tool_name,
        "threadId": grant.thread_id,
        "grantedBy": grant.granted_by,
        "runId": grant.run_id,
        "toolCallId": grant.tool_call_id,
        "sameArguments": grant.same_arguments,
        "argsFingerprint": grant.args_fingerprint,
        "policyVersion": grant.policy_version,
        "grantedAt": grant.granted_at.isoformat(),
        "expiresAt": grant.expires_at.isoformat(),
        "revokedAt": grant.revoked_at.isoformat() if grant.revoked_at else None,
        "revokedBy": grant.revoked_by,
    }


def _grant_request(body: dict[str, Any]) -> GrantRequest | None:
    """The body's `grant` on approve: absent or false (none), true, or {"sameArguments": bool, "seconds": int}."""
    asked = body.get("grant", False)
    if asked is False or asked is None:
        return None
    if asked is True:
        return GrantRequest()
    if not isinstance(asked, dict):
        raise ApiError(400, 'grant must be true or an object {"sameArguments": true|false, "seconds": N}')
    unknown = sorted(set(asked) - {"sameArguments", "seconds"})
    if unknown:
        raise ApiError(400, f"unknown grant fields {', '.join(unknown)[:200]}; a grant has sameArguments, seconds")
    same = asked.get("sameArguments", False)
    if not isinstance(same, bool):
        raise ApiError(400, "grant.sameArguments must be true or false")
    seconds = asked.get("seconds")
    if seconds is not None and (isinstance(seconds, bool) or not isinstance(seconds, int) or seconds < 1):
        raise ApiError(400, "grant.seconds must be a whole number of seconds, 1 or more")
    return GrantRequest(same_arguments=same, seconds=seconds)


def _decision_of(action: str, body: dict[str, Any]) -> Decision:
    """The decision a route is asked for: `approve` (with the body's `grant`, a standing grant), `decline`
    (with the body's `reason`), `answer` (a resume, or with `"action": "decline" | "cancel"` a live question's
    refusal)."""
    if action == "approve":
        return Approve(grant=_grant_request(body))
    if action == "decline":
        return Decline(reason=_optional_text(body, "reason"))
    if action == "cancel":
        return Cancel(reason=_optional_text(body, "reason"))
    refusal = _optional_text(body, "action")
    if refusal == "decline":
        return DeclineQuestion()
    if refusal == "cancel":
        return CancelQuestion()
    return Resume(body["resumeData"])


_ROUTES = {
    ToolCallState.SUSPENDED: "use /resume or /cancel",
    ToolCallState.AWAITING_APPROVAL: "use /approve, /decline or /cancel",
}
"""The route that gives a waiting call the answer it waits for."""


def _not_waiting(state: str | None, kind: DecisionKind) -> str:
    instead = waits_instead(state, kind)
    if instead and state is not None:
        return f"this call {instead}: {_ROUTES[ToolCallState(state)]}"
    return f"this call was already decided (it is {state})" if state else "this call no longer waits"


# --- reading a request: the body, the path and the query, each the same way ----------------------
# Text is cleaned (tools.clean_text: NUL removed, lone surrogates -> U+FFFD) and an id or name is no
# longer than the column it is looked up in or stored in (`_LIMITS`), so that no id or value reaches the
# database in a form it refuses; numbers must be finite; the body is UTF-8 JSON.
MAX_PAGE = 1_000_000
"""The highest `page` (with `perPage` at most 200 the offset stays far within any database's integers)."""


async def _json_object(request: web.Request) -> dict[str, Any]:
    raw = await request.read()
    try:
        body = read_json(raw) if raw.strip() else {}
    except JsonValueError as exc:
        raise ApiError(400, f"the body is not JSON: {exc}") from None
    if not isinstance(body, dict):
        raise ApiError(400, "the body must be a JSON object")
    return body


_LIMITS = {
    "run_id": limits.RUN_ID,
    "runId": limits.RUN_ID,
    "tool_call_id": limits.TOOL_CALL_ID,
    "toolCallId": limits.TOOL_CALL_ID,
    "grant_id": limits.GRANT_ID,
    "tool": limits.TOOL_NAME,
    "threadId": limits.THREAD_ID,
    "resourceId": limits.RESOURCE_ID,
    **dict.fromkeys(("approver", "resumedBy", "revokedBy", "actor", "grantedBy"), limits.PERSON),
}
"""The most characters of each path, query and body field that names something stored (its column's width)."""


def _path(request: web.Request, name: str) -> str:
    return _fitting(clean_text(request.match_info[name]), name)


def _query(request: web.Request, name: str, default: str = "") -> str:
    return _fitting(clean_text(request.query.get(name, default)), name)


def _optional_text(body: dict[str, Any], name: str) -> str | None:
    value = body.get(name)
    if value is None:
        return None
    if not isinstance(value, str):
        raise ApiError(400, f"{name} must be a string")
    return _fitting(value.strip(), name)


def _fitting(value: str, name: str) -> str:
    try:
        return limits.fitting(value, _LIMITS[name], name) if name in _LIMITS else value
    except limits.TooLongError as exc:
        raise ApiError(400, str(exc)) from None


_WHOLE = re.compile(r"-?[0-9]{1,19}")


def _whole(value: str, name: str, *, minimum: int, maximum: int | None = None) -> int:
    if _WHOLE.fullmatch(value) is None:  # int() also reads "٣", " 3", "1_000" and 4,000 digits
        raise ApiError(400, f"{name} must be a whole number, not {value[:20]!r}")
    number = int(value)
    if number < minimum or (maximum is not None and number > maximum):
        bound = f"between {minimum} and {maximum}" if maximum is not None else f"at least {minimum}"
        raise ApiError(400, f"{name} must be {bound}")
    return number
