"""The approval boundary as a user meets it (issue 17): who may be named as an approver, the requester's
own decline, and what an error says (no Slack markup in the HTTP API, no internals anywhere).

Through the real Bolt app and the real HTTP API, on SQLite and PostgreSQL."""

from __future__ import annotations

from memory import PolicyChange
from tests.support.scripted_model import call, reply, tool_calls

from .harness import (
    RunningBot,
    ask_to_delete,
    decide_path,
    record_ids,
    refused_click,
    request,
    waiting_call,
)


async def test_a_user_group_id_is_never_an_approver(api_bot: RunningBot, model):
    # issue 17, item 1: approvers S1 (U1, U2), self-approval refused; U3 asks
    await api_bot.storage.policies.set("delete-record", PolicyChange(approvers=["S1"], self_approval=False))
    ask_to_delete(model)
    await api_bot.mention("delete record 3", user="U3")
    message = await api_bot.approval_message()
    run_id, call_id = await waiting_call(api_bot)
    approve = decide_path(run_id, call_id, "approve")

    for approver in ("S1", "bob", "U404", "UNKNOWN1", "s1", "<@U2>", "U2!", "W404"):
        status, body = await request(api_bot, "POST", approve, body={"approver": approver})
        assert status == 400, (approver, status, body)
        assert "person" in body["error"] and "<" not in body["error"], body
    assert (await api_bot.agent.get_tool_call(run_id, call_id)).state == "awaiting_approval"
    assert await record_ids(api_bot) == [1, 2, 3, 4, 5]
    assert api_bot.slack.calls_of("chat.update") == []

    # a member of the group, named by their user ID, may
    status, body = await request(api_bot, "POST", approve, body={"approver": "U2"})
    assert (status, body["status"]) == (200, "approved")
    await api_bot.slack.wait_for("chat.update", lambda c: c.params.get("ts") == message.ts)
    assert "Approved by <@U2>" in message.all_text
    await api_bot.slack.wait_for("chat.stopStream")
    assert (await api_bot.agent.get_tool_call(run_id, call_id)).decided_by == "U2"
    assert await record_ids(api_bot) == [1, 2, 4, 5]


async def test_the_api_refusal_is_plain_text(api_bot: RunningBot, model):
    # issue 17, item 11: no `<@U9>` / `<!subteam^S1>` in the API's 403 body
    await api_bot.storage.policies.set("delete-record", PolicyChange(approvers=["U9", "S1"]))
    ask_to_delete(model)
    await api_bot.mention("delete record 3", user="U3")
    await api_bot.approval_message()
    run_id, call_id = await waiting_call(api_bot)
    status, body = await request(api_bot, "POST", decide_path(run_id, call_id, "approve"), body={"approver": "U7"})
    assert status == 403
    assert body["error"] == "Only U9 or the members of user group S1 may decide delete-record requests."


async def test_the_requester_may_always_decline_their_own_request(api_bot: RunningBot, model):
    # issue 17, item 7: approvers S1 (U1, U2), the requester U3 is not among them
    await api_bot.storage.policies.set("delete-record", PolicyChange(approvers=["S1"]))
    model.chat.push(*ask_to_delete_twice())
    await api_bot.mention("delete record 3", user="U3")
    message = await api_bot.approval_message()
    # someone else outside S1 may not
    assert "Only <!subteam^S1> may decide" in await refused_click(api_bot, message, "U7", "tool_decline")
    await api_bot.sender.click(message, "tool_decline", user="U3")
    await api_bot.slack.wait_for("chat.update", lambda c: c.params.get("ts") == message.ts)
    assert "Declined" in message.all_text and "<@U3>" in message.all_text
    await api_bot.slack.wait_for("chat.stopStream")

    # the same through the HTTP API, for the second request
    await api_bot.mention("delete record 4", user="U3")
    await api_bot.approval_message(count=2)
    run_id, call_id = await waiting_call(api_bot)
    approve = decide_path(run_id, call_id, "approve")
    assert (await request(api_bot, "POST", approve, body={"approver": "U3"}))[0] == 403  # approving: still no
    status, body = await request(api_bot, "POST", decide_path(run_id, call_id, "decline"), body={"approver": "U3"})
    assert (status, body["status"]) == (200, "declined")
    assert await record_ids(api_bot) == [1, 2, 3, 4, 5]


def ask_to_delete_twice():
    return (
        tool_calls(call("delete-record", {"id": 3}, id="call_1")),
        reply("OK, I kept record 3."),
        tool_calls(call("delete-record", {"id": 4}, id="call_2")),
        reply("OK, I kept record 4."),
    )


async def test_resumed_by_must_be_a_person_too(api_bot: RunningBot, model):
    model.chat.push(tool_calls(call("get-weather", {}, id="call_1")), reply("Sunny in Paris."))
    await api_bot.mention("what's the weather?")
    await api_bot.question_message()
    run_id, call_id = await waiting_call(api_bot)
    resume = decide_path(run_id, call_id, "resume")
    status, body = await request(api_bot, "POST", resume, body={"resumeData": {"city": "Paris"}, "resumedBy": "S1"})
    assert status == 400 and "person" in body["error"]
    assert (await api_bot.agent.get_tool_call(run_id, call_id)).state == "suspended"


async def test_the_approval_message_says_who_may_approve_and_when_it_expires(api_bot: RunningBot, model):
    await api_bot.storage.policies.set(
        "delete-record", PolicyChange(approvers=["U2", "S1"], self_approval=False, expires_after=3600)
    )
    model.chat.push(tool_calls(call("delete-record", {"id": 3}, id="call_1")))
    await api_bot.mention("delete record 3", user="U3")
    message = await api_bot.approval_message()
    assert "Who may approve: <@U2> or <!subteam^S1> (not <@U3>, who asked)" in message.all_text
    assert "Expires <!date^" in message.all_text

    ask_to_delete(model, 4)
    await api_bot.storage.policies.set("delete-record", PolicyChange(approvers=[], self_approval=True, expires_after=0))
    await api_bot.mention("delete record 4", user="U3")
    second = await api_bot.approval_message(count=2)
    assert "Who may approve: anyone in the conversation · Does not expire" in second.all_text
