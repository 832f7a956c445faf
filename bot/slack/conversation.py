"""One turn of a conversation in a Slack thread: run the agent, and relay what it produces.

Text is streamed into the thread (`replies`); an approval or a question becomes its own message
with buttons (`waiting_messages`), recorded so a later click, on any replica, can be checked against it.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Any

from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bot.agent import AgentError, AgentStream, DatabaseAwayError, MessageTakenError

from .feedback_builder import build_feedback_block
from .lost_answers import answer_shown
from .mrkdwn import slack_date
from .replies import Step, ThinkingStatus, ThreadReply, args_line
from .services import SlackServices
from .stores.waiting_call_messages import ShownMessage
from .tables import SlackConversationRow, ToolCallMessageRow
from .threads import SlackThread
from .translator import Translator
from .waiting_messages import post_waiting_call, refresh_open_messages

_MENTION = re.compile(r"<@[A-Z0-9]+>")


def strip_mention(text: str, bot_user_id: str | None) -> str:
    """The message without the bot's mention (`<@U0BOT> delete record 3` -> `delete record 3`)."""
    if bot_user_id:
        text = text.replace(f"<@{bot_user_id}>", " ")
    return re.sub(r"\s+", " ", text).strip()


async def answer_message(
    services: SlackServices,
    client: AsyncWebClient,
    *,
    thread: SlackThread,
    user: str,
    text: str,
    owner: str | None = None,
    new: bool = False,
    message_id: str | None = None,
    conversation: SlackConversationRow | None = None,
) -> None:
    """Run the agent on `user`'s message in `thread` and write its answer there; `new`: the message
    started the conversation (the thread holds no message of the bot's yet); `message_id`: the message's
    ts, which one run or one answered question takes, once (a replica that stalled past its lease while
    another answered the message says nothing); `conversation`: the thread's record, read when the turn
    started (its language is not read again).

    The memory thread belongs to the conversation's `owner` (who started it; the runtime refuses a
    thread to any other resource), so that is the `resource_id`; others in the thread speak in it too,
    and the model is told who is speaking.

    With memory attached, the runtime first checks whether the message answers a question a tool
    asked in this thread (auto-resume); question messages that got answered are then closed.
    """
    owner = owner or user

    async def start() -> AgentStream:
        return await services.agent.stream(
            text if user == owner else f"<@{user}> says: {text}",
            thread_id=thread.thread_id,
            resource_id=owner,
            auto_resume_suspended_tools=True,
            request_context=request_context_of(thread, user),
            message_id=message_id,
        )

    await run_turn(
        services,
        client,
        start,
        thread=thread,
        requester=user,
        request_text=text,
        new=new,
        taken_again_if_away=True,
        conversation=conversation,
    )


async def continue_run(
    services: SlackServices,
    client: AsyncWebClient,
    stream: AgentStream,
    *,
    thread: SlackThread,
    requester: str,
    with_call: tuple[str, str] | None = None,
) -> list[tuple[ToolCallMessageRow, list[ShownMessage]]] | None:
    """Relay a run that goes on after a decision or an answer (`stream` from approve/decline/resume); the
    messages of `with_call` (run id, tool call id) as read with the thread's open ones after the turn (None:
    not read)."""

    async def start() -> AgentStream:
        return stream

    return await run_turn(
        services, client, start, thread=thread, requester=requester, request_text=None, with_call=with_call
    )


async def run_turn(
    services: SlackServices,
    client: AsyncWebClient,
    start: Callable[[], Awaitable[AgentStream]],
    *,
    thread: SlackThread,
    requester: str,
    request_text: str | None,
    new: bool = False,
    taken_again_if_away: bool = False,
    conversation: SlackConversationRow | None = None,
    with_call: tuple[str, str] | None = None,
) -> list[tuple[ToolCallMessageRow, list[ShownMessage]]] | None:
    """Show the thinking status, get the run's stream from `start`, relay it, and tell the thread if it
    failed; then close the messages of calls settled meanwhile (a question answered by this message),
    reading those of `with_call` with them: returned (None when they were not read).

    The status is asked for beside the run's start, not before it: the run is stored (and the model asked)
    while Slack answers, and a replica that stalls meanwhile leaves a message that has reached the runtime,
    which another replica continues instead of answering it a second time. Nothing is written in the
    thread before the status was set, so that the answer takes it away.

    A `new` conversation has no such messages: the thread held none of the bot's before this turn, and each
    message this turn posted was checked after its post (`post_recorded`: one whose call was settled
    meanwhile is brought up to date there), while a call settled later is shown by whoever settles it. Its
    thread is not read for them.

    `taken_again_if_away`: a turn of the thread's queue, which raises `DatabaseAwayError` (after saying nothing)
    when the database stayed away, so the queue takes the message again instead of marking it answered.
    `conversation`: the thread's record as the caller read it (for its language, see `ReaderLanguages`).
    """
    tr = await services.languages.of_thread(thread.thread_id, requester, conversation=conversation)
    status = ThinkingStatus(client, thread, tr)
    showing = asyncio.ensure_future(status.show())
    finish = None
    away: DatabaseAwayError | None = None
    try:
        try:
            stream = await start()
        finally:
            await showing
        finish = await relay(
            services,
            client,
            stream,
            thread=thread,
            requester=requester,
            request_text=request_text,
            status=status,
            tr=tr,
        )
        context = {"run_id": stream.run_id, "thread_id": thread.thread_id, "outcome": finish}
        services.logger.info("turn %s", finish or "ended", extra=context)
    except MessageTakenError as exc:
        # this replica stalled past the thread's lease and another answered the message meanwhile: its
        # answer stands, and anything said here would be a second one
        services.logger.warning("a message in %s was answered elsewhere: %s", thread.thread_id, exc)
    except DatabaseAwayError as exc:
        # longer than the storage waits for it: a notice that the turn failed would be false. What was stored
        # (the run) is picked up by recovery; the turn is taken again (`turn_queue`), so a message that never
        # reached the runtime is answered once the database is back, and one that did is not answered twice
        services.logger.warning("the database went away during a turn in %s: %s", thread.thread_id, exc)
        away = exc
    except Exception as exc:  # the thread must hear about it; the log gets the details
        services.logger.exception("the agent failed in %s", thread.thread_id)
        await _say_failed(client, thread, exc, status, tr)
    finally:
        await status.clear()  # only if no message posted since took it away
    if away is not None and taken_again_if_away:
        raise away
    if away is not None:
        return None
    if new:
        return None
    return await refresh_open_messages(services, client, thread.thread_id, with_call=with_call)


async def _say_failed(
    client: AsyncWebClient, thread: SlackThread, error: Exception, status: ThinkingStatus, tr: Translator
) -> None:
    # The runtime's own errors are written for people (in English, the runtime's language: shown as written);
    # anything else (a database's error text) is logged only.
    if isinstance(error, AgentError):
        text = tr.gettext("Sorry, that failed: {error}", error=str(error))
    else:
        text = tr.gettext("Sorry, that failed: something went wrong inside the bot (it is logged).")
    try:
        await client.chat_postMessage(channel=thread.channel, thread_ts=thread.thread_ts, text=f":warning: {text}")
        status.replied()
    except SlackApiError:
        pass


def request_context_of(thread: SlackThread, user: str) -> dict[str, Any]:
    """What tools and approval rules learn about the Slack request."""
    return {
        "workspace": thread.team_id,
        "channel": thread.channel,  # what an admin's rule reads as `channel`
        "requester": user,  # the speaker: whose message led to the calls (audit trail, self-approval)
        "slack": {"team_id": thread.team_id, "channel": thread.channel, "thread_ts": thread.thread_ts, "user": user},
    }


async def relay(
    services: SlackServices,
    client: AsyncWebClient,
    stream: Any,
    *,
    thread: SlackThread,
    requester: str,
    request_text: str | None,
    status: ThinkingStatus,
    tr: Translator,
) -> str | None:
    """Write an `AgentStream` into the thread until it finishes or stops at a waiting call; the finish reason.
    `tr`: the conversation's words."""
    reply = ThreadReply(
        client, thread, recipient=requester, streaming=services.streaming, logger=services.logger, status=status, tr=tr
    )
    finish = None
    started = time.monotonic()
    step_text = 0  # characters of text the current step streamed: not stored if the run was taken over
    try:
        async for chunk in stream.full_stream:
            step = step_of(chunk, tr)
            if step is not None and chunk.type == "tool-progress":
                await reply.progress(step)
            elif step is not None:
                # A call's step is shown in an answer already under way; otherwise it waits for the answer's
                # first words (the loading status says what runs, the approval message what waits), so a
                # process stopped before them leaves no message of cards without words.
                await reply.step(step, only_if_open=True)
            if chunk.type == "text-delta":
                text = chunk.payload.get("text", "")
                step_text += len(text)
                await reply.append(text)
            elif chunk.type == "step-finish":
                step_text = 0
            elif chunk.type in ("tool-call-approval", "tool-call-suspended"):
                await reply.close()
                await post_waiting_call(
                    services,
                    client,
                    chunk,
                    run_id=stream.run_id or chunk.run_id,
                    thread=thread,
                    requester=requester,
                    request_text=request_text,
                )
            elif chunk.type == "tool-call":
                tool = chunk.payload.get("tool_name")
                await status.show(
                    tr.gettext("is running {tool}…", tool=tool) if tool else tr.gettext("is running a tool…")
                )
            elif chunk.type == "error" and chunk.payload.get("taken_over"):
                # this replica stalled mid-step and another took the run over: its step's text is no answer
                if reply.take_back(step_text):
                    services.logger.warning("run %s: text of a step taken over was already shown", stream.run_id)
                await reply.append(f"\n\n:warning: {chunk.payload.get('message')}")
            elif chunk.type == "error" and chunk.payload.get("interrupted"):
                # the run did not fail (the database went away): recovery answers in this thread later
                services.logger.warning("run %s left to recovery: %s", stream.run_id, chunk.payload.get("message"))
            elif chunk.type == "error":
                why = chunk.payload.get("message") or tr.gettext("Something went wrong.")
                await reply.append(f"\n\n:warning: {why}")
            elif chunk.type == "finish":
                finish = chunk.payload.get("finish_reason")
        # A finished answer gets the feedback buttons; one that stops at a waiting call goes on later.
        run_id = stream.run_id
        feedback = build_feedback_block(run_id, tr) if finish == "stop" and run_id else None
        turns = getattr(services, "turns", None)  # set by `create_slack_app`
        lost_turn = turns is not None and turns.may_have_lost(thread.thread_id)
        stalled = services.stalls is not None and services.stalls.stalled_since(started)
        if feedback is not None and run_id and (lost_turn or stalled):
            # this process stalled, or its turn's lease lapsed: the replica that took its work over may have
            # shown the stored answer already (`lost_answers`)
            if await answer_shown(client, thread, run_id, await services.agent.stored_answer(run_id)) is True:
                services.logger.warning("run %s: its answer is in the thread already; not shown again", run_id)
                reply.take_back(reply.unsent)
                feedback = None
        await reply.close(feedback=feedback)
    finally:
        await reply.close()
    return finish


WAITING_STEPS = ("waiting for approval", "waiting for an answer")
_STEP_OF_CHUNK = {
    "tool-call": "running",
    "tool-call-approval": "waiting for approval",
    "tool-call-suspended": "waiting for an answer",
    "tool-output-denied": "declined",
}


def step_of(chunk: Any, tr: Translator) -> Step | None:
    """The thinking step a runtime chunk shows (a tool call started, waits, ended), or None; the bot's own
    words (under whose grant a call ran) in those of `tr`."""
    payload = chunk.payload
    if chunk.type == "tool-result":
        failed = bool(payload.get("is_error"))
        details = _short(payload.get("result")) if failed else None
        return Step(id=payload["tool_call_id"], tool_name=payload["tool_name"], state="failed" if failed else "done",
                    details=details)  # fmt: skip
    if chunk.type == "tool-progress":  # how far a running call has come, in the tool's words
        return Step(id=payload["tool_call_id"], tool_name=payload["tool_name"], state="running",
                    details=payload.get("message") or None)  # fmt: skip
    state = _STEP_OF_CHUNK.get(chunk.type)
    if state is None:
        return None
    details = payload.get("reason") if chunk.type == "tool-output-denied" else args_line(payload.get("args"))
    if chunk.type == "tool-call" and isinstance(payload.get("grant"), dict):
        details = granted_line(payload["grant"], tr)  # it runs without asking: say under whose grant
    return Step(id=payload["tool_call_id"], tool_name=payload["tool_name"], state=state, details=details or None)


def granted_line(grant: dict[str, Any], tr: Translator) -> str:
    """A call run under a standing grant, in the reader's words: "ran under <@U2>'s grant, until <date>"."""
    user = f"<@{grant.get('granted_by')}>"
    until = grant.get("expires_at")
    try:
        when = datetime.fromisoformat(until) if isinstance(until, str) else None
    except ValueError:
        when = None
    if when is None:
        return tr.gettext("ran under {user}'s grant", user=user)
    return tr.gettext("ran under {user}'s grant, until {date}", user=user, date=slack_date(when))


def _short(result: Any) -> str | None:
    if result is None:
        return None
    if isinstance(result, dict) and "error" in result:
        result = result["error"]
    return result if isinstance(result, str) else args_line(result)
