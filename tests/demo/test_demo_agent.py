"""The built-in demo agent: its tools act on the bot's database; sensitive ones wait; weather asks."""

from __future__ import annotations

from bot.demo import build_demo_agent, seed_demo_records
from memory import Memory
from tests.support.scripted_model import call, reply, tool_calls


async def demo(storage):
    await storage.migrate()
    await seed_demo_records(storage)
    await seed_demo_records(storage)  # seeding twice changes nothing
    return build_demo_agent(storage, model="openai/test-model").attach(storage=storage, memory=Memory(storage))


async def test_list_records_runs_without_approval(storage, model):
    agent = await demo(storage)
    model.chat.push(tool_calls(call("list-records", {}, id="c1")), reply("Five records."))
    output = await agent.generate("list the records", thread_id="t1", resource_id="U1")
    assert output.finish_reason == "stop"
    records = output.tool_results[0]["result"]["records"]
    assert [r["id"] for r in records] == [1, 2, 3, 4, 5]


async def test_delete_and_refund_wait_for_approval(storage, model):
    agent = await demo(storage)
    model.chat.push(tool_calls(call("delete-record", {"id": 1}, id="c1")))
    output = await agent.generate("delete record 1", thread_id="t1", resource_id="U1")
    assert output.finish_reason == "suspended" and output.suspend_payload.requires_approval
    model.chat.push(tool_calls(call("issue-refund", {"order_id": "A-1", "amount": 5}, id="c2")))
    output = await agent.generate("refund A-1", thread_id="t2", resource_id="U1")
    assert output.suspend_payload.tool_name == "issue-refund" and output.suspend_payload.requires_approval


async def test_weather_asks_for_the_city_and_answers_when_resumed(storage, model):
    agent = await demo(storage)
    model.chat.push(tool_calls(call("get-weather", {}, id="c1")))
    output = await agent.generate("weather?", thread_id="t1", resource_id="U1")
    assert output.suspend_payload.payload == {"question": "Which city?"}
    assert not output.suspend_payload.requires_approval
    model.chat.push(reply("Nice."))
    resumed = await agent.resume_generate({"city": "Lima"}, run_id=output.run_id)
    assert resumed.tool_results[-1]["result"]["city"] == "Lima"


async def test_a_refund_the_ledger_cannot_store_is_refused_before_anyone_is_asked(storage, model):
    """The refund's order id and amount are bounded by the ledger's columns (`varchar(64)`,
    `numeric(12, 2)`): the model is told, nobody is asked to approve what could never be stored."""
    agent = await demo(storage)
    for args in ({"order_id": "注文-" + "9" * 70, "amount": 5}, {"order_id": "A-1", "amount": 1e12}):
        model.chat.push(tool_calls(call("issue-refund", args, id="c1")), reply("Cannot refund that."))
        output = await agent.generate("refund it", thread_id=f"t-{args['amount']}", resource_id="U1")
        assert output.finish_reason == "stop", output
        assert output.tool_results[0]["is_error"], output.tool_results
