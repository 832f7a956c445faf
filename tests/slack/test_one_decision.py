"""One rule, decided in the runtime, for every surface (issue 39): the speaker of a question, a repeated
approval, a decision forged from the App Home by someone outside the conversation. Through the real Bolt
app, the Slack emulation and the scripted model."""

from __future__ import annotations

import copy

from memory import PolicyChange
from tests.support.scripted_model import call, reply, structured, tool_calls
from tests.support.statements import statements_of
from tests.support.waiting import until

from .harness import RunningBot, ask_to_delete, home_click, published, record_ids, text_of


async def resumed_lines(bot: RunningBot) -> list[tuple[str, str, str]]:
    return [(e.action, e.actor, e.via) for e in await bot.storage.audit_log.entries() if e.action == "resumed"]


async def test_a_bystanders_reply_is_a_turn_of_its_own_and_their_answer_form_is_refused(bot: RunningBot, model):
    model.chat.push(tool_calls(call("get-weather", {}, id="call_1")))
    event = await bot.mention("東京の天気は?", user="U1")
    question = await bot.question_message()

    # Bob writes a city in Alice's thread: not read as an answer to her question, an ordinary turn
    model.chat.push(reply("ボブさん、アリスさんの質問を待っています。"))
    await bot.say("巴黎", thread_ts=event["ts"], user="U2")
    await bot.slack.wait_for("chat.stopStream")
    assert model.structured.requests == []  # nobody asked the model whether Bob answered
    waiting = (await bot.agent.list_suspended_runs()).runs
    assert [run.tool_calls[0].tool_name for run in waiting] == ["get-weather"]

    # Bob's Answer form: refused where he clicked, nothing opens
    await bot.sender.click(question, "tool_answer", user="U2")
    told = await bot.slack.wait_for("chat.postEphemeral")
    assert told[0].params["user"] == "U2"
    assert told[0].params["text"] == "Only <@U1> may answer this question from `get-weather`."
    assert bot.slack.calls_of("views.open") == []

    # Alice answers in the thread: resumed, and audited as Alice, who wrote the reply
    model.structured.push(structured({"city": "巴黎"}))
    model.chat.push(reply("巴黎は晴れです。"))
    await bot.say("我在巴黎", thread_ts=event["ts"], user="U1")
    stops = await bot.slack.wait_for("chat.stopStream", count=2)
    assert bot.slack.message("C1", stops[-1].params["ts"]).text == "巴黎は晴れです。"
    assert await resumed_lines(bot) == [("resumed", "U1", "thread")]
    refused = [e for e in await bot.storage.audit_log.entries(run_id=waiting[0].run_id) if e.action == "refused"]
    assert [(e.actor, e.via) for e in refused] == [("U2", "button")]


async def test_an_answer_in_the_thread_is_audited_as_who_wrote_it_not_the_threads_owner(bot: RunningBot, model):
    model.chat.push(reply("こんにちは。"))
    event = await bot.mention("안녕하세요", user="U1")  # Alice's thread
    await bot.slack.wait_for("chat.stopStream")

    model.chat.push(tool_calls(call("get-weather", {}, id="call_1")))
    await bot.say("서울 날씨는?", thread_ts=event["ts"], user="U2")  # Bob asks in it
    await bot.question_message()

    model.structured.push(structured({"city": "서울"}))
    model.chat.push(reply("서울은 맑아요."))
    await bot.say("서울", thread_ts=event["ts"], user="U2")  # Bob answers his own question
    stops = await bot.slack.wait_for("chat.stopStream", count=2)
    assert bot.slack.message("C1", stops[-1].params["ts"]).text == "서울은 맑아요."
    assert await resumed_lines(bot) == [("resumed", "U2", "thread")]


async def test_a_repeated_approval_leaves_exactly_one_refused_line(bot: RunningBot, model):
    await bot.storage.policies.set("delete-record", PolicyChange(approvals_required=2))
    ask_to_delete(model)
    await bot.mention("レコード3を削除して", user="U1")
    message = await bot.approval_message()

    await bot.sender.click(message, "tool_approve", user="U2")
    await bot.slack.wait_for("chat.update", lambda c: "1 of 2 approvals" in str(c.params))
    await bot.sender.click(message, "tool_approve", user="U2")  # the same person again
    told = await bot.slack.wait_for("chat.postEphemeral")
    assert "you already approved it" in told[0].params["text"]
    await bot.slack.settle()

    lines = [e for e in await bot.storage.audit_log.entries() if e.run_id is not None]
    assert [(e.action, e.actor) for e in lines] == [("requested", "U1"), ("approved", "U2"), ("refused", "U2")]
    assert "U2 already approved it" in (lines[-1].detail or "")
    assert await record_ids(bot) == [1, 2, 3, 4, 5]


async def test_a_forged_home_decision_from_outside_a_dm_is_refused(bot: RunningBot, model):
    ask_to_delete(model)
    await bot.say("レコード3を削除して", user="U1", channel="D1", channel_type="im")
    message = await bot.approval_message(channel="D1")
    ref = message.button_value("tool_decline")

    # Bob is not in Alice's DM: a Home payload naming her approval decides nothing
    await home_click(bot, "U2", "tool_decline", ref)
    await bot.slack.wait_for("views.publish", lambda c: "in the conversation" in str(c.params.get("view")))
    assert "Only people in the conversation may decide `delete-record` requests." in text_of(published(bot, "U2")[-1])
    await bot.slack.settle()
    assert message.action_ids()[0] == "tool_approve"  # still waiting
    refused = [e for e in await bot.storage.audit_log.entries() if e.action == "refused"]
    assert [(e.actor, e.via) for e in refused] == [("U2", "home")]

    # Alice, in it, still decides
    await home_click(bot, "U1", "tool_decline", ref)
    await bot.slack.wait_for("chat.update", lambda c: "Declined" in str(c.params))
    assert await record_ids(bot) == [1, 2, 3, 4, 5]


async def test_a_click_on_a_decided_call_reads_the_call_once(bot: RunningBot, model):
    """A late click (another's won) is audited and its message shown again from the one read its check made."""
    ask_to_delete(model)
    await bot.mention("delete record 3", user="U1")
    message = await bot.approval_message()
    stale = copy.deepcopy(message)  # as a second user's screen still shows it
    await bot.sender.click(message, "tool_approve", user="U2")
    await bot.slack.wait_for("chat.stopStream")
    # U2's click is done once its Undo is offered (its last read): on a loaded machine that can come after
    # a settle's quiet 0.3 s, and its read fell among the late click's
    await until(lambda: message.action_ids() == ["tool_undo"], 30, what="the Undo offered to U2")
    await bot.slack.settle()
    with statements_of(bot.storage) as seen:
        await bot.sender.click(stale, "tool_approve", user="U3")
        told = await bot.slack.wait_for("chat.postEphemeral")
        await bot.slack.settle()
    assert "already decided" in told[0].params["text"]
    lines = [e for e in await bot.storage.audit_log.entries() if e.action == "refused"]
    assert [e.actor for e in lines] == ["U3"]
    calls = [s for s in seen if s.startswith("SELECT") and ("FROM runs" in s or "FROM tool_calls" in s)]
    assert len(calls) == 2, calls  # the click's check, then the Undo offer (the call as it is now)
