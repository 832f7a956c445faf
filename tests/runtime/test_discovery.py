"""Finding waiting runs: `list_suspended_runs` and `send_tool_approval`."""

from __future__ import annotations

from datetime import datetime

import pytest

from bot.agent import AmbiguousSuspendedRunsError, NoSuspendedRunError, ToolCallNotSuspendedError
from memory import Memory
from tests.runtime.helpers import decide, finish_reason, make_agent, one, record_tool, says_not_approved, tool_messages
from tests.support.scripted_model import call, reply, tool_calls
from tools import create_tool

OPTIONS = dict(auto_resume_suspended_tools=False)


async def _suspend(agent, model, thread_id, resource_id, record_id, call_id):
    model.chat.push(tool_calls(call("delete-record", {"id": record_id}, id=call_id)))
    output = await agent.generate(f"Delete {record_id}", thread_id=thread_id, resource_id=resource_id, **OPTIONS)
    assert output.finish_reason == "suspended"
    return output.run_id


async def test_list_suspended_runs_filters_and_pages(model, storage):
    agent = make_agent([record_tool()], memory=Memory(storage))
    r1 = await _suspend(agent, model, "t1", "u1", "1", "c1")
    r2 = await _suspend(agent, model, "t2", "u1", "2", "c2")
    r3 = await _suspend(agent, model, "t3", "u2", "3", "c3")
    model.chat.push(reply("plain answer"))
    await agent.generate("Just chat", thread_id="t4", resource_id="u1", **OPTIONS)

    everything = await agent.list_suspended_runs()
    assert everything.total == 3
    assert {r.run_id for r in everything.runs} == {r1, r2, r3}

    by_resource = await agent.list_suspended_runs(resource_id="u1")
    assert by_resource.total == 2
    assert {r.run_id for r in by_resource.runs} == {r1, r2}

    by_thread = await agent.list_suspended_runs(thread_id="t3")
    assert [r.run_id for r in by_thread.runs] == [r3]

    both = await agent.list_suspended_runs(thread_id="t1", resource_id="u1")
    assert [r.run_id for r in both.runs] == [r1]
    assert (await agent.list_suspended_runs(thread_id="t1", resource_id="u2")).total == 0

    page0 = await agent.list_suspended_runs(page=0, per_page=2)
    page1 = await agent.list_suspended_runs(page=1, per_page=2)
    page2 = await agent.list_suspended_runs(page=2, per_page=2)
    assert page0.total == page1.total == 3
    assert len(page0.runs) == 2 and len(page1.runs) == 1 and page2.runs == []
    assert {r.run_id for r in page0.runs + page1.runs} == {r1, r2, r3}

    run = by_thread.runs[0]
    assert run.status == "suspended"
    assert run.thread_id == "t3"
    assert run.resource_id == "u2"
    assert isinstance(run.suspended_at, datetime)
    [waiting] = run.tool_calls
    assert waiting.tool_call_id == "c3"
    assert waiting.tool_name == "delete-record"
    assert waiting.args == {"id": "3"}
    assert waiting.requires_approval is True
    assert waiting.suspend_payload is None


async def test_finished_runs_are_never_listed(model, storage):
    agent = make_agent([record_tool()], memory=Memory(storage))
    r1 = await _suspend(agent, model, "t1", "u1", "1", "c1")
    r2 = await _suspend(agent, model, "t2", "u1", "2", "c2")
    model.chat.push(reply("done 1"), reply("done 2"))

    await agent.approve_tool_call_generate(run_id=r1, tool_call_id="c1")
    assert {r.run_id for r in (await agent.list_suspended_runs()).runs} == {r2}
    await agent.decline_tool_call_generate(run_id=r2, tool_call_id="c2")
    page = await agent.list_suspended_runs()
    assert page.total == 0 and page.runs == []


async def test_suspend_payload_is_listed(model, storage):
    async def ask(input, ctx):
        if ctx.agent.resume_data is None:
            return await ctx.agent.suspend({"question": "Which city?"})
        return {"ok": True}

    tool = create_tool(
        id="ask-city",
        description="Ask",
        suspend_schema={"type": "object", "properties": {"question": {"type": "string"}}},
        resume_schema={"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
        execute=ask,
    )
    agent = make_agent([tool], memory=Memory(storage))
    model.chat.push(tool_calls(call("ask-city", {}, id="c_ask")))
    await agent.generate("Weather?", thread_id="t1", resource_id="u1", **OPTIONS)

    [run] = (await agent.list_suspended_runs(thread_id="t1")).runs
    [waiting] = run.tool_calls
    assert waiting.tool_name == "ask-city"
    assert waiting.requires_approval is False
    assert waiting.suspend_payload == {"question": "Which city?"}


async def test_list_with_storage_only(model, storage):
    agent = make_agent([record_tool()], storage=storage)
    model.chat.push(tool_calls(call("delete-record", {"id": "1"}, id="c1")))
    output = await agent.generate("Delete 1", resource_id="u9")

    page = await agent.list_suspended_runs()
    assert [r.run_id for r in page.runs] == [output.run_id]


async def test_list_is_per_agent(model, storage):
    agent = make_agent([record_tool()], storage=storage, id="agent-a")
    other = make_agent([record_tool()], storage=storage, id="agent-b")
    model.chat.push(tool_calls(call("delete-record", {"id": "1"}, id="c1")))
    await agent.generate("Delete 1")

    assert (await agent.list_suspended_runs()).total == 1
    assert (await other.list_suspended_runs()).total == 0


# -- send_tool_approval --------------------------------------------------------------------------------


async def test_send_tool_approval_with_no_suspended_run(model, storage):
    agent = make_agent([record_tool()], memory=Memory(storage))
    with pytest.raises(NoSuspendedRunError):
        await decide(agent.send_tool_approval(thread_id="t1", resource_id="u1", approved=True))


async def test_send_tool_approval_approves_the_one_waiting_call(model, storage):
    delete = record_tool()
    agent = make_agent([delete], memory=Memory(storage))
    run_id = await _suspend(agent, model, "t1", "u1", "1", "c1")
    await _suspend(agent, model, "t2", "u1", "2", "c2")  # another thread: not a candidate
    model.chat.push(reply("Deleted 1."))

    chunks = await decide(agent.send_tool_approval(thread_id="t1", resource_id="u1", approved=True))

    assert all(c.run_id == run_id for c in chunks)
    assert one(chunks, "tool-result").payload["tool_call_id"] == "c1"
    assert finish_reason(chunks) == "stop"
    assert [i["id"] for i in delete.calls.inputs] == ["1"]
    with pytest.raises(NoSuspendedRunError):
        await decide(agent.send_tool_approval(thread_id="t1", resource_id="u1", approved=True))


async def test_send_tool_approval_declines_with_reason(model, storage):
    delete = record_tool()
    agent = make_agent([delete], memory=Memory(storage))
    await _suspend(agent, model, "t1", "u1", "1", "c1")
    model.chat.push(reply("Not deleted."))

    chunks = await decide(
        agent.send_tool_approval(thread_id="t1", resource_id="u1", approved=False, reason="wrong record")
    )

    assert one(chunks, "tool-output-denied").payload["reason"] == "wrong record"
    assert len(delete.calls) == 0
    told = tool_messages(model.chat.requests[-1])["c1"]
    assert says_not_approved(told) and "wrong record" in told


async def test_send_tool_approval_with_several_waiting_runs_is_ambiguous(model, storage):
    delete = record_tool()
    agent = make_agent([delete], memory=Memory(storage))
    await _suspend(agent, model, "t1", "u1", "1", "c1")
    model.chat.push(tool_calls(call("delete-record", {"id": "2"}, id="c2")))
    second = await agent.generate("Delete 2 as well", thread_id="t1", resource_id="u1", **OPTIONS)
    assert second.finish_reason == "suspended"

    with pytest.raises(AmbiguousSuspendedRunsError):
        await decide(agent.send_tool_approval(thread_id="t1", resource_id="u1", approved=True))
    assert len(delete.calls) == 0

    model.chat.push(reply("Deleted 2."))
    chunks = await decide(agent.send_tool_approval(thread_id="t1", resource_id="u1", approved=True, tool_call_id="c2"))
    assert one(chunks, "tool-result").payload["tool_call_id"] == "c2"
    assert [i["id"] for i in delete.calls.inputs] == ["2"]


async def test_send_tool_approval_only_sees_its_resource(model, storage):
    agent = make_agent([record_tool()], memory=Memory(storage))
    await _suspend(agent, model, "t1", "u1", "1", "c1")
    with pytest.raises((NoSuspendedRunError, ToolCallNotSuspendedError)):
        await decide(agent.send_tool_approval(thread_id="t1", resource_id="someone-else", approved=True))


async def test_a_total_past_the_counted_runs_is_a_lower_bound(model, storage):
    """Many waiting runs (here 320, written in bulk): a page counts at most 200 runs past its end, so its
    cost does not grow with how many wait; its total then says how many were counted and that more wait."""
    from sqlalchemy import insert

    from memory.defaults import SUSPENDED_RUNS_COUNTED_AHEAD
    from memory.tables import RunRow, ToolCallRow, utcnow

    agent = make_agent([record_tool()], memory=Memory(storage))
    await storage.migrate()
    now = utcnow()
    runs, calls = [], []
    for index in range(320):
        run_id = f"run-{index:04d}"
        runs.append(dict(id=run_id, agent_id=agent.id, thread_id=f"スレッド-{index % 3}", resource_id="u1",
                         uses_memory=True, status="suspended", step=1, max_steps=10, request_context={},
                         created_at=now, updated_at=now, suspended_at=now))  # fmt: skip
        calls.append(dict(run_id=run_id, tool_call_id=f"c{index}", agent_id=agent.id, thread_id=f"スレッド-{index % 3}",
                          resource_id="u1", step=0, position=0, tool_name="delete-record", args={"id": str(index)},
                          state="awaiting_approval", requires_approval=True, created_at=now, updated_at=now,
                          suspended_at=now))  # fmt: skip
    async with storage.transaction() as connection:
        await connection.execute(insert(RunRow.__table__), runs)
        await connection.execute(insert(ToolCallRow.__table__), calls)

    assert SUSPENDED_RUNS_COUNTED_AHEAD == 200
    first = await agent.list_suspended_runs(per_page=50)
    assert len(first.runs) == 50
    assert (first.total, first.total_exact) == (251, False)  # 50 + 200 counted, and at least one more
    second = await agent.list_suspended_runs(page=1, per_page=50)  # counts up to 300: still short of 320
    assert (second.total, second.total_exact) == (301, False)
    third = await agent.list_suspended_runs(page=2, per_page=50)  # counts up to 350: all of them
    assert (third.total, third.total_exact) == (320, True)
    in_a_thread = await agent.list_suspended_runs(thread_id="スレッド-1")
    assert (in_a_thread.total, in_a_thread.total_exact) == (107, True)
    seen = {run.run_id for page in range(7) for run in (await agent.list_suspended_runs(page=page)).runs}
    assert len(seen) == 320  # the pages still reach every waiting run
