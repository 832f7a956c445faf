"""The thumbs up / down under an answer: record the clicker's rating of the run, keyed to the tools it used.

The button's value names a run; it counts only when that run is the agent's and belongs to the thread
the click came from (a forged value cannot rate another conversation's answer). A second click by the
same person changes their rating; the same rating again changes nothing.
"""

from __future__ import annotations

from typing import Any

from slack_bolt.context.ack.async_ack import AsyncAck
from slack_bolt.context.async_context import AsyncBoltContext
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bot import metrics
from bot.agent import ToolCallState

from ...decisions import tell
from ...feedback_builder import read_feedback_value, thanks_text
from ...services import home_changed, services_of
from ...threads import SlackThread

RAN = (ToolCallState.DONE, ToolCallState.FAILED)
"""The calls an answer used: those whose tool ran."""


async def handle_feedback_button(
    ack: AsyncAck, body: dict[str, Any], client: AsyncWebClient, context: AsyncBoltContext
) -> None:
    await ack()
    services = services_of(context)
    action = (body.get("actions") or [{}])[0]
    container = body.get("container") or {}
    message = body.get("message") or {}
    user_id = (body.get("user") or {}).get("id") or ""
    channel = (body.get("channel") or {}).get("id") or container.get("channel_id") or ""
    message_ts = container.get("message_ts") or message.get("ts") or ""
    thread_ts = message.get("thread_ts") or container.get("thread_ts") or message_ts
    team_id = (body.get("team") or {}).get("id") or context.team_id or ""
    reading = read_feedback_value(action.get("value"))
    run = await services.agent.get_run(reading[1]) if reading is not None else None
    thread = SlackThread(team_id=team_id, channel=channel, thread_ts=thread_ts)
    if reading is None or run is None or run.thread_id != thread.thread_id or not user_id:
        services.logger.info("a feedback click on no answer of this thread (value %r)", action.get("value"))
        tr = await services.languages.of_person(user_id)
        await _tell(client, channel, user_id, thread_ts, tr.gettext("This answer can no longer be rated."))
        return
    rating, run_id = reading
    calls = await services.agent.list_tool_calls(run_id)
    tool_names = list(dict.fromkeys(call.tool_name for call in calls if call.state in RAN))
    change = await services.stores.feedback.record(
        run_id=run_id,
        user_id=user_id,
        rating=rating,
        tool_names=tool_names,
        thread_id=thread.thread_id,
        channel=channel,
        message_ts=message_ts,
    )
    if change != "same":
        metrics.feedback(rating, changed=change == "changed")
        home_changed(services)
    services.logger.info(
        "feedback %s on run %s (%s)", rating, run_id, change, extra={"run_id": run_id, "tools": tool_names}
    )
    tr = await services.languages.of_person(user_id)
    await _tell(client, channel, user_id, thread_ts, thanks_text(rating, change, tr))


async def _tell(client: AsyncWebClient, channel: str, user: str, thread_ts: str, text: str) -> None:
    try:
        await tell(client, channel=channel, user=user, thread_ts=thread_ts, text=text)
    except SlackApiError:
        pass  # the rating is recorded either way
