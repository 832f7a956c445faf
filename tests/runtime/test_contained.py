"""Tool code run contained (`run_contained`, issue 38 part 4): nothing it raises leaves it, it is cut off at
its time bound, and a cancellation of the caller (a shutdown) still cancels the caller and the code. The
runtime's previews run that way: a shutdown mid-preview leaves the run to the recovery, which does not run
the preview again (on SQLite and PostgreSQL)."""

from __future__ import annotations

import asyncio
import time

import pytest

from bot.agent._contained import run_contained
from tests.runtime.helpers import collect, make_agent, of_type, run_status
from tests.support.scripted_model import call, reply, tool_calls
from tools import create_tool


def raising(exc: BaseException):
    async def code():
        await asyncio.sleep(0)
        raise exc

    return code


@pytest.mark.parametrize(
    "exc",
    [
        SystemExit(7),
        KeyboardInterrupt(),
        asyncio.CancelledError("预览自己取消了"),
        GeneratorExit(),
        BaseExceptionGroup("いくつか", [SystemExit(1), ValueError("값")]),
        RuntimeError("ordinary"),
    ],
    ids=lambda e: type(e).__name__,
)
async def test_nothing_the_code_raises_leaves_it(exc):
    outcome = await run_contained(raising(exc), timeout=5)
    assert outcome.error is exc and not outcome.ok and not outcome.timed_out
    assert asyncio.current_task().cancelling() == 0  # the caller was not cancelled by it
    await asyncio.sleep(0)  # and it goes on


async def test_code_that_raises_before_its_first_await_is_contained_too():
    def not_even_a_coroutine():
        raise SystemExit("同步")

    outcome = await run_contained(not_even_a_coroutine, timeout=5)
    assert isinstance(outcome.error, SystemExit)


async def test_code_that_cancels_its_own_task_is_contained_too():
    async def cancels_itself():
        asyncio.current_task().cancel()
        await asyncio.sleep(1)

    outcome = await run_contained(cancels_itself, timeout=5)
    assert isinstance(outcome.error, asyncio.CancelledError)
    assert asyncio.current_task().cancelling() == 0


async def test_what_the_code_returns_is_the_value():
    async def says():
        return {"将删除": 3}

    outcome = await run_contained(says, timeout=5)
    assert outcome.ok and outcome.value == {"将删除": 3}


async def test_code_that_hangs_is_cut_off_at_its_time_bound_even_if_it_ignores_the_cancellation():
    seen = []

    async def stubborn():
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            seen.append("cancelled")  # and carries on regardless, for a while
        await asyncio.sleep(1)
        seen.append("done")

    started = time.monotonic()
    outcome = await run_contained(stubborn, timeout=0.2)
    assert outcome.timed_out and not outcome.ok
    assert time.monotonic() - started < 2
    await asyncio.sleep(0.05)
    assert seen == ["cancelled"]  # it was told to stop; the caller did not wait for it to obey
    await asyncio.sleep(1.2)
    assert seen == ["cancelled", "done"]


async def test_a_cancellation_of_the_caller_cancels_the_caller_and_the_code():
    """A shutdown: the caller's task is cancelled while the code runs. Unlike the code's own
    CancelledError, this one goes on up, and the code is cancelled with it."""
    inside, seen = asyncio.Event(), []

    async def slow():
        inside.set()
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            seen.append("cancelled")
            raise

    caller = asyncio.get_running_loop().create_task(run_contained(slow, timeout=60))
    await inside.wait()
    caller.cancel()
    with pytest.raises(asyncio.CancelledError):
        await caller
    assert caller.cancelled()
    await asyncio.sleep(0.05)
    assert seen == ["cancelled"]


RECORD = {"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]}


def previewed_tool(previews: list, inside: asyncio.Event | None = None):
    async def preview(input, ctx):
        previews.append(input["id"])
        if inside is not None:
            inside.set()
        await asyncio.sleep(60)
        return "never"

    async def execute(input, ctx):
        return {"deleted": input["id"]}

    return create_tool(
        id="delete-record",
        description="Delete a record",
        input_schema=RECORD,
        require_approval=True,
        execute=execute,
        preview=preview,
        preview_timeout=120,
    )


async def test_a_shutdown_mid_preview_leaves_the_run_to_the_recovery_which_does_not_run_it_again(model, storage):
    for _ in range(2):  # the second: the recovery asks the model again
        model.chat.push(tool_calls(call("delete-record", {"id": "東京-7"}, id="call_del")))
    model.chat.push(reply("Deleted."))
    previews, inside = [], asyncio.Event()
    agent = make_agent([previewed_tool(previews, inside)], storage=storage)
    stream = await agent.stream("delete 東京-7")
    await asyncio.wait_for(inside.wait(), 30)
    # what a shutdown does to what is still running: the run's task is cancelled
    [run_task] = [t for t in asyncio.all_tasks() if t.get_name() == f"run {stream.run_id}"]
    run_task.cancel()
    await asyncio.wait({run_task}, timeout=10)
    assert run_task.cancelled()  # the cancellation went through the preview, not into it
    assert await run_status(storage, stream.run_id) == "running"  # not failed: left to the recovery

    fresh = make_agent([previewed_tool(previews)], storage=storage)  # a new process's agent
    streams = []
    fresh.hooks["on_background_stream"] = streams.append
    assert await fresh.recover_stale_runs(stale_after=0) == [stream.run_id]
    [approval] = of_type(await collect(streams[0]), "tool-call-approval")
    assert approval.payload["preview"]["ok"] is False
    assert "not run again" in approval.payload["preview"]["error"]
    assert previews == ["東京-7"]  # once, by the first process


def tool_raising(exc: BaseException, ran: list):
    async def execute(input, ctx):
        ran.append(input["id"])
        await asyncio.sleep(0)
        raise exc

    return create_tool(id="purge-rows", description="Delete rows", input_schema=RECORD, execute=execute)


@pytest.mark.parametrize(
    "exc",
    [
        SystemExit(7),
        KeyboardInterrupt(),
        asyncio.CancelledError("工具自己取消了"),
        GeneratorExit(),
        BaseExceptionGroup("いくつか", [SystemExit(1), ValueError("값")]),
    ],
    ids=lambda e: type(e).__name__,
)
async def test_nothing_a_tools_execute_raises_stops_the_run_or_the_process(storage, model, exc):
    """A tool is tool code too: what its `execute` raises is a failed call the model reads, and the run
    goes on to its answer, whatever it raised (a SystemExit let out of the run's task would stop the
    process, a CancelledError of its own would leave the run unfinished)."""
    ran: list = []
    model.chat.push(tool_calls(call("purge-rows", {"id": "表-7"}, id="call_p")), reply("清除失败了。"))
    agent = make_agent([tool_raising(exc, ran)], storage=storage)

    chunks = await collect(await agent.stream("清空表 7", thread_id="t-exec", resource_id="U1"))

    assert ran == ["表-7"]
    results = of_type(chunks, "tool-result")
    assert len(results) == 1 and results[0].payload["is_error"] is True
    assert of_type(chunks, "finish")[0].payload["finish_reason"] == "stop"
    assert "清除失败了。" in "".join(c.payload["text"] for c in of_type(chunks, "text-delta"))
    run_id = chunks[0].run_id
    assert await run_status(storage, run_id) == "completed"
