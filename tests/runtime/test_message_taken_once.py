"""A thread message is taken once: by one run, or by the one waiting call it answers (issue 41's stall window).

Two replicas (two agents, each its own owner, on one database) get the same message of a thread: a replica
that stalled past its lease while it read the message (here: its model's reading of the reply against a
waiting question is held) and the replica that took the thread over and answered the message meanwhile.
The woken replica's reading no longer settles anything, and it must not then answer the message again as a
turn of its own: the message is recorded as taken (`messages.source_id`, unique per thread), so its try
stores nothing and raises `MessageTakenError`; its caller says nothing.
"""

from __future__ import annotations

import asyncio
import threading

import pytest
import sqlalchemy as sa

from bot.agent import MessageTakenError
from memory import Memory
from tests.runtime.helpers import collect, make_agent, weather_tool
from tests.support.scripted_model import call, reply, structured, tool_calls

OPTIONS = {"auto_resume_suspended_tools": True}


def replica(storage, executions):
    return make_agent([weather_tool(executions)], storage=storage, memory=Memory(storage), default_options=OPTIONS)


async def answers_in(storage, thread_id: str) -> list[str]:
    async with storage.engine.connect() as connection:
        rows = await connection.execute(
            sa.text("SELECT content FROM messages WHERE thread_id = :t AND role = 'assistant' AND content IS NOT NULL"),
            {"t": thread_id},
        )
        return [row.content for row in rows]


async def test_a_reply_read_by_a_stalled_replica_after_another_answered_it_is_not_answered_twice(model, storage):
    executions: list = []
    stalled, other = replica(storage, executions), replica(storage, executions)
    model.chat.push(tool_calls(call("get-weather", {}, id="c1")))
    await collect(await other.stream("天気は?", thread_id="t1", resource_id="U1", message_id="1.1"))
    held = threading.Event()

    def slow_reading(body):  # the stalled replica's reading, answered while it cannot use it
        held.wait(30)
        return structured({"city": "巴黎"})

    model.structured.push(slow_reading, structured({"city": "巴黎"}))
    model.chat.push(reply("巴黎は晴れ。"))
    woken = asyncio.ensure_future(stalled.stream("我在巴黎", thread_id="t1", resource_id="U1", message_id="1.2"))
    await asyncio.to_thread(model.structured.wait_for_requests, 1, 30)
    # the other replica took the thread over and answers the same message: the question resumes, the run answers
    await collect(await other.stream("我在巴黎", thread_id="t1", resource_id="U1", message_id="1.2"))
    held.set()

    with pytest.raises(MessageTakenError):
        await asyncio.wait_for(woken, 30)
    assert await answers_in(storage, "t1") == ["巴黎は晴れ。"]
    assert [e["resume_data"] for e in executions] == [None, {"city": "巴黎"}]
    assert len(model.chat.requests) == 2 and not model.unexpected  # the woken replica asked the model nothing more


async def test_a_message_started_on_twice_starts_one_run(model, storage):
    executions: list = []
    first, second = replica(storage, executions), replica(storage, executions)
    model.chat.push(reply("Hallo, 你好。"))
    await collect(await first.stream("Hallo", thread_id="t2", resource_id="U1", message_id="2.1"))
    with pytest.raises(MessageTakenError):
        await second.stream("Hallo", thread_id="t2", resource_id="U1", message_id="2.1")
    model.chat.push(reply("Tschüss."))
    await collect(await second.stream("Tschüss", thread_id="t2", resource_id="U1", message_id="2.2"))
    assert await answers_in(storage, "t2") == ["Hallo, 你好。", "Tschüss."]
