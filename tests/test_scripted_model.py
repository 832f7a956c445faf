"""The scripted model server, driven through the real openai client over loopback HTTP."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import openai
import pytest

from tests.support.scripted_model import ScriptedModel, call, failure, reply, structured, tool_calls


@pytest.fixture
def server():
    with ScriptedModel() as model:
        yield model


def client(model: ScriptedModel, **kwargs) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=model.base_url, api_key="test", **kwargs)


MESSAGES = [{"role": "user", "content": "hi"}]


async def test_base_url_and_models(server):
    assert server.base_url.startswith("http://127.0.0.1:")
    assert server.base_url.endswith("/v1")
    async with client(server) as c:
        models = await c.models.list()
    assert [m.id for m in models.data] == ["test-model"]


async def test_non_stream_reply(server):
    server.chat.push(reply("Hello there"))
    async with client(server) as c:
        completion = await c.chat.completions.create(model="test-model", messages=MESSAGES)
    choice = completion.choices[0]
    assert choice.message.content == "Hello there"
    assert choice.message.role == "assistant"
    assert choice.finish_reason == "stop"
    assert completion.usage.total_tokens == completion.usage.prompt_tokens + completion.usage.completion_tokens
    assert server.chat.requests == [{"model": "test-model", "messages": MESSAGES}]
    assert server.requests == server.chat.requests
    assert server.unexpected == []


async def test_push_several_served_in_order(server):
    server.chat.push(reply("one"), reply("two"))
    async with client(server) as c:
        texts = [
            (await c.chat.completions.create(model="m", messages=MESSAGES)).choices[0].message.content for _ in range(2)
        ]
    assert texts == ["one", "two"]
    assert server.chat.remaining == 0


async def test_non_stream_tool_calls_with_given_and_automatic_ids(server):
    server.chat.push(tool_calls(call("delete-record", {"id": "42"}, id="call_given"), call("lookup", {"q": "x"})))
    async with client(server) as c:
        completion = await c.chat.completions.create(model="m", messages=MESSAGES)
    choice = completion.choices[0]
    assert choice.finish_reason == "tool_calls"
    assert choice.message.content is None
    calls = choice.message.tool_calls
    assert [(tc.id, tc.function.name, json.loads(tc.function.arguments)) for tc in calls] == [
        ("call_given", "delete-record", {"id": "42"}),
        ("call_1", "lookup", {"q": "x"}),
    ]


async def test_stream_text_is_split_and_usage_chunk(server):
    server.chat.push(reply("Hello streaming world"))
    async with client(server) as c:
        stream = await c.chat.completions.create(
            model="m", messages=MESSAGES, stream=True, stream_options={"include_usage": True}
        )
        chunks = [chunk async for chunk in stream]
    assert chunks[0].choices[0].delta.role == "assistant"
    pieces = [ch.choices[0].delta.content for ch in chunks if ch.choices and ch.choices[0].delta.content]
    assert len(pieces) > 1
    assert "".join(pieces) == "Hello streaming world"
    finishes = [ch.choices[0].finish_reason for ch in chunks if ch.choices and ch.choices[0].finish_reason]
    assert finishes == ["stop"]
    assert chunks[-1].choices == []
    assert chunks[-1].usage.total_tokens > 0


async def test_stream_without_include_usage_has_no_usage_chunk(server):
    server.chat.push(reply("hi"))
    async with client(server) as c:
        stream = await c.chat.completions.create(model="m", messages=MESSAGES, stream=True)
        chunks = [chunk async for chunk in stream]
    assert all(ch.choices for ch in chunks)
    assert all(ch.usage is None for ch in chunks)


async def test_streamed_tool_call_deltas_reassemble(server):
    args_a = {"id": "42", "reason": "cleanup of an old record"}
    args_b = {"city": "Paris", "units": "metric"}
    server.chat.push(tool_calls(call("delete-record", args_a, id="call_a"), call("weather", args_b), text="Sure."))
    async with client(server) as c:
        stream = await c.chat.completions.create(model="m", messages=MESSAGES, stream=True)
        calls: dict[int, dict] = {}
        text = ""
        finish = None
        argument_deltas = 0
        async for chunk in stream:
            choice = chunk.choices[0]
            text += choice.delta.content or ""
            finish = choice.finish_reason or finish
            for delta in choice.delta.tool_calls or []:
                entry = calls.setdefault(delta.index, {"id": None, "name": None, "arguments": ""})
                if delta.id:
                    assert entry["id"] is None, "id is sent once, in the first delta of a call"
                    entry["id"] = delta.id
                if delta.function and delta.function.name:
                    entry["name"] = delta.function.name
                if delta.function and delta.function.arguments:
                    argument_deltas += 1
                    entry["arguments"] += delta.function.arguments
    assert text == "Sure."
    assert finish == "tool_calls"
    assert argument_deltas > 2, "arguments arrive split across several chunks"
    assert calls[0] == {"id": "call_a", "name": "delete-record", "arguments": json.dumps(args_a)}
    assert calls[1]["id"] == "call_1"
    assert calls[1]["name"] == "weather"
    assert json.loads(calls[1]["arguments"]) == args_b


async def test_stream_helper_accumulates_tool_calls(server):
    """The client's own stream helper (which validates chunk shapes) reassembles the message."""
    server.chat.push(tool_calls(call("delete-record", {"id": "7"}, id="call_x")))
    async with client(server) as c, c.chat.completions.stream(model="m", messages=MESSAGES) as stream:
        async for _ in stream:
            pass
        final = await stream.get_final_completion()
    message = final.choices[0].message
    assert final.choices[0].finish_reason == "tool_calls"
    assert message.tool_calls[0].id == "call_x"
    assert message.tool_calls[0].function.name == "delete-record"
    assert json.loads(message.tool_calls[0].function.arguments) == {"id": "7"}


async def test_callable_responder_sees_request_body(server):
    server.chat.push(lambda body: reply(f"you said {body['messages'][-1]['content']}"))
    server.chat.push(lambda body: "plain string means reply")
    async with client(server) as c:
        first = await c.chat.completions.create(model="m", messages=MESSAGES)
        second = await c.chat.completions.create(model="m", messages=MESSAGES)
    assert first.choices[0].message.content == "you said hi"
    assert second.choices[0].message.content == "plain string means reply"


async def test_structured_requests_are_routed_to_structured_queue(server):
    server.chat.push(reply("chat answer"))
    server.structured.push(structured({"city": "Paris"}))
    schema = {
        "type": "json_schema",
        "json_schema": {
            "name": "answer",
            "strict": True,
            "schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
        },
    }
    async with client(server) as c:
        structured_answer = await c.chat.completions.create(
            model="m", messages=MESSAGES, response_format=schema, temperature=0
        )
        chat_answer = await c.chat.completions.create(model="m", messages=MESSAGES)
    assert json.loads(structured_answer.choices[0].message.content) == {"city": "Paris"}
    assert chat_answer.choices[0].message.content == "chat answer"
    assert len(server.structured.requests) == 1
    assert server.structured.requests[0]["response_format"] == schema
    assert server.structured.requests[0]["temperature"] == 0
    assert len(server.chat.requests) == 1
    assert len(server.requests) == 2


async def test_structured_answer_streamed(server):
    server.structured.push(structured({"answer": "yes"}))
    async with client(server) as c:
        stream = await c.chat.completions.create(
            model="m", messages=MESSAGES, stream=True, response_format={"type": "json_object"}
        )
        text = "".join([ch.choices[0].delta.content or "" async for ch in stream if ch.choices])
    assert json.loads(text) == {"answer": "yes"}


async def test_exhausted_script_answers_500_and_records_unexpected(server):
    async with client(server) as c:
        with pytest.raises(openai.InternalServerError, match="script exhausted"):
            await c.chat.completions.create(model="m", messages=MESSAGES)
    assert server.unexpected == [{"model": "m", "messages": MESSAGES}]
    assert len(server.requests) == 1, "not retried by the client"


async def test_failure_500_raises_openai_error_without_retry(server):
    server.chat.push(failure(500), reply("never reached"))
    async with client(server) as c:
        with pytest.raises(openai.InternalServerError) as info:
            await c.chat.completions.create(model="m", messages=MESSAGES)
    assert info.value.status_code == 500
    assert info.value.body["type"] == "server_error"
    assert server.chat.remaining == 1


async def test_failure_with_retry_lets_client_retry(server):
    server.chat.push(failure(503, retry=True), reply("second time lucky"))
    async with client(server, max_retries=1) as c:
        completion = await c.chat.completions.create(model="m", messages=MESSAGES)
    assert completion.choices[0].message.content == "second time lucky"
    assert len(server.chat.requests) == 2


async def test_failure_statuses_map_to_openai_errors(server):
    server.chat.push(failure(429, message="slow down"), failure(400), failure(401))
    async with client(server) as c:
        with pytest.raises(openai.RateLimitError, match="slow down"):
            await c.chat.completions.create(model="m", messages=MESSAGES)
        with pytest.raises(openai.BadRequestError):
            await c.chat.completions.create(model="m", messages=MESSAGES)
        with pytest.raises(openai.AuthenticationError):
            await c.chat.completions.create(model="m", messages=MESSAGES)


async def test_failure_garbage_non_stream(server):
    server.chat.push(failure("garbage"))
    async with client(server) as c:
        with pytest.raises((openai.APIError, ValueError)):  # the client fails to decode the body
            await c.chat.completions.create(model="m", messages=MESSAGES)


async def test_failure_garbage_stream(server):
    server.chat.push(failure("garbage"))
    async with client(server) as c:
        with pytest.raises((openai.APIError, ValueError)):
            stream = await c.chat.completions.create(model="m", messages=MESSAGES, stream=True)
            async for _ in stream:
                pass


async def test_failure_timeout_trips_client_timeout(server):
    server.chat.push(failure("timeout", seconds=3))
    async with client(server, timeout=0.5, max_retries=0) as c:
        with pytest.raises(openai.APITimeoutError):
            await c.chat.completions.create(model="m", messages=MESSAGES)


async def test_failure_timeout_then_serves_follow_up(server):
    server.chat.push(failure("timeout", seconds=0.2, then=reply("slow but fine")))
    async with client(server, timeout=5, max_retries=0) as c:
        completion = await c.chat.completions.create(model="m", messages=MESSAGES)
    assert completion.choices[0].message.content == "slow but fine"


async def test_failure_disconnect_raises_connection_error(server):
    server.chat.push(failure("disconnect"))
    async with client(server, max_retries=0) as c:
        with pytest.raises(openai.APIConnectionError):
            await c.chat.completions.create(model="m", messages=MESSAGES)


async def test_raising_responder_is_reported(server):
    server.chat.push(lambda body: 1 / 0)
    async with client(server) as c:
        with pytest.raises(openai.InternalServerError, match="responder raised"):
            await c.chat.completions.create(model="m", messages=MESSAGES)
    assert server.errors and "ZeroDivisionError" in server.errors[0]


def test_serves_subprocesses_through_environment(server):
    server.chat.push(reply("from the parent's script"))
    script = textwrap.dedent(
        """
        import openai
        c = openai.OpenAI()
        print(c.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}]).choices[0].message.content)
        """
    )
    env = {"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "test", "PATH": "/usr/bin:/bin"}
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "from the parent's script"
    assert server.chat.wait_for_requests(1, timeout=1)


def test_stop_is_idempotent_and_start_stop_api():
    model = ScriptedModel().start()
    url = model.base_url
    model.stop()
    model.stop()
    assert url.startswith("http://127.0.0.1:")
    with pytest.raises(RuntimeError):
        _ = model.base_url


async def test_concurrent_requests_each_get_one_answer(server):
    import asyncio

    server.chat.push(*[reply(f"answer {n}") for n in range(20)])
    async with client(server) as c:

        async def ask(stream: bool) -> str:
            if stream:
                chunks = await c.chat.completions.create(model="m", messages=MESSAGES, stream=True)
                return "".join([ch.choices[0].delta.content or "" async for ch in chunks if ch.choices])
            return (await c.chat.completions.create(model="m", messages=MESSAGES)).choices[0].message.content

        answers = await asyncio.gather(*[ask(n % 2 == 0) for n in range(20)])
    assert sorted(answers) == sorted(f"answer {n}" for n in range(20))
    assert server.unexpected == [] and len(server.requests) == 20
