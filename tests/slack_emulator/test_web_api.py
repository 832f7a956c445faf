"""The emulated Web API answers as Slack does, through the real `AsyncWebClient`: Slack's error names for
what Slack refuses, JSON and form bodies, and the faults a test scripts."""

from __future__ import annotations

import json
import time

import aiohttp
import pytest
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bot.slack.app import create_web_client
from bot.slack_emulator import BOT_USER_ID, SlackEmulator
from tests.support.slack import slack_workspace

TOKEN = "xoxb-emulator-test"
pytestmark = pytest.mark.filterwarnings(
    "ignore:The top-level `text` argument is missing"
)  # blocks without text, on purpose


@pytest.fixture
async def slack():
    async with SlackEmulator(slack_workspace(), token=TOKEN) as emulator:
        yield emulator


@pytest.fixture
def client(slack):
    client = AsyncWebClient(token=TOKEN, base_url=slack.api_url, retry_handlers=[])
    return client


async def refused(call) -> str:
    with pytest.raises(SlackApiError) as caught:
        await call
    return caught.value.response["error"]


async def raw(slack: SlackEmulator, method: str, *, token: str | None = TOKEN, **kwargs) -> tuple[int, dict]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with (
        aiohttp.ClientSession() as session,
        session.post(slack.api_url + method, headers=headers, **kwargs) as response,
    ):
        return response.status, await response.json()


async def test_an_unknown_method_is_refused_as_slack_refuses_it(slack):
    assert await raw(slack, "chat.postMessages", json={"channel": "C1", "text": "hi"}) == (
        200,
        {"ok": False, "error": "unknown_method"},
    )
    assert await raw(slack, "reactions.add", data={"channel": "C1", "name": "eyes"}) == (
        200,
        {"ok": False, "error": "unknown_method"},
    )
    assert slack.messages == {}


async def test_a_call_without_the_token_is_refused(slack):
    assert (await raw(slack, "auth.test", token=None))[1] == {"ok": False, "error": "not_authed"}
    assert (await raw(slack, "auth.test", token="xoxb-other"))[1] == {"ok": False, "error": "invalid_auth"}
    assert (await raw(slack, "auth.test"))[1]["user_id"] == BOT_USER_ID


async def test_json_and_form_bodies_post_the_same_message(slack):
    blocks = [{"type": "section", "text": {"type": "mrkdwn", "text": "*hi*"}}]
    _, by_json = await raw(slack, "chat.postMessage", json={"channel": "C1", "text": "hi", "blocks": blocks})
    _, by_form = await raw(
        slack, "chat.postMessage", data={"channel": "C1", "text": "hi", "blocks": json.dumps(blocks)}
    )
    first, second = slack.message("C1", by_json["ts"]), slack.message("C1", by_form["ts"])
    assert first.all_text == second.all_text == "hi\n*hi*"
    assert all(block.get("block_id") for block in first.blocks + second.blocks)  # Slack names every block


async def test_post_message_errors(client):
    assert await refused(client.chat_postMessage(channel="CNOPE", text="hi")) == "channel_not_found"
    assert await refused(client.chat_postMessage(channel="C1")) == "no_text"
    assert await refused(client.chat_postMessage(channel="CPRIVATE", text="hi")) == "not_in_channel"
    assert await refused(client.chat_postMessage(channel="C1", blocks=[{"text": "no type"}])) == "invalid_blocks"
    assert await refused(client.chat_postMessage(channel="C1", text="x" * 40_001)) == "msg_too_long"


async def test_block_kit_sizes_are_refused_past_slacks_limits(slack, client):
    def section(size: int, char: str = "x") -> dict:
        return {"type": "section", "text": {"type": "mrkdwn", "text": char * size}}

    await client.chat_postMessage(channel="C1", text="ok", blocks=[section(3000)] * 50)
    await client.chat_postMessage(channel="C1", text="ok", blocks=[section(3000, "字")])  # characters, not bytes
    assert await refused(client.chat_postMessage(channel="C1", text="x", blocks=[section(3001)])) == "invalid_blocks"
    assert await refused(client.chat_postMessage(channel="C1", text="x", blocks=[section(1)] * 51)) == "invalid_blocks"
    fields = {"type": "section", "fields": [{"type": "mrkdwn", "text": "x" * 2001}]}
    assert await refused(client.chat_postMessage(channel="C1", text="x", blocks=[fields])) == "invalid_blocks"
    view = {"type": "modal", "title": {"type": "plain_text", "text": "長い"}, "blocks": [section(3001, "長")]}
    assert await refused(client.views_open(trigger_id=slack.workspace.new_trigger("U1"), view=view)) == (
        "invalid_blocks"
    )
    view["blocks"] = [section(3000)] * 101
    assert await refused(client.views_open(trigger_id=slack.workspace.new_trigger("U1"), view=view)) == (
        "invalid_blocks"
    )


async def test_update_errors_and_a_kept_history(slack, client):
    posted = await client.chat_postMessage(channel="C1", text="first")
    person = slack.person_says("C1", "U1", "a person's words")
    assert await refused(client.chat_update(channel="C1", ts="1.000001", text="x")) == "message_not_found"
    assert await refused(client.chat_update(channel="C2", ts=posted["ts"], text="x")) == "message_not_found"
    assert await refused(client.chat_update(channel="C1", ts=person.ts, text="x")) == "cant_update_message"
    assert await refused(client.chat_update(channel="C1", ts=posted["ts"])) == "no_text"
    await client.chat_update(channel="C1", ts=posted["ts"], text="second")
    message = slack.message("C1", posted["ts"])
    assert message.text == "second" and message.edited and message.history == [{"text": "first", "blocks": []}]


async def test_ephemeral_messages_go_to_people_in_the_channel(slack, client):
    assert await refused(client.chat_postEphemeral(channel="C1", user="UNOBODY", text="x")) == "user_not_found"
    assert await refused(client.chat_postEphemeral(channel="D1", user="U2", text="x")) == "user_not_in_channel"
    answer = await client.chat_postEphemeral(channel="C1", user="U2", text="only you")
    message = slack.message("C1", answer["message_ts"])
    assert message.ephemeral_to == "U2"
    assert await refused(client.chat_update(channel="C1", ts=message.ts, text="x")) == "message_not_found"


async def test_a_thread_is_read_back_with_its_parent_first(slack, client):
    parent = slack.person_says("C1", "U1", "<@UBOT> delete record 2")
    await client.chat_postMessage(channel="C1", thread_ts=parent.ts, text="one")
    await client.chat_postMessage(channel="C1", thread_ts=parent.ts, text="two")
    await client.chat_postEphemeral(channel="C1", user="U1", thread_ts=parent.ts, text="secret")
    replies = await client.conversations_replies(channel="C1", ts=parent.ts)
    assert [m["text"] for m in replies["messages"]] == ["<@UBOT> delete record 2", "one", "two"]
    assert replies["messages"][1]["bot_id"] and replies["messages"][1]["thread_ts"] == parent.ts
    page = await client.conversations_replies(channel="C1", ts=parent.ts, limit=2)
    assert page["has_more"] and [m["text"] for m in page["messages"]] == ["<@UBOT> delete record 2", "one"]
    rest = await client.conversations_replies(
        channel="C1", ts=parent.ts, cursor=page["response_metadata"]["next_cursor"]
    )
    assert [m["text"] for m in rest["messages"]] == ["two"] and not rest["has_more"]
    assert await refused(client.conversations_replies(channel="C1", ts="1.000001")) == "thread_not_found"
    assert await refused(client.conversations_replies(channel="CNOPE", ts=parent.ts)) == "channel_not_found"


async def test_streaming_needs_a_thread_and_a_recipient_in_a_channel(slack, client):
    parent = slack.person_says("C1", "U1", "hi")
    assert (await raw(slack, "chat.startStream", json={"channel": "C1", "markdown_text": "x"}))[1]["error"] == (
        "invalid_arguments"
    )
    assert (
        await refused(client.chat_startStream(channel="C1", thread_ts=parent.ts, markdown_text="x"))
        == "invalid_arguments"
    )
    started = await client.chat_startStream(
        channel="C1", thread_ts=parent.ts, recipient_team_id="T1", recipient_user_id="U1", markdown_text="Hel"
    )
    await client.chat_appendStream(channel="C1", ts=started["ts"], markdown_text="lo")
    await client.chat_stopStream(channel="C1", ts=started["ts"])
    assert slack.message("C1", started["ts"]).text == "Hello"
    error = await refused(client.chat_appendStream(channel="C1", ts=started["ts"], markdown_text="!"))
    assert error == "message_not_in_streaming_state"


async def test_modals_need_a_fresh_trigger_and_stack_three_deep(slack, client):
    view = {"type": "modal", "title": {"type": "plain_text", "text": "Why?"}, "blocks": []}
    assert await refused(client.views_open(trigger_id="made-up", view=view)) == "invalid_trigger_id"
    assert await refused(client.views_open(trigger_id=slack.workspace.new_trigger("U1"), view={})) == (
        "invalid_arguments"
    )
    trigger = slack.workspace.new_trigger("U1")
    opened = await client.views_open(trigger_id=trigger, view=view)
    assert await refused(client.views_open(trigger_id=trigger, view=view)) == "invalid_trigger_id"  # used once
    await client.views_push(trigger_id=slack.workspace.new_trigger("U1"), view=view)
    await client.views_push(trigger_id=slack.workspace.new_trigger("U1"), view=view)
    error = await refused(client.views_push(trigger_id=slack.workspace.new_trigger("U1"), view=view))
    assert error == "push_limit_reached"
    assert len(slack.workspace.modals["U1"]) == 3

    updated = await client.views_update(view_id=opened["view"]["id"], view={**view, "blocks": []})
    stale_hash = opened["view"]["hash"]
    error = await refused(client.views_update(view_id=opened["view"]["id"], hash=stale_hash, view=view))
    assert error == "hash_conflict"
    await client.views_update(view_id=opened["view"]["id"], hash=updated["view"]["hash"], view=view)
    assert await refused(client.views_update(view_id="VNOPE", view=view)) == "not_found"


async def test_app_home_people_and_user_groups(slack, client):
    home = {"type": "home", "blocks": [{"type": "section", "text": {"type": "mrkdwn", "text": "Waiting: 0"}}]}
    assert await refused(client.views_publish(user_id="UNOBODY", view=home)) == "user_not_found"
    assert await refused(client.views_publish(user_id="U1", view={"type": "modal"})) == "invalid_arguments"
    await client.views_publish(user_id="U1", view=home)
    assert slack.workspace.home_views["U1"]["blocks"][0]["text"]["text"] == "Waiting: 0"

    def checkboxes(count: int, value: str = "v") -> dict:
        options = [{"text": {"type": "plain_text", "text": "Select"}, "value": f"{value}{i}"} for i in range(count)]
        element = {"type": "checkboxes", "action_id": "pick", "options": options}
        return {"type": "home", "blocks": [{"type": "actions", "block_id": "b", "elements": [element]}]}

    await client.views_publish(user_id="U1", view=checkboxes(10))
    assert await refused(client.views_publish(user_id="U1", view=checkboxes(11))) == "invalid_blocks"
    assert await refused(client.views_publish(user_id="U1", view=checkboxes(0))) == "invalid_blocks"
    assert await refused(client.views_publish(user_id="U1", view=checkboxes(1, "x" * 150))) == "invalid_blocks"
    twice = {"type": "home", "blocks": [{"type": "divider", "block_id": "d"}, {"type": "divider", "block_id": "d"}]}
    assert await refused(client.views_publish(user_id="U1", view=twice)) == "invalid_blocks"
    too_many = {"type": "home", "blocks": [{"type": "divider"}] * 101}
    assert await refused(client.views_publish(user_id="U1", view=too_many)) == "invalid_blocks"

    admin, other = (await client.users_info(user="U1"))["user"], (await client.users_info(user="U2"))["user"]
    assert (admin["is_admin"], other["is_admin"], other["is_owner"]) == (True, False, False)
    assert await refused(client.users_info(user="UNOBODY")) == "user_not_found"
    assert (await client.usergroups_users_list(usergroup="S1"))["users"] == ["U1", "U2"]
    assert await refused(client.usergroups_users_list(usergroup="SNOPE")) == "no_such_subteam"


async def test_calls_are_recorded_with_their_arguments_and_answers(slack, client):
    await client.chat_postMessage(channel="C1", text="hi")
    await refused(client.chat_postMessage(channel="CNOPE", text="hi"))
    first, second = slack.calls_of("chat.postMessage")
    assert first.params["text"] == "hi" and first.token == TOKEN and first.ok
    assert second.response == {"ok": False, "error": "channel_not_found"}
    assert slack.posted_by(first).text == "hi"


# --- faults -----------------------------------------------------------------------------------------
async def test_rate_limited_calls_are_retried_after_retry_after(slack):
    client = create_web_client(TOKEN, api_url=slack.api_url)
    slack.fail("chat.postMessage", status=429, retry_after=1, times=1)
    started = time.monotonic()
    posted = await client.chat_postMessage(channel="C1", text="hi")
    assert time.monotonic() - started >= 1.0  # the client waited as told
    assert slack.failed == [("chat.postMessage", 429)]
    assert [m.text for m in slack.messages.values()] == ["hi"] and posted["ok"]


async def test_server_errors_until_the_client_gives_up(slack, client):
    slack.fail("chat.postMessage", status=503, times=2)
    slack.fail("chat.postMessage", status=500)
    for _ in range(3):
        with pytest.raises(SlackApiError) as caught:
            await client.chat_postMessage(channel="C1", text="hi")
        assert caught.value.response.status_code in (500, 503)
    assert [status for _, status in slack.failed] == [503, 503, 500]
    assert slack.messages == {}
    assert (await client.chat_postMessage(channel="C1", text="hi"))["ok"]  # the faults are used up


async def test_a_scripted_slack_error_changes_nothing(slack, client):
    slack.fail("chat.update", error="edit_window_closed")
    posted = await client.chat_postMessage(channel="C1", text="first")
    assert await refused(client.chat_update(channel="C1", ts=posted["ts"], text="second")) == "edit_window_closed"
    assert slack.message("C1", posted["ts"]).text == "first"
    assert slack.failed == [("chat.update", "edit_window_closed")]


async def test_a_delayed_call_is_answered_late(slack, client):
    slack.delay("users.info", 2)  # long enough that a loaded machine's pause cannot pass for it
    started = time.monotonic()
    await client.users_info(user="U1")
    assert time.monotonic() - started >= 2
    started = time.monotonic()
    await client.users_info(user="U1")  # only the next call was delayed
    assert time.monotonic() - started < 2


async def test_a_connection_dropped_after_the_post_leaves_the_message_in_the_workspace(slack, client):
    slack.drop_connection("chat.postMessage")
    with pytest.raises(aiohttp.ClientError):
        await client.chat_postMessage(channel="C1", text="approve?")
    assert [m.text for m in slack.messages.values()] == ["approve?"]  # it exists; the bot never heard so
    assert slack.failed == [("chat.postMessage", "dropped")]

    slack.drop_connection("chat.postMessage", after=False)
    with pytest.raises(aiohttp.ClientError):
        await client.chat_postMessage(channel="C1", text="again?")
    assert [m.text for m in slack.messages.values()] == ["approve?"]


async def test_the_bot_s_client_retries_a_dropped_post_and_posts_twice(slack):
    """What the recovery work must cope with: the retry of a post whose answer was lost is a duplicate."""
    client = create_web_client(TOKEN, api_url=slack.api_url)
    slack.drop_connection("chat.postMessage")
    await client.chat_postMessage(channel="C1", text="approve?")
    assert [m.text for m in slack.messages.values()] == ["approve?", "approve?"]


def feedback_block(**changes) -> dict:
    """Slack's documented example of a context actions block with feedback buttons, with `changes`."""
    element = {
        "type": "feedback_buttons",
        "action_id": "feedback_buttons_1",
        "positive_button": {"text": {"type": "plain_text", "text": "👍"}, "value": "positive_feedback"},
        "negative_button": {"text": {"type": "plain_text", "text": "👎"}, "value": "negative_feedback"},
    }
    element.update(changes)
    return {"type": "context_actions", "elements": [element]}


async def test_feedback_buttons_are_accepted_only_as_slack_documents_them(client, slack):
    answer = await client.chat_postMessage(channel="C1", text="Réponse 答え", blocks=[feedback_block()])
    assert slack.message("C1", answer["ts"]).blocks[0]["elements"][0]["type"] == "feedback_buttons"
    too_long = {"text": {"type": "plain_text", "text": "ok" * 38}, "value": "v"}
    bad = [
        feedback_block(negative_button=None),  # both buttons are required
        {**feedback_block(), "elements": []},
        {**feedback_block(), "elements": feedback_block()["elements"] * 6},  # at most 5 (and unique action_ids)
        feedback_block(positive_button={"text": {"type": "mrkdwn", "text": "*yes*"}, "value": "v"}),  # plain_text only
        feedback_block(positive_button=too_long),  # at most 75 characters
        feedback_block(positive_button={"text": {"type": "plain_text", "text": "👍"}, "value": "v" * 2001}),
        feedback_block(positive_button={"text": {"type": "plain_text", "text": "👍"}}),  # value is required
        feedback_block(action_id="a" * 256),
        feedback_block(style="primary"),  # not a field of the element
        {"type": "context_actions", "elements": [{"type": "button", "text": {"type": "plain_text", "text": "x"}}]},
        {**feedback_block(), "block_id": "b" * 256},
    ]
    for block in bad:
        error = await refused(client.chat_postMessage(channel="C1", text="x", blocks=[block]))
        assert error == "invalid_blocks", block
    start = await client.chat_startStream(
        channel="C1", thread_ts=answer["ts"], recipient_team_id="T1", recipient_user_id="U1", markdown_text="hi"
    )
    assert await refused(client.chat_stopStream(channel="C1", ts=start["ts"], blocks=[bad[0]])) == "invalid_blocks"
    await client.chat_stopStream(channel="C1", ts=start["ts"], blocks=[feedback_block()])
    assert [b["type"] for b in slack.message("C1", start["ts"]).blocks] == ["context_actions"]
