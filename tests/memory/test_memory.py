"""Thread memory: history replayed across turns, the bounded window, results stored late, and the
thread's owner. On SQLite and PostgreSQL."""

from __future__ import annotations

import json

import pytest

from bot.agent import AgentError, ThreadOwnerError
from memory import Memory
from memory._memory import estimate_tokens
from tests.memory.helpers import has_waiting_note, memory_agent, weather_tool
from tests.runtime.helpers import (
    assert_every_tool_call_answered,
    content_text,
    record_tool,
    says_not_approved,
    tool_messages,
    user_texts,
)
from tests.support.scripted_model import call, reply, tool_calls
from tools import create_tool

THREAD, USER = "thread-1", "user-1"


def history(body: dict) -> list[dict]:
    """The request's messages without the agent's instructions (the first system message)."""
    messages = body["messages"]
    return messages[1:] if messages and messages[0]["role"] == "system" else list(messages)


def assert_results_follow_calls(messages: list[dict]) -> None:
    """Every tool message comes right after the assistant message that made its call (or after a
    sibling result of that message), and every call is answered."""
    assert_every_tool_call_answered({"messages": messages})
    owner: set[str] = set()
    for message in messages:
        if message["role"] == "assistant":
            owner = {tc["id"] for tc in message.get("tool_calls") or []}
        elif message["role"] == "tool":
            assert message["tool_call_id"] in owner, f"orphan tool result {message} in {json.dumps(messages)[:1500]}"
        else:
            owner = set()


def opens_with_user(window: list[dict]) -> bool:
    """A window opens with the user's words, unless it is only the tail of one exchange (a bound
    smaller than the newest exchange)."""
    return window[0]["role"] == "user" or not any(m["role"] == "user" for m in window)


def failing_tool():
    async def execute(input, ctx):
        raise RuntimeError("disk on fire")

    return create_tool(id="fragile", description="Always fails", input_schema={"type": "object"}, execute=execute)


# -- replay across turns ---------------------------------------------------------------------------


async def test_history_is_replayed_across_turns_with_every_call_followed_by_its_result(model, storage):
    lookup = record_tool("lookup", require_approval=False, result={"name": "Ada"})
    delete = record_tool("delete-record")
    agent = memory_agent(storage, [lookup, delete, failing_tool()])
    opts = {"thread_id": THREAD, "resource_id": USER}

    # turn 1: a plain tool call
    model.chat.push(tool_calls(call("lookup", {"id": "1"}, id="c_lookup")), reply("Record 1 is Ada."))
    assert (await agent.generate("Who is record 1?", **opts)).text == "Record 1 is Ada."
    # turn 2: a call that is declined
    model.chat.push(tool_calls(call("delete-record", {"id": "2"}, id="c_delete")))
    waiting = await agent.generate("Delete record 2", **opts)
    assert waiting.finish_reason == "suspended"
    model.chat.push(reply("I kept record 2."))
    await agent.decline_tool_call_generate(run_id=waiting.run_id, reason="it is still needed")
    # turn 3: a tool that fails, and a call with arguments that do not fit the schema
    model.chat.push(
        tool_calls(call("fragile", {}, id="c_fail"), call("lookup", {"id": 7}, id="c_bad")),
        reply("Something broke."),
    )
    await agent.generate("Try the fragile thing", **opts)
    # turn 4: nothing but words
    model.chat.push(reply("You're welcome."))
    await agent.generate("Thanks", **opts)

    last = model.chat.requests[-1]
    assert user_texts(last) == ["Who is record 1?", "Delete record 2", "Try the fragile thing", "Thanks"]
    assert_results_follow_calls(history(last))
    results = tool_messages(last)
    assert set(results) == {"c_lookup", "c_delete", "c_fail", "c_bad"}
    assert "Ada" in results["c_lookup"]
    assert says_not_approved(results["c_delete"]) and "it is still needed" in results["c_delete"]
    assert "disk on fire" in results["c_fail"]
    assert "lookup" in results["c_bad"] and results["c_bad"] != ""
    assistant_texts = [content_text(m.get("content")) for m in history(last) if m["role"] == "assistant"]
    assert [t for t in assistant_texts if t] == ["Record 1 is Ada.", "I kept record 2.", "Something broke."]
    assert history(last)[-1] == {"role": "user", "content": "Thanks"}
    assert len(delete.calls) == 0 and len(lookup.calls) == 1

    # every request of every turn replays a well-formed history
    for body in model.chat.requests:
        assert_results_follow_calls(history(body))

    stored = await agent.memory.messages(THREAD)
    assert [m["role"] for m in stored] == [
        "user",
        "assistant",
        "tool",
        "assistant",
        "user",
        "assistant",
        "tool",
        "assistant",
        "user",
        "assistant",
        "tool",
        "tool",
        "assistant",
        "user",
        "assistant",
    ]
    assert await agent.memory.window(THREAD) == paired(stored)


async def test_stored_messages_and_window_agree_for_a_short_thread(model, storage):
    agent = memory_agent(storage, [record_tool("lookup", require_approval=False)])
    model.chat.push(tool_calls(call("lookup", {"id": "1"}, id="c1")), reply("Done."), reply("Hi again."))
    await agent.generate("look up 1", thread_id=THREAD, resource_id=USER)
    await agent.generate("hello", thread_id=THREAD, resource_id=USER)

    stored = await agent.memory.messages(THREAD)
    window = await agent.memory.window(THREAD)
    assert window == stored
    assert [m["role"] for m in stored] == ["user", "assistant", "tool", "assistant", "user", "assistant"]


async def test_threads_do_not_share_history(model, storage):
    agent = memory_agent(storage, [])
    model.chat.push(reply("one"), reply("two"), reply("three"))
    await agent.generate("secret of thread A", thread_id="A", resource_id=USER)
    await agent.generate("hello from B", thread_id="B", resource_id=USER)
    await agent.generate("again A", thread_id="A", resource_id=USER)

    assert user_texts(model.chat.requests[1]) == ["hello from B"]
    assert user_texts(model.chat.requests[2]) == ["secret of thread A", "again A"]


async def test_a_run_without_thread_keeps_no_history(model, storage):
    agent = memory_agent(storage, [])
    model.chat.push(reply("one"), reply("two"))
    await agent.generate("first", resource_id=USER)
    await agent.generate("second", resource_id=USER)
    assert user_texts(model.chat.requests[-1]) == ["second"]


# -- the window ------------------------------------------------------------------------------------


async def build_thread_with_tools(model, agent, turns: int, *, big: bool = False) -> None:
    """`turns` turns; every odd turn makes two tool calls (with large results when `big`)."""
    for turn in range(turns):
        if turn % 2:
            model.chat.push(
                tool_calls(
                    call("lookup", {"id": f"{turn}a"}, id=f"c{turn}a"),
                    call("lookup", {"id": f"{turn}b"}, id=f"c{turn}b"),
                ),
                reply(f"answer {turn} " + ("x" * 300 if big else "")),
            )
        else:
            model.chat.push(reply(f"answer {turn} " + ("y" * 300 if big else "")))
        await agent.generate(f"question {turn} " + ("z" * 300 if big else ""), thread_id=THREAD, resource_id=USER)


def paired(stored: list[dict]) -> list[dict]:
    """The stored messages with each result right after its call (what a window is a suffix of)."""
    results = {m["tool_call_id"]: m for m in stored if m["role"] == "tool"}
    out = []
    for m in stored:
        if m["role"] == "tool":
            continue
        out.append(m)
        out += [results[tc["id"]] for tc in m.get("tool_calls") or []]
    return out


async def test_window_is_bounded_by_message_count(model, storage):
    agent = memory_agent(storage, [record_tool("lookup", require_approval=False)])
    await build_thread_with_tools(model, agent, 6)
    stored = await agent.memory.messages(THREAD)
    assert len(stored) == 6 * 2 + 3 * 3  # user + reply per turn; call + two results on odd turns

    full = paired(stored)
    for limit in range(2, len(stored) + 3):
        window = await Memory(storage, last_messages=limit, max_tokens=10**6).window(THREAD)
        assert 0 < len(window) <= limit, (limit, window)
        assert window == full[len(full) - len(window) :], f"limit {limit}: not the newest messages"
        assert_results_follow_calls(window)
        assert opens_with_user(window), f"limit {limit}: the window opens with {window[0]}"
    # the window the model got used the default bound, which holds this whole thread
    assert history(model.chat.requests[-1]) == full[:-1]  # all but the reply it produced


async def test_window_is_bounded_by_token_budget_without_splitting_a_call_from_its_results(model, storage):
    agent = memory_agent(storage, [record_tool("lookup", require_approval=False, result={"blob": "r" * 1500})])
    await build_thread_with_tools(model, agent, 8, big=True)
    full = paired(await agent.memory.messages(THREAD))
    total = estimate_tokens(full)

    sizes = set()
    for budget in range(100, total + 400, 97):
        window = await Memory(storage, last_messages=1000, max_tokens=budget).window(THREAD)
        sizes.add(len(window))
        assert window == full[len(full) - len(window) :], f"budget {budget}: not the newest messages"
        assert_results_follow_calls(window)
        assert opens_with_user(window), f"budget {budget}: the window opens with {window[0]}"
        if len(window) > 2:  # the newest exchange is always kept, even when alone it is over budget
            assert estimate_tokens(window) <= budget + len(window), f"budget {budget}: {estimate_tokens(window)} tokens"
    assert len(sizes) > 4, "the budget never changed the window"
    assert max(sizes) == len(full)

    # a budget that cuts through the big tool results keeps the call with them, or neither
    tight = Memory(storage, last_messages=1000, max_tokens=900)
    window = await tight.window(THREAD)
    assert_results_follow_calls(window)
    assert len(window) < len(full)


async def test_the_model_gets_the_bounded_window(model, storage):
    memory = Memory(storage, last_messages=5, max_tokens=10**6)
    agent = memory_agent(storage, [], memory=memory)
    for turn in range(5):
        model.chat.push(reply(f"answer {turn}"))
        await agent.generate(f"question {turn}", thread_id=THREAD, resource_id=USER)
    # stored before the last request: q0 a0 ... a3 q4 -> the newest five, opening with a user message
    assert history(model.chat.requests[-1]) == [
        {"role": "user", "content": "question 2"},
        {"role": "assistant", "content": "answer 2"},
        {"role": "user", "content": "question 3"},
        {"role": "assistant", "content": "answer 3"},
        {"role": "user", "content": "question 4"},
    ]


async def test_the_first_run_of_a_new_thread_sends_the_bounded_window_of_what_it_was_given(model, storage):
    """The first step of a new thread sends the messages it was started with (no read of the thread),
    bounded as any window; the next turn reads the thread as stored."""
    agent = memory_agent(storage, [], memory=Memory(storage, last_messages=3, max_tokens=10**6))
    model.chat.push(reply("Les trois derniers, 最後の三つ."))
    words = ["一", "둘", "trois", "vier", "חמש"]
    await agent.generate([{"role": "user", "content": w} for w in words], thread_id=THREAD, resource_id=USER)
    assert history(model.chat.requests[0]) == [{"role": "user", "content": w} for w in words[-3:]]
    model.chat.push(reply("Encore."))
    await agent.generate("et après ?", thread_id=THREAD, resource_id=USER)
    assert history(model.chat.requests[1]) == [
        {"role": "user", "content": "חמש"},
        {"role": "assistant", "content": "Les trois derniers, 最後の三つ."},
        {"role": "user", "content": "et après ?"},
    ]


# -- results stored late, and calls still waiting --------------------------------------------------


async def test_a_result_stored_later_is_replayed_right_after_its_call(model, storage):
    delete = record_tool("delete-record")
    agent = memory_agent(storage, [delete])
    opts = {"thread_id": THREAD, "resource_id": USER}

    model.chat.push(tool_calls(call("delete-record", {"id": "9"}, id="c_late")))
    waiting = await agent.generate("Delete record 9", **opts)
    assert waiting.finish_reason == "suspended"

    # the thread goes on while the call waits: the model sees a placeholder answering the call
    model.chat.push(reply("Sure, the weather is fine."))
    await agent.generate("How is the weather?", **opts)
    during = history(model.chat.requests[-1])
    assert_results_follow_calls(during)
    placeholder = tool_messages(model.chat.requests[-1])["c_late"]
    assert "waiting" in placeholder.lower()
    assert has_waiting_note(model.chat.requests[-1], "delete-record")
    assert during[-1] == {"role": "user", "content": "How is the weather?"}

    # the call is approved now; its result is stored after the later turn but replayed after its call
    model.chat.push(reply("Record 9 is deleted."))
    done = await agent.approve_tool_call_generate(run_id=waiting.run_id, tool_call_id="c_late")
    assert done.text == "Record 9 is deleted." and len(delete.calls) == 1

    stored = await agent.memory.messages(THREAD)
    result_index = next(i for i, m in enumerate(stored) if m.get("tool_call_id") == "c_late")
    weather_index = next(i for i, m in enumerate(stored) if m.get("content") == "How is the weather?")
    assert result_index > weather_index, "the result was expected to be stored after the later turn"

    after = history(model.chat.requests[-1])
    assert_results_follow_calls(after)
    call_index = next(i for i, m in enumerate(after) if any(tc["id"] == "c_late" for tc in m.get("tool_calls") or []))
    assert after[call_index + 1]["role"] == "tool" and after[call_index + 1]["tool_call_id"] == "c_late"
    assert "deleted" in after[call_index + 1]["content"]
    assert "waiting" not in after[call_index + 1]["content"]
    assert [m["content"] for m in after if m["role"] == "user"] == ["Delete record 9", "How is the weather?"]
    assert sum(1 for m in after if m.get("tool_call_id") == "c_late") == 1

    model.chat.push(reply("Anything else?"))
    await agent.generate("ok", **opts)
    assert_results_follow_calls(history(model.chat.requests[-1]))
    assert not any(
        "Still waiting" in text
        for text in (
            content_text(m.get("content")) for m in model.chat.requests[-1]["messages"] if m["role"] == "system"
        )
    )


async def test_a_suspended_call_gets_a_placeholder_in_other_turns(model, storage):
    agent = memory_agent(storage, [weather_tool()])
    opts = {"thread_id": THREAD, "resource_id": USER}
    model.chat.push(tool_calls(call("get-weather", {"when": "today"}, id="c_city")))
    await agent.generate("Weather today?", **opts)

    model.chat.push(reply("Hi!"), reply("Hi again!"))
    await agent.generate("hello", **opts)
    await agent.generate("hello again", **opts)
    for body in model.chat.requests[1:]:
        assert_results_follow_calls(history(body))
        assert "waiting" in tool_messages(body)["c_city"].lower()
        assert has_waiting_note(body, "get-weather", "Which city?")
    # nothing was stored for the placeholder: it exists only in what is sent
    assert not any(m.get("tool_call_id") == "c_city" for m in await agent.memory.messages(THREAD))


# -- the thread's owner ----------------------------------------------------------------------------


async def test_a_thread_used_with_another_resource_raises_and_changes_nothing(model, storage):
    agent = memory_agent(storage, [weather_tool()], default_options={"auto_resume_suspended_tools": True})
    model.chat.push(tool_calls(call("get-weather", {}, id="c_city")))
    first = await agent.generate("Weather?", thread_id=THREAD, resource_id="owner")
    before = await agent.memory.messages(THREAD)
    requests_before = len(model.requests)

    with pytest.raises(ThreadOwnerError) as raised:
        await agent.generate("Paris", thread_id=THREAD, resource_id="intruder")
    with pytest.raises(ThreadOwnerError):
        await agent.stream("Paris", thread_id=THREAD, resource_id="intruder")
    assert THREAD in str(raised.value) and "owner" in str(raised.value)
    assert isinstance(raised.value, AgentError)

    assert await agent.memory.messages(THREAD) == before
    assert len(model.requests) == requests_before  # no extraction, no chat request
    assert (await agent.get_tool_call(first.run_id, "c_city")).state == "suspended"
    page = await agent.list_suspended_runs()
    assert [r.run_id for r in page.runs] == [first.run_id]
    assert (await agent.list_suspended_runs(resource_id="intruder")).total == 0

    # the owner goes on as before
    model.chat.push(reply("Hello owner."))
    output = await agent.generate("hello", thread_id=THREAD, resource_id="owner", auto_resume_suspended_tools=False)
    assert output.text == "Hello owner."
    assert model.unexpected == []
