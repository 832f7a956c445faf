"""The HTTP API over the running bot: every status code, and a decision shown in Slack as a click would be."""

from __future__ import annotations

from memory import PolicyChange
from tests.support.scripted_model import call, reply, tool_calls

from .harness import (
    API_TOKEN,
    RunningBot,
    ask_to_delete,
    decide_path,
    record_ids,
    request,
    waiting_call,
)


async def test_suspended_runs_in_camel_case_and_the_openapi_document(api_bot: RunningBot, model):
    ask_to_delete(model)
    event = await api_bot.mention("delete record 3")
    await api_bot.approval_message()

    status, page = await request(api_bot, "GET", "/api/agents/demo-agent/suspended-runs?perPage=10&page=0")
    assert status == 200
    (run,) = page["runs"]
    assert set(run) == {"runId", "status", "threadId", "resourceId", "suspendedAt", "toolCalls"}
    assert run["status"] == "suspended" and run["resourceId"] == "U1" and run["threadId"].endswith(event["ts"])
    assert run["toolCalls"] == [
        {
            "toolCallId": "call_1",
            "toolName": "delete-record",
            "args": {"id": 3},
            "requiresApproval": True,
            "suspendPayload": None,
            "preview": {
                "ok": True,
                "result": "Will delete 1 record: #3 “Old invoices” (4 would remain).",
                "error": None,
            },
            "escalatedAt": None,
            "rule": None,
            "requester": "U1",
            "approvals": [],
            "approvalsRequired": 1,
            "deciders": [],
            "answerers": [],
            "expiresAt": None,
            "grantSeconds": None,
            "actions": ["approve", "cancel", "decline", "edit_args"],
        }
    ]
    status, other_thread = await request(api_bot, "GET", "/api/agents/demo-agent/suspended-runs?threadId=nope")
    assert (status, other_thread) == (200, {"runs": [], "total": 0, "totalExact": True})

    status, document = await request(api_bot, "GET", "/api/openapi.json", headers={})
    assert status == 200 and document["openapi"].startswith("3.")
    assert "/api/agents/{agentId}/runs/{runId}/tool-calls/{toolCallId}/approve" in document["paths"]


async def test_401_without_the_token_and_nothing_changes(api_bot: RunningBot, model):
    ask_to_delete(model)
    await api_bot.mention("delete record 3")
    await api_bot.approval_message()
    run_id, call_id = await waiting_call(api_bot)
    for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": API_TOKEN}):
        status, body = await request(
            api_bot, "POST", decide_path(run_id, call_id, "approve"), body={"approver": "U2"}, headers=headers
        )
        assert status == 401 and "bearer token" in body["error"]
        status, _ = await request(api_bot, "GET", "/api/agents/demo-agent/suspended-runs", headers=headers)
        assert status == 401
    assert await record_ids(api_bot) == [1, 2, 3, 4, 5]
    assert (await api_bot.agent.get_tool_call(run_id, call_id)).state == "awaiting_approval"


async def test_400_404_403_then_200_and_409(api_bot: RunningBot, model):
    ask_to_delete(model)
    await api_bot.mention("delete record 3")  # U1 asks
    message = await api_bot.approval_message()
    run_id, call_id = await waiting_call(api_bot)
    approve = decide_path(run_id, call_id, "approve")

    assert (await request(api_bot, "POST", approve, raw="{not json"))[0] == 400
    assert (await request(api_bot, "POST", approve, raw="[1, 2]"))[0] == 400
    status, body = await request(api_bot, "POST", approve, body={})
    assert status == 400 and "approver is required" in body["error"]
    assert (await request(api_bot, "GET", "/api/agents/demo-agent/suspended-runs?page=-1"))[0] == 400

    assert (await request(api_bot, "POST", decide_path("no-such-run", call_id, "approve"), body={"approver": "U2"}))[
        0
    ] == 404
    assert (await request(api_bot, "POST", decide_path(run_id, "no-such-call", "approve"), body={"approver": "U2"}))[
        0
    ] == 404
    assert (
        await request(api_bot, "POST", decide_path(run_id, call_id, "approve", agent="x"), body={"approver": "U2"})
    )[0] == 404

    await api_bot.storage.policies.set("delete-record", PolicyChange(approvers=["U1", "U9"], self_approval=False))
    status, body = await request(api_bot, "POST", approve, body={"approver": "U2"})
    assert status == 403 and body["error"] == "Only U1 or U9 may decide delete-record requests."
    status, body = await request(api_bot, "POST", approve, body={"approver": "U1"})  # the requester
    assert status == 403 and "your own request" in body["error"]
    await api_bot.storage.policies.set("delete-record", PolicyChange(mode="disabled"))
    status, body = await request(api_bot, "POST", approve, body={"approver": "U9"})
    assert status == 403 and "disabled" in body["error"]
    assert await record_ids(api_bot) == [1, 2, 3, 4, 5]
    assert api_bot.slack.calls_of("chat.update") == []

    await api_bot.storage.policies.set("delete-record", PolicyChange(mode="inherit"))
    status, body = await request(api_bot, "POST", approve, body={"approver": "U9"})
    assert (status, body) == (200, {"runId": run_id, "toolCallId": call_id, "status": "approved"})
    # shown in Slack as a click would be: the message updated in place, the answer in the thread
    await api_bot.slack.wait_for("chat.update", lambda c: c.params.get("ts") == message.ts)
    assert (
        message.action_ids() in ([], ["tool_undo"]) and "Approved" in message.all_text and "<@U9>" in message.all_text
    )
    await api_bot.slack.wait_for("chat.stopStream")
    assert await record_ids(api_bot) == [1, 2, 4, 5]

    status, body = await request(api_bot, "POST", approve, body={"approver": "U9"})
    assert status == 409 and "already decided" in body["error"]
    status, body = await request(api_bot, "POST", decide_path(run_id, call_id, "decline"), body={"approver": "U9"})
    assert status == 409


async def test_decline_with_a_reason_updates_the_message(api_bot: RunningBot, model):
    model.chat.push(tool_calls(call("delete-record", {"id": 2}, id="call_1")), reply("Fine, I kept it."))
    await api_bot.mention("delete record 2")
    message = await api_bot.approval_message()
    run_id, call_id = await waiting_call(api_bot)
    status, body = await request(
        api_bot, "POST", decide_path(run_id, call_id, "decline"), body={"approver": "U2", "reason": "still needed"}
    )
    assert status == 200 and body["status"] == "declined"
    await api_bot.slack.wait_for("chat.update", lambda c: c.params.get("ts") == message.ts)
    assert "Declined" in message.all_text and "still needed" in message.all_text
    await api_bot.slack.wait_for("chat.stopStream")
    tool_message = [m for m in model.chat.requests[-1]["messages"] if m.get("role") == "tool"][-1]
    assert "still needed" in tool_message["content"]
    assert await record_ids(api_bot) == [1, 2, 3, 4, 5]


async def test_resume_validates_the_data_and_answers_the_question(api_bot: RunningBot, model):
    model.chat.push(tool_calls(call("get-weather", {}, id="call_1")), reply("Sunny in Paris."))
    await api_bot.mention("what's the weather?")
    question = await api_bot.question_message()
    run_id, call_id = await waiting_call(api_bot)
    resume = decide_path(run_id, call_id, "resume")

    status, body = await request(api_bot, "POST", decide_path(run_id, call_id, "approve"), body={"approver": "U2"})
    assert status == 409 and "use /resume" in body["error"]
    status, body = await request(api_bot, "POST", resume, body={"resumeData": {"town": 3}})
    assert status == 400
    assert (await request(api_bot, "POST", resume, body={}))[0] == 400
    assert (await api_bot.agent.get_tool_call(run_id, call_id)).state == "suspended"

    # a bystander is not the speaker: only the requester (or the tool's approvers) may answer
    status, body = await request(api_bot, "POST", resume, body={"resumeData": {"city": "巴黎"}, "resumedBy": "U2"})
    assert status == 403 and body["error"] == "Only U1 may answer this question from get-weather."
    status, body = await request(api_bot, "POST", resume, body={"resumeData": {"city": "Paris"}, "resumedBy": "U1"})
    assert (status, body["status"]) == (200, "resumed")
    await api_bot.slack.wait_for("chat.update", lambda c: c.params.get("ts") == question.ts)
    assert question.action_ids() == []
    await api_bot.slack.wait_for("chat.stopStream")
    assert (await request(api_bot, "POST", resume, body={"resumeData": {"city": "Rome"}}))[0] == 409


async def test_without_a_token_setting_the_api_is_off(bot: RunningBot, model):
    status, _ = await request(bot, "GET", "/api/agents/demo-agent/suspended-runs")
    assert status == 404
