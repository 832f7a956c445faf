"""`suspend()` inside a tool, and `resume_stream`/`resume_generate`."""

from __future__ import annotations

import pytest

from bot.agent import ResumeDataInvalidError, SnapshotNotFoundError, ToolCallNotSuspendedError
from tests.runtime.helpers import (
    FINISHED,
    collect,
    decide,
    finish_reason,
    make_agent,
    of_type,
    one,
    run_status,
    text_of,
    tool_messages,
    weather_tool,
)
from tests.support.scripted_model import call, reply, tool_calls


async def test_suspend_surfaces_chunk_and_stores_run(model, storage):
    executions = []
    agent = make_agent([weather_tool(executions)], storage=storage)
    model.chat.push(tool_calls(call("get-weather", {"when": "tomorrow"}, id="c_w")))

    stream = await agent.stream("Weather tomorrow?", request_context={"team": "T1"})
    chunks = await collect(stream)

    assert finish_reason(chunks) == "suspended"
    suspended = one(chunks, "tool-call-suspended")
    assert suspended.payload["tool_call_id"] == "c_w"
    assert suspended.payload["tool_name"] == "get-weather"
    assert suspended.payload["args"] == {"when": "tomorrow"}
    assert suspended.payload["suspend_payload"] == {"question": "Which city?"}
    assert suspended.payload["resume_schema"]["properties"]["city"] == {"type": "string"}
    assert of_type(chunks, "tool-call-approval") == []
    assert of_type(chunks, "tool-result") == []
    assert len(executions) == 1
    first = executions[0]
    assert first["resume_data"] is None and first["suspend_payload"] is None
    assert first["run_id"] == stream.run_id
    assert first["tool_call_id"] == "c_w"
    assert first["request_context"] == {"team": "T1"}
    assert await run_status(storage, stream.run_id) == "suspended"

    output = await stream.result()
    assert output.finish_reason == "suspended"
    assert output.suspend_payload.requires_approval is False
    assert output.suspend_payload.payload == {"question": "Which city?"}
    assert output.suspend_payload.tool_name == "get-weather"


async def test_resume_stream_runs_tool_again_with_resume_data(model, storage):
    executions = []
    agent = make_agent([weather_tool(executions)], storage=storage)
    model.chat.push(tool_calls(call("get-weather", {"when": "tomorrow"}, id="c_w")), reply("Sunny in Paris."))

    stream = await agent.stream("Weather tomorrow?")
    await collect(stream)
    chunks = await decide(agent.resume_stream({"city": "Paris"}, run_id=stream.run_id, tool_call_id="c_w"))

    assert len(executions) == 2
    second = executions[1]
    assert second["resume_data"] == {"city": "Paris"}
    assert second["suspend_payload"] == {"question": "Which city?"}
    assert second["input"] == {"when": "tomorrow"}
    assert second["tool_call_id"] == "c_w"
    result = one(chunks, "tool-result")
    assert result.payload["result"] == {"city": "Paris", "forecast": "sunny"}
    assert result.payload["is_error"] is False
    assert text_of(chunks) == "Sunny in Paris."
    assert finish_reason(chunks) == "stop"
    assert "Paris" in tool_messages(model.chat.requests[-1])["c_w"]
    assert await run_status(storage, stream.run_id) == "completed"


async def test_resume_generate(model, storage):
    executions = []
    agent = make_agent([weather_tool(executions)], storage=storage)
    model.chat.push(tool_calls(call("get-weather", {}, id="c_w")), reply("Sunny in Oslo."))

    output = await agent.generate("Weather?")
    assert output.finish_reason == "suspended"
    final = await agent.resume_generate({"city": "Oslo", "days": 2}, run_id=output.run_id)

    assert final.finish_reason == "stop"
    assert final.text == "Sunny in Oslo."
    assert executions[-1]["resume_data"] == {"city": "Oslo", "days": 2}


async def test_bad_suspend_payload_is_an_error_result_not_a_suspension(model, storage):
    executions = []
    agent = make_agent([weather_tool(executions, suspend_with={"wrong": 1})], storage=storage)
    model.chat.push(tool_calls(call("get-weather", {}, id="c_w")), reply("Something went wrong."))

    chunks = await collect(await agent.stream("Weather?"))

    assert of_type(chunks, "tool-call-suspended") == []
    result = one(chunks, "tool-result")
    assert result.payload["is_error"] is True
    assert finish_reason(chunks) == "stop"
    assert tool_messages(model.chat.requests[-1])["c_w"]
    assert len(executions) == 1


@pytest.mark.parametrize(
    "bad, path",
    [({"days": 2}, "city"), ({"city": "Paris", "days": 0}, "days"), ({"city": 5}, "city")],
    ids=["missing-city", "days-below-minimum", "city-not-string"],
)
async def test_invalid_resume_data_keeps_run_resumable(model, storage, bad, path):
    executions = []
    agent = make_agent([weather_tool(executions)], storage=storage)
    model.chat.push(tool_calls(call("get-weather", {}, id="c_w")), reply("Sunny in Rome."))

    output = await agent.generate("Weather?")
    with pytest.raises(ResumeDataInvalidError) as info:
        await decide(agent.resume_stream(bad, run_id=output.run_id, tool_call_id="c_w"))

    assert path in str(info.value)
    assert len(executions) == 1, "the tool does not run with invalid resume data"
    assert await run_status(storage, output.run_id) == "suspended"
    assert len(model.chat.requests) == 1

    final = await agent.resume_generate({"city": "Rome"}, run_id=output.run_id, tool_call_id="c_w")
    assert final.finish_reason == "stop"
    assert final.text == "Sunny in Rome."
    assert executions[-1]["resume_data"] == {"city": "Rome"}


async def test_resume_twice_is_refused(model, storage):
    executions = []
    agent = make_agent([weather_tool(executions)], storage=storage)
    model.chat.push(tool_calls(call("get-weather", {}, id="c_w")), reply("Sunny."))

    output = await agent.generate("Weather?")
    await agent.resume_generate({"city": "Rome"}, run_id=output.run_id)
    with pytest.raises(ToolCallNotSuspendedError):
        await decide(agent.resume_stream({"city": "Rome"}, run_id=output.run_id, tool_call_id="c_w"))
    assert len(executions) == 2


async def test_approval_then_suspend(model, storage):
    """A gated tool that also suspends: approve first, then it asks, then it is resumed."""
    executions = []
    agent = make_agent([weather_tool(executions, require_approval=True)], storage=storage)
    model.chat.push(tool_calls(call("get-weather", {}, id="c_w")), reply("Sunny in Lima."))

    output = await agent.generate("Weather?")
    assert output.suspend_payload.requires_approval is True
    assert executions == []

    chunks = await decide(agent.approve_tool_call(run_id=output.run_id, tool_call_id="c_w"))
    assert finish_reason(chunks) == "suspended"
    assert one(chunks, "tool-call-suspended").payload["suspend_payload"] == {"question": "Which city?"}
    assert len(executions) == 1

    final = await agent.resume_generate({"city": "Lima"}, run_id=output.run_id, tool_call_id="c_w")
    assert final.text == "Sunny in Lima."
    assert len(executions) == 2


async def test_unknown_run_with_storage(model, storage):
    agent = make_agent([weather_tool([])], storage=storage)
    with pytest.raises(SnapshotNotFoundError):
        await decide(agent.resume_stream({"city": "Rome"}, run_id="run-does-not-exist"))
    with pytest.raises(SnapshotNotFoundError):
        await decide(agent.approve_tool_call(run_id="run-does-not-exist"))


async def test_unknown_run_without_storage_says_to_configure_storage(model):
    agent = make_agent([weather_tool([])])
    with pytest.raises(SnapshotNotFoundError) as info:
        await decide(agent.resume_stream({"city": "Rome"}, run_id="run-does-not-exist"))
    assert "storage" in str(info.value).lower()


async def test_without_storage_resume_works_within_the_process(model):
    executions = []
    agent = make_agent([weather_tool(executions)])
    model.chat.push(tool_calls(call("get-weather", {}, id="c_w")), reply("Sunny in Kyiv."))

    output = await agent.generate("Weather?")
    final = await agent.resume_generate({"city": "Kyiv"}, run_id=output.run_id)

    assert final.text == "Sunny in Kyiv."
    assert len(executions) == 2


async def test_aclose_closes_the_temporary_database_an_agent_made_and_not_a_given_one(model, storage):
    model.chat.push(reply("Hei."), reply("Hei taas."))
    alone = make_agent([weather_tool([])])
    assert (await alone.generate("Moi")).text == "Hei."
    temporary = alone.storage
    assert "agent-runs-" in temporary.url and temporary.engine.pool.checkedin() > 0
    await alone.aclose()
    assert temporary.engine.pool.checkedin() == 0

    given = make_agent([weather_tool([])], storage=storage)
    assert (await given.generate("Moi")).text == "Hei taas."
    connections = storage.engine.pool.checkedin()
    await given.aclose()
    assert storage.engine.pool.checkedin() == connections > 0


async def test_context_carries_thread_and_resource(model, storage):
    from memory import Memory

    executions = []
    agent = make_agent([weather_tool(executions)], memory=Memory(storage))
    model.chat.push(tool_calls(call("get-weather", {}, id="c_w")), reply("Sunny."))

    output = await agent.generate(
        "Weather?", thread_id="thread-1", resource_id="user-1", auto_resume_suspended_tools=False
    )
    await agent.resume_generate({"city": "Rome"}, run_id=output.run_id)

    for execution in executions:
        assert execution["thread_id"] == "thread-1"
        assert execution["resource_id"] == "user-1"
    assert await run_status(storage, output.run_id) in FINISHED
