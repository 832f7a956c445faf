"""Auto-resume: the user's next message in the thread answers a call parked by `suspend()`.

The "which city?" conversation, on SQLite and PostgreSQL: the answer resumes the same run; an
unrelated message, another thread, a failed or invalid extraction leave the call parked (and the
model is told what still waits); approvals are never settled by a message."""

from __future__ import annotations

import asyncio
import json
import time

import pytest

from memory import Memory
from tests.memory.helpers import (
    CITY_RESUME,
    OPTS,
    THREAD,
    USER,
    ask_to_deploy,
    ask_which_city,
    auto_agent,
    date_tool,
    deploy_tool,
    extraction_prompt,
    has_waiting_note,
    memory_agent,
    state_of,
    weather_tool,
)
from tests.runtime.helpers import (
    assert_every_tool_call_answered,
    collect,
    finish_reason,
    one,
    record_tool,
    run_status,
    text_of,
    tool_messages,
    types,
    user_texts,
)
from tests.support.scripted_model import call, failure, reply, structured, tool_calls

# -- the answer in the next message ----------------------------------------------------------------


async def test_the_answer_in_the_next_message_resumes_the_same_run(model, storage):
    weather = weather_tool()
    agent = auto_agent(storage, [weather])
    first = await ask_which_city(model, agent)

    model.structured.push(structured({"city": "Paris"}))
    model.chat.push(reply("Tomorrow in Paris: sunny."))
    stream = await agent.stream("Paris, please", **OPTS)
    chunks = await collect(stream)
    output = await stream.result()

    assert stream.run_id == first.run_id and output.run_id == first.run_id
    assert finish_reason(chunks) == "stop"
    result = one(chunks, "tool-result")
    assert result.payload["tool_call_id"] == "c_city"
    assert result.payload["result"] == {"city": "Paris", "forecast": "sunny", "when": "tomorrow"}
    assert types(chunks).index("tool-result") < types(chunks).index("text-delta")
    assert text_of(chunks) == output.text == "Tomorrow in Paris: sunny."
    assert [c["resume_data"] for c in weather.calls.inputs] == [None, {"city": "Paris"}]
    assert weather.calls.inputs[1]["input"] == {"when": "tomorrow"}  # the stored arguments

    # the extraction: one deterministic structured-output request, strict, asking for the resume
    # schema's fields, each of which may be null ("the reply does not say")
    [extraction] = model.structured.requests
    assert extraction["temperature"] == 0
    assert extraction["response_format"]["type"] == "json_schema"
    spec = extraction["response_format"]["json_schema"]
    assert spec["strict"] is True
    assert spec["schema"] == {**CITY_RESUME, "properties": {"city": {"type": ["string", "null"]}}}
    assert "tools" not in extraction
    assert "Question: Which city?\nReply: Paris, please" in extraction_prompt(extraction)

    # the model's request after the resume: the answer in the thread, the call followed by its result
    after = model.chat.requests[-1]
    assert_every_tool_call_answered(after)
    assert "Paris" in tool_messages(after)["c_city"]
    assert user_texts(after) == ["What's the weather tomorrow?", "Paris, please"]
    assert not has_waiting_note(after)

    assert await run_status(storage, first.run_id) == "completed"
    assert await state_of(agent, first.run_id) == "done"
    assert (await agent.list_suspended_runs(thread_id=THREAD)).total == 0
    stored = await agent.memory.messages(THREAD)
    assert [m["content"] for m in stored if m["role"] == "user"] == ["What's the weather tomorrow?", "Paris, please"]
    assert stored[-1] == {"role": "assistant", "content": "Tomorrow in Paris: sunny."}
    assert model.unexpected == []

    # the next message is an ordinary turn: nothing waits, so no extraction
    model.chat.push(reply("You're welcome."))
    later = await agent.generate("thanks", **OPTS)
    assert later.run_id != first.run_id and later.text == "You're welcome."
    assert len(model.structured.requests) == 1


async def test_generate_returns_the_resumed_output(model, storage):
    agent = auto_agent(storage, [weather_tool()])
    first = await ask_which_city(model, agent)
    model.structured.push(structured({"city": "Lyon"}))
    model.chat.push(reply("Lyon: sunny."))

    output = await agent.generate("Lyon", **OPTS)

    assert output.run_id == first.run_id
    assert output.finish_reason == "stop"
    assert output.text == "Lyon: sunny."
    assert [r["result"]["city"] for r in output.tool_results] == ["Lyon"]
    assert output.suspend_payload is None


# -- messages that do not answer -------------------------------------------------------------------


async def test_an_unrelated_message_is_a_normal_turn_and_the_call_stays_parked(model, storage):
    weather = weather_tool()
    agent = auto_agent(storage, [weather])
    first = await ask_which_city(model, agent)

    model.structured.push(structured({"city": None}))
    model.chat.push(reply("Hello! Which city do you want the weather for?"))
    output = await agent.generate("hello there", **OPTS)

    assert output.run_id != first.run_id
    assert output.finish_reason == "stop"
    assert output.text == "Hello! Which city do you want the weather for?"
    assert len(weather.calls) == 1  # the tool did not run again
    assert await state_of(agent, first.run_id) == "suspended"
    assert await run_status(storage, first.run_id) == "suspended"
    body = model.chat.requests[-1]
    assert has_waiting_note(body, "get-weather", "Which city?")
    assert body["messages"][-1] == {"role": "user", "content": "hello there"}
    assert_every_tool_call_answered(body)
    assert [r.run_id for r in (await agent.list_suspended_runs(thread_id=THREAD)).runs] == [first.run_id]

    # the answer still resumes it later
    model.structured.push(structured({"city": "Oslo"}))
    model.chat.push(reply("Oslo: sunny."))
    resumed = await agent.generate("Oslo", **OPTS)
    assert resumed.run_id == first.run_id and resumed.text == "Oslo: sunny."
    assert weather.calls.inputs[-1]["resume_data"] == {"city": "Oslo"}
    assert model.unexpected == []


async def test_the_same_answer_in_another_thread_does_not_resume(model, storage):
    weather = weather_tool()
    agent = auto_agent(storage, [weather])
    first = await ask_which_city(model, agent)

    model.chat.push(reply("Paris is lovely."), reply("Hi."))
    other = await agent.generate("Paris", thread_id="another-thread", resource_id=USER)
    assert other.run_id != first.run_id and other.text == "Paris is lovely."
    # another thread of another user, too
    await agent.generate("Paris", thread_id="third-thread", resource_id="U_BOB")

    assert model.structured.requests == []  # nothing parked there: no extraction at all
    assert len(weather.calls) == 1
    assert await state_of(agent, first.run_id) == "suspended"
    for body in model.chat.requests[1:]:
        assert not has_waiting_note(body)
        assert user_texts(body) == ["Paris"]
    assert model.unexpected == []


async def test_the_answer_without_a_thread_does_not_resume(model, storage):
    agent = auto_agent(storage, [weather_tool()])
    first = await ask_which_city(model, agent)
    model.chat.push(reply("Paris?"))
    output = await agent.generate("Paris", resource_id=USER)
    assert output.run_id != first.run_id
    assert model.structured.requests == []
    assert await state_of(agent, first.run_id) == "suspended"


FAILED_EXTRACTIONS = {
    "garbage-body": failure("garbage"),
    "not-json": structured("Paris, I think"),
    "http-500": failure(500),
    "wrong-shape": structured({"town": "Paris"}),
    "not-an-object": structured('"Paris"'),
    "wrong-type": structured({"city": 42}),
    "null": structured({"city": None}),
    "a-list": structured([1, 2, 3]),
}


@pytest.mark.parametrize("answer", list(FAILED_EXTRACTIONS.values()), ids=list(FAILED_EXTRACTIONS))
async def test_a_failed_or_invalid_extraction_is_a_normal_turn(model, storage, answer):
    weather = weather_tool()
    agent = auto_agent(storage, [weather])
    first = await ask_which_city(model, agent)

    model.structured.push(answer)
    model.chat.push(reply("Which city, again?"))
    output = await agent.generate("Paris", **OPTS)

    assert output.run_id != first.run_id
    assert output.finish_reason == "stop" and output.text == "Which city, again?"
    assert len(weather.calls) == 1
    assert await state_of(agent, first.run_id) == "suspended"
    assert has_waiting_note(model.chat.requests[-1], "get-weather", "Which city?")
    assert len(model.structured.requests) == 1

    # it can be resumed later, by the next answer or by hand
    model.structured.push(structured({"city": "Paris"}))
    model.chat.push(reply("Paris: sunny."))
    resumed = await agent.generate("I said Paris", **OPTS)
    assert resumed.run_id == first.run_id and resumed.text == "Paris: sunny."
    assert weather.calls.inputs[-1]["resume_data"] == {"city": "Paris"}
    assert model.unexpected == []


async def test_an_extraction_that_times_out_is_one_bounded_request_and_a_normal_turn(model, storage):
    weather = weather_tool()
    agent = auto_agent(storage, [weather], default_options={"auto_resume_timeout": 0.5})
    first = await ask_which_city(model, agent)

    # a server that hangs every time: a retried extraction would wait once per attempt
    model.structured.push(*(failure("timeout", seconds=3) for _ in range(3)))
    model.chat.push(reply("Which city?"))
    started = time.monotonic()
    output = await agent.generate("Paris", **OPTS)
    elapsed = time.monotonic() - started

    assert output.run_id != first.run_id and output.text == "Which city?"
    assert await state_of(agent, first.run_id) == "suspended"
    assert has_waiting_note(model.chat.requests[-1], "get-weather")
    assert len(model.structured.requests) == 1, (
        f"the extraction is one request, not retried: {len(model.structured.requests)} requests in {elapsed:.1f}s"
    )
    assert elapsed < 1.5, f"the turn waited {elapsed:.1f}s for an extraction bounded at 0.5s"

    # resumed later by hand
    model.chat.push(reply("Paris: sunny."))
    resumed = await agent.resume_generate({"city": "Paris"}, run_id=first.run_id, tool_call_id="c_city")
    assert resumed.text == "Paris: sunny."


# -- several parked calls --------------------------------------------------------------------------


async def test_with_two_parked_calls_the_extraction_names_the_one_answered(model, storage):
    weather, booking = weather_tool(), date_tool()
    agent = auto_agent(storage, [weather, booking])
    first = await ask_which_city(model, agent)

    # turn 2 does not answer, and parks a second call in another run
    model.structured.push(structured({"city": None}))
    model.chat.push(tool_calls(call("book-table", {}, id="c_date")))
    second = await agent.generate("Also book me a table", **OPTS)
    assert second.finish_reason == "suspended" and second.run_id != first.run_id
    assert (await agent.list_suspended_runs(thread_id=THREAD)).total == 2

    # turn 3 answers the date
    model.structured.push(structured({"get-weather": {"city": None}, "book-table": {"date": "Friday"}}))
    model.chat.push(reply("Booked for Friday."))
    output = await agent.generate("Friday works", **OPTS)

    assert output.run_id == second.run_id and output.text == "Booked for Friday."
    assert booking.calls.inputs[-1]["resume_data"] == {"date": "Friday"}
    assert len(weather.calls) == 1
    assert await state_of(agent, first.run_id) == "suspended"
    extraction = model.structured.requests[-1]
    schema = extraction["response_format"]["json_schema"]["schema"]
    assert list(schema["properties"]) == ["get-weather", "book-table"]  # the calls, named by their tools
    assert schema["properties"]["get-weather"]["properties"] == {"city": {"type": ["string", "null"]}}
    assert schema["properties"]["book-table"]["properties"] == {"date": {"type": ["string", "null"]}}
    prompt = extraction_prompt(extraction)
    assert '"get-weather" asked: Which city?' in prompt and '"book-table" asked: Which date?' in prompt
    assert "c_city" not in json.dumps(extraction) and "c_date" not in json.dumps(extraction)

    # turn 4 answers the city
    model.structured.push(structured({"city": "Rome"}))
    model.chat.push(reply("Rome: sunny."))
    output = await agent.generate("Rome", **OPTS)
    assert output.run_id == first.run_id and output.text == "Rome: sunny."
    assert extraction_prompt(model.structured.requests[-1]).startswith("Question: Which city?")
    assert (await agent.list_suspended_runs(thread_id=THREAD)).total == 0
    assert model.unexpected == []


async def test_two_parked_calls_of_one_step_resume_one_at_a_time(model, storage):
    weather, booking = weather_tool(), date_tool()
    agent = auto_agent(storage, [weather, booking])
    model.chat.push(tool_calls(call("get-weather", {}, id="c_city"), call("book-table", {}, id="c_date")))
    first = await agent.generate("Weather and a table", **OPTS)
    assert first.finish_reason == "suspended"

    model.structured.push(structured({"get-weather": {"city": None}, "book-table": {"date": "Monday"}}))
    partial = await agent.generate("Monday", **OPTS)
    assert partial.run_id == first.run_id
    assert partial.finish_reason == "suspended"  # the city is still asked
    assert await state_of(agent, first.run_id, "c_date") == "done"
    assert await state_of(agent, first.run_id, "c_city") == "suspended"
    assert len(model.chat.requests) == 1  # the step is not settled: the model is not asked yet

    model.structured.push(structured({"city": "Nice"}))
    model.chat.push(reply("Nice on Monday."))
    done = await agent.generate("Nice", **OPTS)
    assert done.run_id == first.run_id and done.text == "Nice on Monday."
    body = model.chat.requests[-1]
    assert_every_tool_call_answered(body)
    assert "Nice" in tool_messages(body)["c_city"] and "Monday" in tool_messages(body)["c_date"]
    assert await run_status(storage, first.run_id) == "completed"


# -- approvals are never auto-resumed --------------------------------------------------------------


async def test_an_approval_is_never_settled_by_a_message(model, storage):
    delete = record_tool("delete-record")
    agent = auto_agent(storage, [delete])
    model.chat.push(tool_calls(call("delete-record", {"id": "42"}, id="c_del")))
    first = await agent.generate("Delete record 42", **OPTS)
    assert first.finish_reason == "suspended" and first.suspend_payload.requires_approval

    model.chat.push(reply("It still needs an approval."))
    output = await agent.generate("approved=true, I approve this, go ahead", **OPTS)

    assert output.run_id != first.run_id
    assert len(delete.calls) == 0
    assert model.structured.requests == []  # only approvals wait: no extraction is even asked
    assert await state_of(agent, first.run_id, "c_del") == "awaiting_approval"
    assert has_waiting_note(model.chat.requests[-1], "delete-record")
    [run] = (await agent.list_suspended_runs(thread_id=THREAD)).runs
    assert run.run_id == first.run_id and run.tool_calls[0].requires_approval

    # a real decision still works
    model.chat.push(reply("Deleted."))
    done = await agent.approve_tool_call_generate(run_id=first.run_id, tool_call_id="c_del")
    assert done.text == "Deleted." and len(delete.calls) == 1


async def test_an_approval_is_not_offered_to_the_extraction_nor_resumed_by_it(model, storage):
    delete, weather = record_tool("delete-record"), weather_tool()
    agent = auto_agent(storage, [delete, weather])
    model.chat.push(tool_calls(call("delete-record", {"id": "42"}, id="c_del"), call("get-weather", {}, id="c_city")))
    first = await agent.generate("Delete 42 and tell me the weather", **OPTS)
    assert first.finish_reason == "suspended"

    # even an extraction that names the approval does not settle it
    model.structured.push(structured({"city": "Paris", "approved": True}))
    model.chat.push(reply("The deletion still waits for approval."))
    output = await agent.generate("approved=true, I approve this, go ahead", **OPTS)

    assert output.run_id != first.run_id
    assert len(delete.calls) == 0 and len(weather.calls) == 1
    assert await state_of(agent, first.run_id, "c_del") == "awaiting_approval"
    assert await state_of(agent, first.run_id, "c_city") == "suspended"
    extraction = model.structured.requests[-1]
    assert extraction["response_format"]["json_schema"]["schema"]["properties"] == {
        "city": {"type": ["string", "null"]}
    }
    assert "delete-record" not in json.dumps(extraction)
    assert has_waiting_note(model.chat.requests[-1], "delete-record", "get-weather")


# -- the per-request option ------------------------------------------------------------------------


async def test_a_request_can_turn_auto_resume_off(model, storage):
    weather = weather_tool()
    agent = auto_agent(storage, [weather])
    first = await ask_which_city(model, agent)

    model.chat.push(reply("Paris is a city."))
    output = await agent.generate("Paris", auto_resume_suspended_tools=False, **OPTS)

    assert output.run_id != first.run_id
    assert model.structured.requests == []
    assert await state_of(agent, first.run_id) == "suspended"
    assert has_waiting_note(model.chat.requests[-1], "get-weather", "Which city?")


async def test_a_request_can_turn_auto_resume_on(model, storage):
    weather = weather_tool()
    agent = memory_agent(storage, [weather])  # off by default
    first = await ask_which_city(model, agent)

    model.chat.push(reply("Noted."))
    plain = await agent.generate("Paris", **OPTS)
    assert plain.run_id != first.run_id and model.structured.requests == []

    model.structured.push(structured({"city": "Paris"}))
    model.chat.push(reply("Paris: sunny."))
    output = await agent.generate("Paris!", auto_resume_suspended_tools=True, **OPTS)
    assert output.run_id == first.run_id and output.text == "Paris: sunny."


async def test_without_memory_there_is_no_auto_resume(model, storage):
    weather = weather_tool()
    from tests.runtime.helpers import make_agent

    agent = make_agent([weather], storage=storage, default_options={"auto_resume_suspended_tools": True})
    first = await ask_which_city(model, agent)
    model.chat.push(reply("Paris?"))
    output = await agent.generate("Paris", **OPTS)
    assert output.run_id != first.run_id
    assert model.structured.requests == []
    assert await state_of(agent, first.run_id) == "suspended"


# -- what the extraction is told -------------------------------------------------------------------


async def test_the_extraction_prompt_holds_only_what_it_needs(model, storage):
    weather = weather_tool()
    agent = auto_agent(
        storage, [weather, record_tool("lookup", require_approval=False, result={"secret": "ZEBRA-RESULT"})]
    )
    # old history, from before the question
    model.chat.push(tool_calls(call("lookup", {"id": "ZEBRA-ARG"}, id="c_old")), reply("ZEBRA-REPLY-1"))
    await agent.generate("ZEBRA-QUESTION-1", **OPTS)
    model.chat.push(reply("ZEBRA-REPLY-2"))
    await agent.generate("ZEBRA-QUESTION-2", **OPTS)
    first = await ask_which_city(model, agent)
    # something said after the question
    model.structured.push(structured({"city": None}))
    model.chat.push(reply("Which city do you mean?"))
    await agent.generate("hmm, let me think", **OPTS)

    model.structured.push(structured({"city": "Paris"}))
    model.chat.push(reply("Paris: sunny."))
    assert (await agent.generate("Paris", **OPTS)).run_id == first.run_id

    body = model.structured.requests[-1]
    text = json.dumps(body)
    assert "ZEBRA" not in text, "history from before the question leaked into the extraction"
    assert "What's the weather tomorrow?" not in text
    assert "hmm, let me think" not in text and "Which city do you mean?" not in text
    assert "tools" not in body
    assert [m["role"] for m in body["messages"]] == ["system", "user"]
    assert extraction_prompt(body) == "Question: Which city?\nReply: Paris\n\nFields:\n- city"


async def test_the_same_question_and_reply_give_the_same_request_whatever_the_ids(model, storage):
    """A small model answers differently to different bytes: random tool-call ids in the request made
    a refusal read right once and wrong the next time."""
    bodies = []
    for call_id in ("call_8f3ae1", "call_Zq91x"):
        thread = {"thread_id": f"thread-{call_id}", "resource_id": USER}
        agent = auto_agent(storage, [weather_tool()])
        await ask_which_city(model, agent, call_id=call_id, **thread)
        model.structured.push(structured({"city": None}))
        model.chat.push(reply("Which city?"))
        await agent.generate("hello there", **thread)
        bodies.append(model.structured.requests[-1])
    assert json.dumps(bodies[0]) == json.dumps(bodies[1])


async def test_the_request_does_not_grow_with_what_was_said_since_the_question(model, storage):
    agent = auto_agent(storage, [weather_tool()])
    await ask_which_city(model, agent)
    sizes = []
    for turn in range(6):
        model.structured.push(structured({"city": None}))
        model.chat.push(reply(f"reply {turn}, " + "blah " * 50))
        await agent.generate(f"chat {turn}", **OPTS)
        sizes.append(len(json.dumps(model.structured.requests[-1])))
    assert len(set(sizes)) == 1, sizes
    assert sizes[0] < 2000


async def test_a_value_the_resume_schema_refuses_does_not_resume(model, storage):
    from tools import create_tool

    async def execute(input, ctx):
        if ctx.agent.resume_data is None:
            return await ctx.agent.suspend({"question": "How many days?"})
        return {"days": ctx.agent.resume_data["days"]}

    loose = create_tool(
        id="plan-trip",
        description="Plan a trip",
        input_schema={"type": "object"},
        resume_schema={
            "type": "object",
            "properties": {"days": {"type": "integer", "minimum": 1}, "note": {"type": "string"}},
            "required": ["days"],
        },
        execute=execute,
    )
    agent = auto_agent(storage, [loose])
    model.chat.push(tool_calls(call("plan-trip", {}, id="c_trip")))
    first = await agent.generate("Plan a trip", **OPTS)

    # a value the schema refuses (jsonschema validation, not only the shape) does not resume
    model.structured.push(structured({"days": 0, "note": None}))
    model.chat.push(reply("How many days?"))
    assert (await agent.generate("zero days", **OPTS)).run_id != first.run_id
    # the request asks for the fields, nullable, strictly; the schema's constraints are checked on the answer
    assert model.structured.requests[-1]["response_format"]["json_schema"]["strict"] is True

    model.structured.push(structured({"days": 3, "note": None}))
    model.chat.push(reply("Three days."))
    assert (await agent.generate("three days", **OPTS)).run_id == first.run_id


async def test_the_window_of_a_resumed_turn_is_well_formed_on_a_small_memory(model, storage):
    agent = auto_agent(storage, [weather_tool()], memory=Memory(storage, last_messages=4))
    first = await ask_which_city(model, agent)
    for turn in range(3):
        model.structured.push(structured({"city": None}))
        model.chat.push(reply(f"reply {turn}"))
        await agent.generate(f"chat {turn}", **OPTS)
    model.structured.push(structured({"city": "Paris"}))
    model.chat.push(reply("Paris: sunny."))
    output = await agent.generate("Paris", **OPTS)
    assert output.run_id == first.run_id and output.text == "Paris: sunny."
    for body in model.chat.requests:
        assert_every_tool_call_answered(body)


async def test_two_answers_at_once_resume_the_call_once(model, storage):
    weather = weather_tool()
    agent = auto_agent(storage, [weather])
    first = await ask_which_city(model, agent)

    model.structured.push(
        structured({"city": "Paris"}),
        structured({"city": "Paris"}),
    )
    model.chat.push(reply("one"), reply("two"))
    outputs = await asyncio.gather(agent.generate("Paris", **OPTS), agent.generate("Paris!", **OPTS))

    assert [o.run_id == first.run_id for o in outputs].count(True) == 1, [o.run_id for o in outputs]
    assert [c["resume_data"] for c in weather.calls.inputs] == [None, {"city": "Paris"}]
    assert await state_of(agent, first.run_id) == "done"
    assert all(o.finish_reason == "stop" for o in outputs)


# -- only what the message supports resumes --------------------------------------------------------


async def test_a_no_to_a_confirmation_resumes_with_exactly_no(model, storage):
    deploy = deploy_tool()
    agent = auto_agent(storage, [deploy])
    first = await ask_to_deploy(model, agent)

    model.structured.push(structured({"confirmed": "no"}))  # a yes/no field is asked as the reply's word
    model.chat.push(reply("OK, not deploying."))
    output = await agent.generate("no, not yet", **OPTS)

    assert output.run_id == first.run_id and output.text == "OK, not deploying."
    assert deploy.runs == [None, {"confirmed": False}]
    prompt = extraction_prompt(model.structured.requests[-1])
    assert prompt == (
        "Question: Deploy build 142 to production now?\nReply: no, not yet\n\nCopy the reply's answer word."
    )


@pytest.mark.parametrize(
    ("message", "read_as"),
    [
        ("let me check with the team first", {"confirmed": "yes"}),  # no yes given
        ("let me check with the team first", {"confirmed": "no"}),  # nor a no
        ("is it safe?", {"confirmed": "yes"}),  # a question back
        ("yes", {"confirmed": True}),  # not one of the words asked for
    ],
)
async def test_a_reading_the_message_does_not_support_does_not_resume(model, storage, message, read_as):
    deploy = deploy_tool()
    agent = auto_agent(storage, [deploy])
    first = await ask_to_deploy(model, agent)

    model.structured.push(structured(read_as))
    model.chat.push(reply("Should I deploy build 142 now? Please answer yes or no."))
    output = await agent.generate(message, **OPTS)

    assert output.run_id != first.run_id
    assert deploy.runs == [None]  # the tool did not run again
    assert await state_of(agent, first.run_id, "c_deploy") == "suspended"
    assert has_waiting_note(model.chat.requests[-1], "deploy", "Deploy build 142 to production now?")

    # a clear answer still resumes it
    model.structured.push(structured({"confirmed": "yes"}))
    model.chat.push(reply("Deployed."))
    done = await agent.generate("yes, go ahead", **OPTS)
    assert done.run_id == first.run_id and deploy.runs == [None, {"confirmed": True}]


async def test_a_value_the_message_does_not_state_does_not_resume_and_the_thread_is_told(model, storage):
    weather = weather_tool()
    agent = auto_agent(storage, [weather])
    first = await ask_which_city(model, agent)

    model.structured.push(structured({"city": "Paris"}))  # a small model's guess: not in the message
    model.chat.push(reply("Which city, then?"))
    output = await agent.generate("I'll tell you after lunch, I'm busy", **OPTS)

    assert output.run_id != first.run_id and len(weather.calls) == 1
    assert await state_of(agent, first.run_id) == "suspended"
    body = model.chat.requests[-1]
    assert has_waiting_note(body, "not taken as an answer", "get-weather", "still needs: city")


async def test_a_message_that_fits_two_waiting_calls_resumes_neither(model, storage):
    weather, other = weather_tool(), weather_tool(id="get-forecast")
    agent = auto_agent(storage, [weather, other])
    model.chat.push(tool_calls(call("get-weather", {}, id="c_city"), call("get-forecast", {}, id="c_city2")))
    first = await agent.generate("Weather and forecast", **OPTS)

    model.structured.push(structured({"get-weather": {"city": "Paris"}, "get-forecast": {"city": "Paris"}}))
    model.chat.push(reply("Which one is Paris for?"))
    output = await agent.generate("Paris", **OPTS)

    assert output.run_id != first.run_id
    assert len(weather.calls) == 1 and len(other.calls) == 1
    assert has_waiting_note(model.chat.requests[-1], "still needs", "get-weather", "get-forecast")


async def test_a_server_that_refuses_json_schema_gets_json_object_from_then_on(model, storage):
    weather = weather_tool()
    agent = auto_agent(storage, [weather])
    first = await ask_which_city(model, agent)

    model.structured.push(
        failure(400, message="response_format of type json_schema is not supported by this server"),
        structured({"city": None}),
        structured({"city": "Paris"}),
    )
    model.chat.push(reply("Which city?"), reply("Paris: sunny."))
    await agent.generate("hello", **OPTS)
    assert await state_of(agent, first.run_id) == "suspended"
    refused, retried = model.structured.requests
    assert refused["response_format"]["type"] == "json_schema"
    assert retried["response_format"] == {"type": "json_object"}
    assert '"city": {"type": ["string", "null"]}' in extraction_prompt(retried)  # the schema, in the prompt

    output = await agent.generate("Paris", **OPTS)  # remembered: one request, json_object at once
    assert output.run_id == first.run_id and output.text == "Paris: sunny."
    assert len(model.structured.requests) == 3
    assert model.structured.requests[-1]["response_format"] == {"type": "json_object"}
    assert model.unexpected == []
