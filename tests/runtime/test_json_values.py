"""Values no JSON Schema user expects never reach a tool: NaN and infinity (`1e400`) in the model's
arguments, in edited arguments or in resume data are validation errors; text that no database can store
is cleaned before it is stored (issue 17, item 8). On SQLite and PostgreSQL."""

from __future__ import annotations

import math

import pytest

from bot.agent import ToolArgsInvalidError
from tests.runtime.helpers import Calls, make_agent, record_tool, run_status, tool_messages, weather_tool
from tests.support.scripted_model import call, reply, tool_calls
from tools import Schema, SchemaValidationError

REFUND_INPUT = {
    "type": "object",
    "properties": {"amount": {"type": "number", "exclusiveMinimum": 0}},
    "required": ["amount"],
}


@pytest.mark.parametrize("arguments", ['{"amount": NaN}', '{"amount": 1e400}', '{"amount": -Infinity}'])
async def test_a_non_finite_number_from_the_model_is_a_validation_error_and_the_tool_never_runs(
    model, storage, arguments
):
    calls = Calls()
    refund = record_tool("issue-refund", require_approval=False, calls=calls, input_schema=REFUND_INPUT)
    agent = make_agent([refund], storage=storage)
    model.chat.push(tool_calls(call("issue-refund", arguments, id="c_1")), reply("I could not do that."))

    output = await agent.generate("refund it")

    assert calls.inputs == []
    assert output.text == "I could not do that." and output.finish_reason == "stop"
    result = tool_messages(model.chat.requests[1])["c_1"]
    assert "finite" in result, result


async def test_a_non_finite_number_fails_every_schema_also_from_python():
    for value in (math.nan, math.inf, -math.inf):
        with pytest.raises(SchemaValidationError) as info:
            Schema(REFUND_INPUT).validate({"amount": value})
        assert info.value.errors[0].path == "/amount"


async def test_resume_data_with_a_lone_surrogate_and_a_nul_is_cleaned_before_it_is_stored(model, storage):
    executions: list = []
    agent = make_agent([weather_tool(executions)], storage=storage)
    model.chat.push(tool_calls(call("get-weather", {}, id="c_w")), reply("Sunny."))
    output = await agent.generate("Weather?")

    final = await agent.resume_generate({"city": "Z\u00fcrich\u0000 \ud800 東京"}, run_id=output.run_id)

    assert final.finish_reason == "stop" and final.text == "Sunny."
    assert executions[-1]["resume_data"] == {"city": "Z\u00fcrich \ufffd 東京"}
    assert await run_status(storage, output.run_id) != "failed"


async def test_edited_arguments_with_infinity_are_refused(model, storage):
    calls = Calls()
    refund = record_tool("issue-refund", calls=calls, input_schema=REFUND_INPUT)
    agent = make_agent([refund], storage=storage)
    model.chat.push(tool_calls(call("issue-refund", {"amount": 5}, id="c_1")), reply("Done."))
    output = await agent.generate("refund it")
    assert output.finish_reason == "suspended"

    with pytest.raises(ToolArgsInvalidError):
        await agent.approve_tool_call(run_id=output.run_id, tool_call_id="c_1", args={"amount": math.inf})
    assert calls.inputs == []
    assert await run_status(storage, output.run_id) == "suspended"
