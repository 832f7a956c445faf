"""The HTTP API's routes (aiohttp), in the contract's camelCase JSON.

Status codes: 400 bad input (a body that is not a JSON object, a missing `approver`, resume data
that fails the schema), 401 without the token, 403 when the tool's policy does not let that approver
decide, 404 for an unknown agent, run or call, 409 for a call already decided (or that waits for the
other kind of answer). Every error body is `{"error": "<what went wrong>"}`.
"""

from __future__ import annotations

import asyncio
import hmac
import logging
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from bot.agent import (
    Agent,
    AgentStream,
    ApprovalNotCountedError,
    Approve,
    CancelQuestion,
    Decision,
    DecisionKind,
    Decline,
    DeclineQuestion,
    QuestionHeldElsewhereError,
    Resume,
    ResumeDataInvalidError,
    SnapshotNotFoundError,
    ToolCallNotSuspendedError,
    ToolCallState,
    waits_instead,
)
from tools import JsonValueError, clean_text, read_json

from .openapi import openapi_document

log = logging.getLogger("bot.api")

PREFIX = "/api/agents/{agent_id}"
CALL = PREFIX + "/runs/{run_id}/tool-calls/{tool_call_id}"


@dataclass(frozen=True, kw_only=True)
class ApiDecision:
    """A decision the API was asked to make, as the decision rule sees it."""

    action: str
    """`approve`, `decline` or `answer` (a resume)."""
    user_id: str
    """The approver the token holder names (for a resume: `resumedBy`, or empty)."""
    run_id: str
    tool_call_id: str
    tool_name: str
    args: Any


@dataclass(kw_only=True)
class ApiFront:
    """What the API needs besides the runtime: the rule, and a way to show a decision."""

    agent: Agent
    token: str
    identify: Callable[[str], Awaitable[str | None]] | None = None
    """None when the named approver (or `resumedBy`) is a person the workspace knows; otherwise why
    not (400). Without it any non-empty name is taken."""
    authorize: Callable[[ApiDecision], Awaitable[str | None]] | None = None
    """None when allowed; otherwise the explanation of the refusal (403), in plain text."""
    after_decision: Callable[[ApiDecision, AgentStream], Awaitable[None]] | None = None
    """Called with the decision and the run's `AgentStream` as it goes on (e.g. to update Slack)."""


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
    web_app.on_cleanup.append(api.finish)


class _Api:
    def __init__(self, front: ApiFront):
        self.front = front
        self.tasks: set[asyncio.Task] = set()

    async def finish(self, _app: web.Application) -> None:
        for task in list(self.tasks):
            task.cancel()

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

    async def _answer(self, request: web.Request, handler: Callable[..., Awaitable[Any]], *args: Any) -> web.Response:
        try:
            self._check_token(request)
            if (agent_id := _path(request, "agent_id")) != self.front.agent.id:
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
        found = await self.front.agent.list_suspended_runs(
            thread_id=_query(request, "threadId") or None,
            resource_id=_query(request, "resourceId") or None,
            page=page,
            per_page=per_page,
        )
        return {
            "runs": [
                {
                    "runId": run.run_id,
                    "status": run.status,
                    "threadId": run.thread_id,
                    "resourceId": run.resource_id,
                    "suspendedAt": run.suspended_at.isoformat() if run.suspended_at else None,
                    "toolCalls": [
                        {
                            "toolCallId": call.tool_call_id,
                            "toolName": call.tool_name,
                            "args": call.args,
                            "requiresApproval": call.requires_approval,
                            "suspendPayload": call.suspend_payload,
                            "preview": call.preview.as_json() if call.preview is not None else None,
                        }
                        for call in run.tool_calls
                    ],
                }
                for run in found.runs
            ],
            "total": found.total,
            "totalExact": found.total_exact,
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
        else:
            user_id = _optional_text(body, "approver") or ""
            if not user_id:
                raise ApiError(400, "approver is required: the Slack user ID of who decides")
        if user_id and self.front.identify is not None:
            unknown = await self.front.identify(user_id)
            if unknown:
                raise ApiError(400, unknown)
        decision = _decision_of(action, body)

        agent = self.front.agent
        record = await agent.get_tool_call(run_id, tool_call_id)
        if record is None:
            raise ApiError(404, f"no tool call {tool_call_id!r} in run {run_id!r}")
        if not record.waits_for(decision.kind):
            raise ApiError(409, _not_waiting(record.state, decision.kind))
        if isinstance(decision, DeclineQuestion | CancelQuestion) and not record.live_question:
            raise ApiError(409, "only a live question (an MCP server's) can be declined or cancelled: send resumeData")
        asked = ApiDecision(
            action=action,
            user_id=user_id,
            run_id=run_id,
            tool_call_id=tool_call_id,
            tool_name=record.tool_name,
            args=record.args,
        )
        if self.front.authorize is not None:
            refusal = await self.front.authorize(asked)
            if refusal:
                raise ApiError(403, refusal)
        try:
            stream = await agent.decide(run_id, tool_call_id, decision, decided_by=user_id or None, via="api")
        except ResumeDataInvalidError as exc:
            raise ApiError(400, str(exc)) from None
        except SnapshotNotFoundError:
            raise ApiError(404, f"no run {run_id!r}") from None
        except ToolCallNotSuspendedError as exc:
            raise ApiError(409, _not_waiting(exc.state, decision.kind)) from None
        except QuestionHeldElsewhereError as exc:
            raise ApiError(409, str(exc)) from None
        except ApprovalNotCountedError as exc:
            raise ApiError(403, f"this approval does not count: {exc.why}") from None
        self._show(asked, stream)
        if isinstance(decision, Approve):
            after = await agent.get_tool_call(run_id, tool_call_id)
            if after is not None and after.waits_for(decision.kind):
                # four eyes: this approval counted; the call waits for more
                return {"runId": run_id, "toolCallId": tool_call_id, "status": "waiting",
                        "approvals": list(after.approvals)}  # fmt: skip
        refused = isinstance(decision, DeclineQuestion | CancelQuestion)  # said as the question's outcome
        status = decision.kind.outcome if refused else decision.kind.recorded_as
        return {"runId": run_id, "toolCallId": tool_call_id, "status": status}

    def _show(self, decision: ApiDecision, stream: AgentStream) -> None:
        """Let the front end show the decision and relay the run, after the response is sent."""
        if self.front.after_decision is None:
            return
        task = asyncio.create_task(self._after(decision, stream))
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def _after(self, decision: ApiDecision, stream: AgentStream) -> None:
        try:
            await self.front.after_decision(decision, stream)
        except Exception:
            log.exception("showing the decision about %s/%s failed", decision.run_id, decision.tool_call_id)


def _decision_of(action: str, body: dict[str, Any]) -> Decision:
    """The decision a route is asked for: `approve`, `decline` (with the body's `reason`), `answer` (a resume,
    or with `"action": "decline" | "cancel"` a live question's refusal)."""
    if action == "approve":
        return Approve()
    if action == "decline":
        return Decline(reason=_optional_text(body, "reason"))
    refusal = _optional_text(body, "action")
    if refusal == "decline":
        return DeclineQuestion()
    if refusal == "cancel":
        return CancelQuestion()
    return Resume(body["resumeData"])


_ROUTES = {ToolCallState.SUSPENDED: "use /resume", ToolCallState.AWAITING_APPROVAL: "use /approve or /decline"}
"""The route that gives a waiting call the answer it waits for."""


def _not_waiting(state: str | None, kind: DecisionKind) -> str:
    instead = waits_instead(state, kind)
    if instead:
        return f"this call {instead}: {_ROUTES[ToolCallState(state)]}"
    return f"this call was already decided (it is {state})" if state else "this call no longer waits"


# --- reading a request: the body, the path and the query, each the same way ----------------------
# Text is cleaned (tools.clean_text: NUL removed, lone surrogates -> U+FFFD) so that no id or value
# reaches the database in a form it refuses; numbers must be finite; the body is UTF-8 JSON.
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


def _path(request: web.Request, name: str) -> str:
    return clean_text(request.match_info[name])


def _query(request: web.Request, name: str, default: str = "") -> str:
    return clean_text(request.query.get(name, default))


def _optional_text(body: dict[str, Any], name: str) -> str | None:
    value = body.get(name)
    if value is None:
        return None
    if not isinstance(value, str):
        raise ApiError(400, f"{name} must be a string")
    return value.strip()


_WHOLE = re.compile(r"-?[0-9]{1,19}")


def _whole(value: str, name: str, *, minimum: int, maximum: int | None = None) -> int:
    if _WHOLE.fullmatch(value) is None:  # int() also reads "٣", " 3", "1_000" and 4,000 digits
        raise ApiError(400, f"{name} must be a whole number, not {value[:20]!r}")
    number = int(value)
    if number < minimum or (maximum is not None and number > maximum):
        bound = f"between {minimum} and {maximum}" if maximum is not None else f"at least {minimum}"
        raise ApiError(400, f"{name} must be {bound}")
    return number
