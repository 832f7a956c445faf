"""Edit arguments: a modal generated from the input schema, validated; the edited arguments are what runs."""

from __future__ import annotations

import json

from tests.support.scripted_model import call, reply, tool_calls

from ...harness import RunningBot, ask_to_delete, record_ids


async def open_edit_modal(bot: RunningBot, message) -> dict:
    await bot.sender.click(message, "tool_edit_args", user="U2")
    opened = await bot.slack.wait_for("views.open")
    return opened[-1].params["view"]


async def test_edit_modal_is_generated_from_the_input_schema(bot: RunningBot, model):
    model.chat.push(tool_calls(call("issue-refund", {"order_id": "A-1", "amount": 30, "reason": "late"}, id="call_1")))
    await bot.mention("refund order A-1")
    message = await bot.approval_message()
    view = await open_edit_modal(bot, message)
    inputs = {block["block_id"]: block for block in view["blocks"] if block["type"] == "input"}
    assert set(inputs) == {"field:order_id", "field:amount", "field:reason"}
    assert inputs["field:order_id"]["element"]["type"] == "plain_text_input"
    assert inputs["field:order_id"]["element"]["initial_value"] == "A-1"
    assert inputs["field:amount"]["element"]["type"] == "number_input"
    assert inputs["field:amount"]["element"]["is_decimal_allowed"] is True
    assert inputs["field:reason"]["optional"] is True and inputs["field:order_id"]["optional"] is False


async def test_edited_arguments_are_what_gets_approved_and_run(bot: RunningBot, model):
    ask_to_delete(model, 3)
    await bot.mention("delete record 3")
    message = await bot.approval_message()
    view = await open_edit_modal(bot, message)

    status, body = await bot.sender.submit(
        view, {"field:id": {"value": {"type": "number_input", "value": "5"}}}, user="U2"
    )
    assert status == 200 and body == ""  # the modal closes
    await bot.slack.wait_for("chat.update", lambda c: c.params.get("ts") == message.ts)
    assert "Approved with edited arguments" in message.all_text and '"id": 5' in message.all_text
    await bot.slack.wait_for("chat.stopStream")
    assert await record_ids(bot) == [1, 2, 3, 4]


async def test_invalid_edited_arguments_stay_in_the_modal_and_nothing_runs(bot: RunningBot, model):
    model.chat.push(tool_calls(call("issue-refund", {"order_id": "A-1", "amount": 30}, id="call_1")))
    await bot.mention("refund order A-1")
    message = await bot.approval_message()
    view = await open_edit_modal(bot, message)

    values = {
        "field:order_id": {"value": {"type": "plain_text_input", "value": "A-1"}},
        "field:amount": {"value": {"type": "number_input", "value": "-5"}},
        "field:reason": {"value": {"type": "plain_text_input", "value": None}},
    }
    status, body = await bot.sender.submit(view, values, user="U2")
    assert status == 200
    answer = json.loads(body)
    assert answer["response_action"] == "errors"
    assert answer["errors"] == {"field:amount": "Must be more than 0."}  # in words, next to the field

    values["field:order_id"] = {"value": {"type": "plain_text_input", "value": None}}
    values["field:amount"] = {"value": {"type": "number_input", "value": "12.5"}}
    status, body = await bot.sender.submit(view, values, user="U2")
    assert json.loads(body)["errors"] == {"field:order_id": "Fill this in."}

    await bot.slack.settle()
    assert message.action_ids()[0] == "tool_approve"  # still waiting
    assert bot.slack.calls_of("chat.update") == []
    record = await bot.agent.get_tool_call(await _run_of(bot), "call_1")
    assert record.state == "awaiting_approval" and record.args == {"order_id": "A-1", "amount": 30}


async def _run_of(bot: RunningBot) -> str:
    from sqlalchemy import select

    from bot.slack.tables import ToolCallMessageRow

    async with bot.storage.session() as session:
        return (await session.scalars(select(ToolCallMessageRow.run_id))).first()


async def test_edit_arguments_then_the_refund_ledger_has_the_edited_amount(bot: RunningBot, model):
    model.chat.push(
        tool_calls(call("issue-refund", {"order_id": "A-1", "amount": 300}, id="call_1")), reply("Refunded.")
    )
    await bot.mention("refund order A-1")
    message = await bot.approval_message()
    view = await open_edit_modal(bot, message)
    values = {
        "field:order_id": {"value": {"type": "plain_text_input", "value": "A-1"}},
        "field:amount": {"value": {"type": "number_input", "value": "30"}},
        "field:reason": {"value": {"type": "plain_text_input", "value": "partial"}},
    }
    await bot.sender.submit(view, values, user="U2")
    await bot.slack.wait_for("chat.stopStream")
    from sqlalchemy import select

    from bot.demo.tables import DemoRefundRow

    async with bot.storage.session() as session:
        refunds = list(await session.scalars(select(DemoRefundRow)))
    assert [(r.order_id, float(r.amount), r.reason) for r in refunds] == [("A-1", 30.0, "partial")]
