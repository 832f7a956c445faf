"""The agent's work shows in the thread: each tool call a thinking step with its state, as `task_update`
chunks of the streamed answer, or one context line where Slack does not stream. The approval and
question messages stay as they are."""

from __future__ import annotations

import aiohttp
import pytest

from bot.slack_emulator import SlackEmulator
from tests.support.scripted_model import call, reply, tool_calls
from tests.support.slack import slack_workspace

from .harness import running_bot


def cards(message) -> list[dict]:
    return [b for b in message.blocks if b.get("type") == "task_card"]


def details(card: dict) -> str:
    return card["details"]["elements"][0]["elements"][0]["text"]


async def test_a_call_without_approval_is_a_step_of_the_streamed_answer(bot, model):
    model.chat.push(tool_calls(call("list-records", {}, id="call_1")), reply("There are 3 records."))
    await bot.mention("list records")
    stops = await bot.slack.wait_for("chat.stopStream")
    starts = bot.slack.calls_of("chat.startStream")
    assert starts[0].params["chunks"][0] == {
        "type": "task_update",
        "id": "call_1",
        "title": "list-records",
        "status": "complete",
        "details": "done",
    }
    answer = bot.slack.message("C1", stops[-1].params["ts"])
    assert answer.text == "There are 3 records."
    [card] = cards(answer)
    assert (card["title"], card["status"], details(card)) == ("list-records", "complete", "done")


async def test_a_step_under_way_shows_running_then_waiting(bot, model):
    model.chat.push(
        tool_calls(call("delete-record", {"id": 2}, id="call_1"), text="Let me delete it."),
        reply("Record 2 is deleted."),
    )
    await bot.mention("delete record 2")
    message = await bot.approval_message()
    first = bot.slack.message("C1", bot.slack.calls_of("chat.startStream")[0].response["ts"])
    assert first.text.startswith("Let me delete it.")
    [card] = cards(first)
    assert (card["status"], details(card)) == ("pending", 'waiting for approval: {"id": 2}')
    statuses = [
        chunk["status"]
        for c in bot.slack.calls if c.method.startswith("chat.") and c.method.endswith("Stream")
        for chunk in c.params.get("chunks") or [] if chunk["type"] == "task_update"
    ]  # fmt: skip
    assert statuses == ["in_progress", "pending"]
    assert message.action_ids()[:2] == ["tool_approve", "tool_decline"]  # the approval message as it was
    await bot.sender.click(message, "tool_approve", user="U2")
    stops = await bot.slack.wait_for("chat.stopStream", count=2)
    answer = bot.slack.message("C1", stops[-1].params["ts"])
    assert answer.text == "Record 2 is deleted."
    [card] = cards(answer)
    assert (card["task_id"], card["status"]) == ("call_1", "complete")


async def test_an_approval_opens_no_answer_of_its_own(bot, model):
    model.chat.push(tool_calls(call("delete-record", {"id": 2}, id="call_1")), reply("Record 2 is deleted."))
    await bot.mention("delete record 2")
    message = await bot.approval_message()
    await bot.slack.settle()
    assert bot.slack.calls_of("chat.startStream") == []  # the approval message shows the wait
    await bot.sender.click(message, "tool_approve", user="U2")
    stops = await bot.slack.wait_for("chat.stopStream")
    [card] = cards(bot.slack.message("C1", stops[-1].params["ts"]))
    assert card["status"] == "complete"


async def test_a_declined_call_is_a_declined_step(bot, model):
    model.chat.push(tool_calls(call("delete-record", {"id": 2}, id="call_1")), reply("OK, I left it."))
    await bot.mention("delete record 2")
    message = await bot.approval_message()
    await bot.sender.click(message, "tool_decline", user="U2")
    stops = await bot.slack.wait_for("chat.stopStream")
    [card] = cards(bot.slack.message("C1", stops[-1].params["ts"]))
    assert card["status"] == "error" and details(card).startswith("declined")


async def test_where_slack_does_not_stream_the_steps_are_one_context_line(database_url, model):
    model.chat.push(
        tool_calls(call("list-records", {}, id="call_1"), call("get-weather", {"city": "東京"}, id="call_2")),
        reply("Done."),
    )
    async with (
        SlackEmulator(slack_workspace(), streaming=False) as slack,
        running_bot(database_url=database_url, slack=slack) as bot,
    ):
        await bot.mention("list records and the weather in 東京")
        await slack.wait_for("chat.postMessage", lambda c: c.params.get("text") == "Done.")
        [line] = [m for m in slack.workspace.messages.values() if m.blocks and m.blocks[0]["type"] == "context"]
        text = line.blocks[0]["elements"][0]["text"]
        assert "`list-records` done" in text and "`get-weather` done" in text and "東京" in text
        assert text.index("list-records") < text.index("get-weather")


@pytest.mark.parametrize(
    "chunk",
    [
        {"type": "task_update", "id": "t1", "title": "x", "status": "done"},  # not one of Slack's four
        {"type": "task_update", "id": "t1", "status": "complete"},  # no title
        {"type": "task_update", "title": "x", "status": "complete"},  # no id
        {"type": "plan_update"},  # no title
        {"type": "thinking", "text": "hm"},  # no such chunk
        {"type": "markdown_text"},  # no text
    ],
)
async def test_the_emulation_refuses_chunks_slack_does_not_document(slack, chunk):
    async with aiohttp.ClientSession() as session:
        body = {"channel": "C1", "thread_ts": "1.0", "recipient_user_id": "U1", "recipient_team_id": "T1"}
        async with session.post(
            slack.api_url + "chat.startStream",
            json={**body, "chunks": [chunk]},
            headers={"Authorization": "Bearer xoxb-test-token"},
        ) as response:
            assert (await response.json()) == {"ok": False, "error": "invalid_arguments"}
