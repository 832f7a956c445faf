"""The HTTP API's bulk decisions (`POST /api/agents/{agent}/decisions`) and tool policies (`GET
/api/policies`, `PATCH /api/policies/{tool}`) over the running bot, on SQLite and PostgreSQL: each item
decided as if asked alone, a malformed body deciding nothing, and a policy change audited via `api`."""

from __future__ import annotations

from memory import PolicyChange
from tests.support.scripted_model import call, reply, tool_calls

from .harness import RunningBot, record_ids, request

BULK = "/api/agents/demo-agent/decisions"


async def three_waiting(bot: RunningBot, model) -> dict[str, str]:
    """Three calls waiting in three threads; their run ids by tool call id."""
    await bot.storage.policies.set("delete-record", PolicyChange(approvers=["U2"]))
    await bot.storage.policies.set("issue-refund", PolicyChange(approvers=["U3"]))
    asks = [
        ("delete record 3", "delete-record", {"id": 3}),
        ("delete record 4", "delete-record", {"id": 4}),
        ("退款 ORD-7", "issue-refund", {"order_id": "ORD-7", "amount": 12.5}),
    ]
    for count, (text, name, args) in enumerate(asks, start=1):
        model.chat.push(tool_calls(call(name, args, id=f"call_{count}")))
        await bot.mention(text, ts=f"1700000{count}.000100")
        await bot.approval_message(count=count)
    model.chat.push(*(reply("Done.") for _ in asks))
    status, page = await request(bot, "GET", "/api/agents/demo-agent/suspended-runs")
    assert status == 200 and page["total"] == 3
    return {run["toolCalls"][0]["toolCallId"]: run["runId"] for run in page["runs"]}


async def test_bulk_decisions_each_as_if_asked_alone(admin_bot: RunningBot, model):
    bot = admin_bot
    runs = await three_waiting(bot, model)
    items = [
        {"runId": runs["call_1"], "toolCallId": "call_1", "action": "approve"},
        {"runId": runs["call_3"], "toolCallId": "call_3", "action": "approve"},  # U3 only
        {"runId": runs["call_2"], "toolCallId": "call_2", "action": "decline", "reason": "Pas maintenant — 不要"},
        {"runId": runs["call_1"], "toolCallId": "call_1", "action": "approve"},  # the same again
        {"runId": "no-such-run", "toolCallId": "call_9", "action": "approve"},
    ]
    status, body = await request(bot, "POST", BULK, body={"approver": "U2", "decisions": items})
    assert status == 200, body
    results = body["results"]
    assert [(r["toolCallId"], r["code"], r.get("status")) for r in results] == [
        ("call_1", 200, "approved"),
        ("call_3", 403, None),
        ("call_2", 200, "declined"),
        ("call_1", 409, None),
        ("call_9", 404, None),
    ]
    assert "Only U3 may decide" in results[1]["error"] and "already decided" in results[3]["error"]
    await bot.slack.wait_for("chat.stopStream", count=2)
    assert await record_ids(bot) == [1, 2, 4, 5]  # record 3 deleted once; 4 declined
    entries = [e for e in await bot.storage.audit_log.entries() if e.run_id is not None]
    decided = [(e.tool_call_id, e.action, e.actor, e.via) for e in entries if e.action != "requested"]
    assert sorted(decided) == [  # the execution lands when the run goes on, after the response
        ("call_1", "approved", "U2", "api"),
        ("call_1", "executed", "system", "runtime"),
        ("call_1", "refused", "U2", "api"),  # the same again: it no longer waits, said once
        ("call_2", "declined", "U2", "api"),
        ("call_3", "refused", "U2", "api"),
    ]
    assert [e.detail for e in entries if e.action == "declined"] == ["Pas maintenant — 不要"]
    updated = {c.params.get("ts") for c in bot.slack.calls_of("chat.update")}
    first, second, refund = (bot.slack.posted_by(c) for c in bot.slack.calls_of("chat.postMessage")[:3])
    await bot.slack.wait_until(lambda: "Approved" in first.all_text and "Declined" in second.all_text)
    assert refund.ts not in updated and refund.action_ids()[0] == "tool_approve"


async def test_a_malformed_bulk_body_decides_nothing(admin_bot: RunningBot, model):
    bot = admin_bot
    runs = await three_waiting(bot, model)
    one = {"runId": runs["call_1"], "toolCallId": "call_1", "action": "approve"}
    bad = [
        ({"decisions": [one]}, "approver is required"),
        ({"approver": "U2", "decisions": one}, "decisions must be a list of 1 to 100"),
        ({"approver": "U2", "decisions": []}, "decisions must be a list of 1 to 100"),
        ({"approver": "U2", "decisions": [one] * 101}, "decisions must be a list of 1 to 100"),
        ({"approver": "U2", "decisions": [one, {"toolCallId": "call_2", "action": "approve"}]}, "needs runId"),
        ({"approver": "U2", "decisions": [one, {**one, "action": "maybe"}]}, "action must be approve or decline"),
        ({"approver": "U2", "decisions": [one, {**one, "args": {"id": 1}}]}, "unknown fields: args"),
        ({"approver": "U2", "decisions": [{**one, "reason": "why"}]}, "a reason goes with a decline"),
        ({"approver": "UNOBODY", "decisions": [one]}, "not a person of this workspace"),
    ]
    for body, error in bad:
        status, answer = await request(bot, "POST", BULK, body=body)
        assert (status, error in answer["error"]) == (400, True), (body, answer)
    status, answer = await request(bot, "POST", BULK, raw="[1, 2")
    assert status == 400 and "not JSON" in answer["error"]
    status, _ = await request(bot, "POST", BULK, body={"approver": "U2", "decisions": [one]}, headers={})
    assert status == 401
    status, answer = await request(
        bot, "POST", BULK.replace("demo-agent", "other"), body={"approver": "U2", "decisions": [one]}
    )
    assert status == 404 and "unknown agent" in answer["error"]
    await bot.slack.settle()
    assert await record_ids(bot) == [1, 2, 3, 4, 5]
    assert [e.action for e in await bot.storage.audit_log.entries() if e.run_id] == ["requested"] * 3


async def test_the_policy_routes(admin_bot: RunningBot):
    bot = admin_bot
    status, body = await request(bot, "GET", "/api/policies")
    assert status == 200
    policies = {p["tool"]: p for p in body["policies"]}
    assert set(policies) >= {"delete-record", "issue-refund", "list-records", "get-weather"}
    shown = policies["delete-record"]
    assert {key: shown[key] for key in ("code", "mode", "approvers", "selfApproval", "expiresAfter")} == {
        "code": "always", "mode": "inherit", "approvers": [], "selfApproval": True, "expiresAfter": None,
    }  # fmt: skip
    assert (shown["approvalsRequired"], shown["version"]) == (1, 0)

    change = {"approvers": ["U2", "S1"], "expiresAfter": 3600, "approvalsRequired": 2, "selfApproval": False}
    status, policy = await request(bot, "PATCH", "/api/policies/delete-record", body=change)
    assert status == 200, policy
    assert (policy["approvers"], policy["expiresAfter"], policy["approvalsRequired"], policy["selfApproval"]) == (
        ["U2", "S1"], 3600, 2, False,
    )  # fmt: skip
    assert policy["version"] == 1 and policy["updatedBy"] == "system"
    status, policy = await request(
        bot, "PATCH", "/api/policies/delete-record", body={"mode": "disabled", "actor": "U1"}
    )
    assert status == 200 and policy["mode"] == "disabled" and policy["updatedBy"] == "U1"
    assert policy["approvers"] == ["U2", "S1"]  # kept

    lines = [e for e in await bot.storage.audit_log.entries() if e.action == "policy_changed"]
    assert [(e.tool_name, e.actor, e.via) for e in lines] == [
        ("delete-record", "system", "api"),
        ("delete-record", "U1", "api"),
    ]
    assert lines[0].before["approvers"] == [] and lines[0].after["approvers"] == ["U2", "S1"]
    assert lines[1].after["mode"] == "disabled"

    bad = [
        ("/api/policies/no-such-tool", {"mode": "disabled"}, 400, "unknown tool 'no-such-tool'"),
        ("/api/policies/delete-record", {"expiresAfter": "soon"}, 400, "expiresAfter must be a whole number"),
        ("/api/policies/delete-record", {"expiresAfter": 400 * 86400}, 400, "365 days"),
        ("/api/policies/delete-record", {"expiresAfter": -5}, 400, "negative"),
        ("/api/policies/delete-record", {"approvers": "U2"}, 400, "approvers must be a list of strings"),
        ("/api/policies/delete-record", {"approvers": ["bob"]}, 400, "not a Slack user or user-group ID: bob"),
        ("/api/policies/delete-record", {"mode": "sometimes"}, 400, "unknown mode 'sometimes'"),
        ("/api/policies/delete-record", {"approvalsRequired": 0}, 400, "approvals"),
        ("/api/policies/delete-record", {"colour": "red"}, 400, "unknown fields colour"),
        ("/api/policies/delete-record", {}, 400, "nothing to change"),
        ("/api/policies/delete-record", {"mode": "inherit", "actor": "U2"}, 403, "only admins"),
        ("/api/policies/delete-record", {"mode": "inherit", "actor": "UNOBODY"}, 400, "not a person"),
    ]
    for path, body, code, error in bad:
        status, answer = await request(bot, "PATCH", path, body=body)
        assert (status, error in answer.get("error", "")) == (code, True), (body, answer)
        assert "\n" not in answer["error"]
    status, _ = await request(bot, "PATCH", "/api/policies/delete-record", body={"mode": "inherit"}, headers={})
    assert status == 401
    status, _ = await request(bot, "GET", "/api/policies", headers={})
    assert status == 401
    assert (await bot.storage.policies.get("delete-record")).version == 2  # nothing else changed

    status, document = await request(bot, "GET", "/api/openapi.json", headers={})
    assert {"/api/agents/{agentId}/decisions", "/api/policies", "/api/policies/{tool}"} <= set(document["paths"])
    fields = document["components"]["schemas"]["PolicyChange"]["properties"]
    assert {"mode", "approvers", "selfApproval", "expiresAfter", "approvalsRequired", "actor"} <= set(fields)


async def test_bulk_approvals_of_a_four_eyes_call_count_one_by_one(admin_bot: RunningBot, model):
    bot = admin_bot
    await bot.storage.policies.set("delete-record", PolicyChange(approvals_required=2))
    model.chat.push(tool_calls(call("delete-record", {"id": 3}, id="call_1")), reply("Done."))
    await bot.mention("delete record 3")
    message = await bot.approval_message()
    status, page = await request(bot, "GET", "/api/agents/demo-agent/suspended-runs")
    item = {"runId": page["runs"][0]["runId"], "toolCallId": "call_1", "action": "approve"}

    status, body = await request(bot, "POST", BULK, body={"approver": "U2", "decisions": [item, item]})
    assert status == 200
    assert [(r["code"], r.get("status")) for r in body["results"]] == [(200, "waiting"), (403, None)]
    assert "U2 already approved it" in body["results"][1]["error"]
    await bot.slack.wait_for("chat.update", lambda c: c.params.get("ts") == message.ts and "1 of 2" in str(c.params))
    assert await record_ids(bot) == [1, 2, 3, 4, 5]

    status, body = await request(bot, "POST", BULK, body={"approver": "U3", "decisions": [item]})
    assert [(r["code"], r.get("status")) for r in body["results"]] == [(200, "approved")]
    await bot.slack.wait_for("chat.stopStream")
    assert await record_ids(bot) == [1, 2, 4, 5]
    approvals = [e.detail for e in await bot.storage.audit_log.entries() if e.action == "approved"]
    assert approvals == ["approval 1 of 2; waits for 1 more", "approval 2 of 2"]
