"""The Slack messages that show a waiting tool call: post them (approval or question), and update them
in place once the call no longer waits, whoever settled it (a click, the thread, the HTTP API).

Each message is recorded (`ToolCallMessageRow`) before it is posted; the record's id is the opaque
reference its buttons carry.
"""

from __future__ import annotations

from typing import Any

from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bot.agent import SnapshotNotFoundError, ToolCallNotSuspendedError

from .approval_builder import (
    ApprovalView,
    DecisionView,
    approval_text,
    build_approval_blocks,
    build_closed_approval_blocks,
    build_decided_approval_blocks,
    decided_text,
)
from .question_builder import (
    AnswerView,
    QuestionView,
    build_answered_question_blocks,
    build_question_blocks,
    question_text,
)
from .services import SlackServices, home_changed
from .tables import ToolCallMessageRow
from .threads import SlackThread

WAITING_STATE = {"approval": "awaiting_approval", "question": "suspended"}
"""The runtime state in which a call of each kind of message still waits."""


async def post_approval(
    services: SlackServices,
    client: AsyncWebClient,
    *,
    run_id: str,
    payload: dict[str, Any],
    thread: SlackThread,
    requester: str,
    request_text: str | None,
) -> ToolCallMessageRow:
    """Post the approval message of a `tool-call-approval` chunk's call."""
    row = await services.store.add_tool_call_message(
        kind="approval",
        run_id=run_id,
        tool_call_id=payload["tool_call_id"],
        tool_name=payload["tool_name"],
        args=payload.get("args"),
        thread=thread,
        requester=requester,
        request_text=request_text,
    )
    view = approval_view_of(services, row)
    response = await client.chat_postMessage(
        channel=thread.channel, thread_ts=thread.thread_ts, text=approval_text(view), blocks=build_approval_blocks(view)
    )
    await services.store.set_message_ts(row.id, str(response["ts"]))
    home_changed(services)
    return row


async def post_question(
    services: SlackServices,
    client: AsyncWebClient,
    *,
    run_id: str,
    payload: dict[str, Any],
    thread: SlackThread,
    requester: str,
) -> ToolCallMessageRow:
    """Post what a `tool-call-suspended` chunk's tool asks, with an Answer button."""
    row = await services.store.add_tool_call_message(
        kind="question",
        run_id=run_id,
        tool_call_id=payload["tool_call_id"],
        tool_name=payload["tool_name"],
        args=payload.get("suspend_payload"),  # a question's row keeps what the tool asked
        thread=thread,
        requester=requester,
        request_text=None,
    )
    view = question_view_of(row, answerable_by_form=payload.get("resume_schema") is not None)
    response = await client.chat_postMessage(
        channel=thread.channel, thread_ts=thread.thread_ts, text=question_text(view), blocks=build_question_blocks(view)
    )
    await services.store.set_message_ts(row.id, str(response["ts"]))
    return row


def approval_view_of(services: SlackServices, row: ToolCallMessageRow, args: Any = None) -> ApprovalView:
    tool = find_tool(services.agent, row.tool_name)
    return ApprovalView(
        ref=row.id,
        tool_name=row.tool_name,
        description=getattr(tool, "description", "") or "",
        args=row.args if args is None else args,
        requester=row.requester,
        request_text=row.request_text,
    )


def find_tool(agent: Any, tool_name: str) -> Any:
    """The tool named `tool_name` on the agent or, for a call that surfaced from a sub-agent, on the
    sub-agent that owns it (breadth first); None if nobody has it."""
    agents, seen = [agent], set()
    while agents:
        current = agents.pop(0)
        if id(current) in seen:
            continue
        seen.add(id(current))
        tool = (getattr(current, "tools", None) or {}).get(tool_name)
        if tool is not None:
            return tool
        agents.extend((getattr(current, "agents", None) or {}).values())
    return None


def question_view_of(row: ToolCallMessageRow, *, answerable_by_form: bool = True) -> QuestionView:
    return QuestionView(
        ref=row.id,
        tool_name=row.tool_name,
        suspend_payload=row.args,
        requester=row.requester,
        answerable_by_form=answerable_by_form,
    )


async def record_of(services: SlackServices, row: ToolCallMessageRow) -> Any:
    """The runtime's record of the message's call, or None if the run is gone."""
    try:
        return await services.agent.get_tool_call(row.run_id, row.tool_call_id)
    except (SnapshotNotFoundError, ToolCallNotSuspendedError):
        return None


def still_waits(row: ToolCallMessageRow, record: Any) -> bool:
    return record is not None and record.state == WAITING_STATE[row.kind]


async def refresh_message(
    services: SlackServices,
    client: AsyncWebClient,
    row: ToolCallMessageRow,
    *,
    answered_by: str | None = None,
    resume_data: Any = None,
) -> bool:
    """Update the message of `row` in place if its call no longer waits: no buttons, the outcome, who, when.

    Returns False (and changes nothing) while the call still waits, or before the message is posted.
    """
    record = await record_of(services, row)
    if still_waits(row, record) or row.ts is None:
        return False
    if row.kind == "approval":
        text, blocks = _settled_approval(services, row, record)
    else:
        answer = AnswerView(
            answered_by=answered_by,
            answered_at=getattr(record, "decided_at", None) if answered_by else None,
            resume_data=resume_data if resume_data is not None else getattr(record, "resume_data", None),
        )
        text, blocks = f"Answered: {row.tool_name}", build_answered_question_blocks(question_view_of(row), answer)
    await client.chat_update(channel=row.channel, ts=row.ts, text=text, blocks=blocks)
    await services.store.close_message(row.id)
    home_changed(services)
    return True


def _settled_approval(services: SlackServices, row: ToolCallMessageRow, record: Any) -> tuple[str, list]:
    if record is None:
        view = approval_view_of(services, row)
        return f"No longer waiting: {row.tool_name}", build_closed_approval_blocks(
            view, "This request is no longer waiting."
        )
    # A supervisor's call shows the inner tool's arguments; a direct call its own (edited ones if edited).
    shown = record.displayed_args
    view = approval_view_of(services, row, args=shown)
    decision = DecisionView(
        approved=_was_approved(record),
        decided_by=record.decided_by,
        decided_at=record.decided_at,
        reason=record.reason,
        edited=shown != row.args,
    )
    return decided_text(view, decision), build_decided_approval_blocks(view, decision)


def _was_approved(record: Any) -> bool:
    decision = getattr(record, "decision", None)
    if decision:
        return decision == "approved"
    return record.state not in ("declined", "expired")


async def refresh_open_messages(services: SlackServices, client: AsyncWebClient, thread_id: str) -> None:
    """Close every open message of the thread whose call was settled meanwhile (e.g. answered in the thread)."""
    for row in await services.store.open_messages_in_thread(thread_id):
        try:
            await refresh_message(services, client, row)
        except SlackApiError:
            services.logger.warning("could not update the message of %s/%s", row.run_id, row.tool_call_id)


async def refresh_tool_call_messages(
    services: SlackServices, client: AsyncWebClient, run_id: str, tool_call_id: str
) -> None:
    """Update the messages of a call decided outside Slack (the HTTP API) as a click would."""
    for row in await services.store.messages_of_call(run_id, tool_call_id):
        if row.closed_at is None:
            await refresh_message(services, client, row)
