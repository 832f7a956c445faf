"""Guarantees 6 and 7: nothing is stranded by a crash. A real OS process (tests/runtime/crash_agent.py)
is killed with SIGKILL at each step of a run; a fresh agent, as after a restart, recovers it. On
SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import json
import threading
from datetime import timedelta

import pytest
from sqlalchemy import select

from bot.recovery import RecoveryLoop
from memory.tables import RunRow
from tests.runtime.crash_agent import build_agent
from tests.runtime.helpers import make_agent, record_tool
from tests.support.processes import crash, lines, run, spawn
from tests.support.scripted_model import call, failure, reply, tool_calls
from tools import create_tool


async def lease_refreshed_after(storage, *, seconds: float) -> bool:
    """Whether the one run's lease was refreshed more than `seconds` after the run was made."""
    async with storage.read_session() as session:
        runs = list(await session.scalars(select(RunRow)))
    return len(runs) == 1 and runs[0].heartbeat_at - runs[0].created_at > timedelta(seconds=seconds)


async def recover(agent, stale_after: float = 0.0) -> tuple[list[str], list]:
    """Recover as the bot does, keeping the streams of the work it started; read them to their end."""
    streams = []
    agent.hooks["on_background_stream"] = streams.append
    recovered = await agent.recover_stale_runs(stale_after=stale_after)
    outputs = [await stream.result() for stream in streams]
    return recovered, outputs


async def waiting_calls(agent) -> dict[str, object]:
    page = await agent.list_suspended_runs()
    return {call.tool_call_id: call for run in page.runs for call in run.tool_calls}


async def test_crash_right_after_the_suspension_was_stored_leaves_it_waiting_for_a_human(
    model, database_url, storage, effects
):
    model.chat.push(tool_calls(call("delete-record", {"id": "4"}, id="call_del")), reply("Deleted record 4."))
    await crash("start", "Delete record 4", database_url=database_url, CRASH_AT="suspended")

    agent = build_agent(storage)
    waiting = await waiting_calls(agent)
    assert list(waiting) == ["call_del"] and waiting["call_del"].requires_approval is True
    assert await recover(agent) == ([], [])  # nothing was at work: nothing to take over
    [run] = (await agent.list_suspended_runs()).runs

    output = await agent.approve_tool_call_generate(run_id=run.run_id, tool_call_id="call_del")

    assert output.text == "Deleted record 4."
    assert len(lines(effects, "finished delete-record 4")) == 1


async def test_crash_after_the_decision_before_the_tool_started_is_carried_out_once(
    model, database_url, storage, effects
):
    model.chat.push(tool_calls(call("delete-record", {"id": "7"}, id="call_del")), reply("Deleted record 7."))
    started = await run("start", "Delete record 7", database_url=database_url)
    assert started["finish_reason"] == "suspended"

    await crash("approve", started["run_id"], "call_del", database_url=database_url, CRASH_AT="before_tool")
    assert lines(effects, "started") == []

    agent = build_agent(storage)  # a fresh process's agent
    assert await waiting_calls(agent) == {}  # decided: nobody is asked again
    recovered, outputs = await recover(agent)

    assert recovered == [started["run_id"]]
    assert outputs[0].finish_reason == "stop"
    assert outputs[0].text == "Deleted record 7."
    assert len(lines(effects, "started delete-record 7")) == 1
    assert len(lines(effects, "finished delete-record 7")) == 1
    assert (await storage.runs.get_run(started["run_id"])).status == "completed"
    assert await recover(agent) == ([], [])  # nothing is left to recover


async def test_crash_while_the_tool_runs_comes_back_as_an_interrupted_approval(model, database_url, storage, effects):
    model.chat.push(tool_calls(call("delete-record", {"id": "7"}, id="call_del")), reply("Deleted on the second try."))
    started = await run("start", "Delete record 7", database_url=database_url)
    await crash("approve", started["run_id"], "call_del", database_url=database_url, CRASH_AT="in_tool")
    assert len(lines(effects, "started delete-record 7")) == 1

    agent = build_agent(storage)
    recovered, outputs = await recover(agent)

    assert recovered == [started["run_id"]]
    assert outputs[0].finish_reason == "suspended"
    assert outputs[0].suspend_payload.requires_approval is True
    assert outputs[0].suspend_payload.payload["interrupted"] is True
    waiting = await waiting_calls(agent)
    assert list(waiting) == ["call_del"]
    assert waiting["call_del"].requires_approval is True
    assert waiting["call_del"].suspend_payload["interrupted"] is True
    assert waiting["call_del"].args == {"id": "7"}
    assert (await agent.get_tool_call(started["run_id"], "call_del")).interrupted  # the record's own field
    assert len(lines(effects, "started delete-record 7")) == 1  # never re-run on its own
    assert await recover(agent) == ([], [])

    output = await agent.approve_tool_call_generate(run_id=started["run_id"], tool_call_id="call_del")

    assert output.finish_reason == "stop"
    assert output.text == "Deleted on the second try."
    runs = lines(effects, "started delete-record 7")
    assert len(runs) == 2 and len(lines(effects, "finished delete-record 7")) == 1
    keys = {line.split()[3] for line in runs}
    assert keys == {f"key={started['run_id']}:call_del"}  # the same idempotency key both times
    assert await waiting_calls(agent) == {}


async def test_declining_an_interrupted_call_tells_the_model_it_did_not_complete(model, database_url, storage, effects):
    model.chat.push(tool_calls(call("delete-record", {"id": "7"}, id="call_del")), reply("Understood."))
    started = await run("start", "Delete record 7", database_url=database_url)
    await crash("approve", started["run_id"], "call_del", database_url=database_url, CRASH_AT="in_tool")
    agent = build_agent(storage)
    await recover(agent)

    output = await agent.decline_tool_call_generate(run_id=started["run_id"], tool_call_id="call_del")

    assert output.text == "Understood."
    told = [m for m in model.chat.requests[-1]["messages"] if m["role"] == "tool"]
    assert "did not complete" in told[-1]["content"]
    assert len(lines(effects, "started delete-record 7")) == 1
    assert (await storage.runs.get_run(started["run_id"])).status == "completed"


async def test_crash_during_the_model_call_continues_from_the_stored_messages(model, database_url, storage, effects):
    model.chat.push(
        tool_calls(call("list-records", {"id": "all"}, id="call_list")),
        failure("timeout", seconds=20),  # the model hangs while the process dies
        reply("Records: 1, 2, 3."),
    )
    process = await spawn("start", "List the records", database_url=database_url)
    await asyncio.to_thread(model.chat.wait_for_requests, 2, 30)
    process.kill()
    await process.wait()
    assert len(lines(effects, "finished list-records")) == 1

    agent = build_agent(storage)
    recovered, outputs = await recover(agent)

    assert len(recovered) == 1
    assert outputs[0].finish_reason == "stop"
    assert outputs[0].text == "Records: 1, 2, 3."
    last = model.chat.requests[-1]["messages"]
    assert [m["role"] for m in last][-2:] == ["assistant", "tool"]  # asked again with the tool's result
    assert len(lines(effects, "started list-records")) == 1
    assert (await storage.runs.get_run(recovered[0])).status == "completed"


async def test_crash_while_a_tool_runs_beside_an_approval_lists_both_and_the_run_goes_on(
    model, database_url, storage, effects
):
    model.chat.push(
        tool_calls(
            call("list-records", {"id": "all"}, id="call_list"), call("delete-record", {"id": "2"}, id="call_del")
        ),
        reply("Listed and deleted."),
    )
    await crash(
        "start", "List, then delete 2", database_url=database_url, CRASH_AT="in_tool", CRASH_TOOL="list-records"
    )

    agent = build_agent(storage)
    assert list(await waiting_calls(agent)) == ["call_del"]  # listed even before the recovery
    recovered, _ = await recover(agent)
    waiting = await waiting_calls(agent)
    assert sorted(waiting) == ["call_del", "call_list"]
    assert waiting["call_list"].suspend_payload["interrupted"] is True
    [run_id] = recovered

    first = await agent.approve_tool_call_generate(run_id=run_id, tool_call_id="call_del")
    assert first.finish_reason == "suspended"  # the other call still waits
    second = await agent.approve_tool_call_generate(run_id=run_id, tool_call_id="call_list")

    assert second.finish_reason == "stop"
    assert second.text == "Listed and deleted."
    assert len(lines(effects, "finished delete-record 2")) == 1
    assert len(lines(effects, "started list-records")) == 2  # once before the crash, once approved again
    assert (await storage.runs.get_run(run_id)).status == "completed"


async def test_several_processes_recovering_at_once_recover_each_run_once(model, database_url, storage, effects):
    model.chat.push(tool_calls(call("delete-record", {"id": "9"}, id="call_del")), reply("Deleted record 9."))
    started = await run("start", "Delete record 9", database_url=database_url)
    await crash("approve", started["run_id"], "call_del", database_url=database_url, CRASH_AT="before_tool")

    # three processes whose clocks run 31 s ahead: the dead process's lease is older than stale_after=30 to
    # them, and the lease the winner takes is not, however far apart the three start on a loaded machine
    # (with 1.2 s ahead and stale_after=1, one starting a second after the winner took the run over again)
    recovering = (run("recover", "30", database_url=database_url, CLOCK_AHEAD="31") for _ in range(3))
    results = await asyncio.gather(*recovering)

    assert sorted(len(r["recovered"]) for r in results) == [0, 0, 1]
    assert len(lines(effects, "started delete-record 9")) == 1
    [winner] = [r for r in results if r["recovered"]]
    assert winner["outputs"][0]["finish_reason"] == "stop"
    assert (await storage.runs.get_run(started["run_id"])).status == "completed"


async def test_a_live_run_is_not_taken_over(model, database_url, storage, effects):
    model.chat.push(tool_calls(call("list-records", {"id": "all"}, id="call_list")), reply("Listed."))
    agent = build_agent(storage)
    process = await spawn("start", "List the records", database_url=database_url, LIST_SECONDS="6")
    # until the lease was refreshed longer than stale_after (below) after the run began: without the lease
    # keeper the run would look stale by then
    deadline = asyncio.get_running_loop().time() + 60
    while not (lines(effects, "started list-records") and await lease_refreshed_after(storage, seconds=1.5)):
        assert asyncio.get_running_loop().time() < deadline and process.returncode is None
        await asyncio.sleep(0.05)

    recovered, _ = await recover(agent, stale_after=1.5)

    assert recovered == []
    assert lines(effects, "finished list-records") == []  # the tool was still at work: the check meant something
    stdout, _ = await asyncio.wait_for(process.communicate(), 30)
    assert json.loads(stdout.decode().splitlines()[-1])["finish_reason"] == "stop"
    assert len(lines(effects, "started list-records")) == 1


async def test_a_run_this_process_works_on_is_never_taken_over_by_its_own_recovery(model, storage, clock):
    """Its lease looks stale (no beat for longer than `stale_after`), but this very process drives it:
    recovering it here would ask the model a second time beside the first."""
    started, release = asyncio.Event(), asyncio.Event()

    async def slow(input, ctx):
        started.set()
        await release.wait()
        return {"listed": True}

    tool = create_tool(
        id="list-records", description="List the records.", input_schema={"type": "object"}, execute=slow
    )
    agent = make_agent([tool], storage=storage, default_options={"heartbeat_interval": 60})
    model.chat.push(tool_calls(call("list-records", {}, id="call_list")), reply("Listed."))
    work = asyncio.create_task(agent.generate("List the records", resource_id="u1"))
    await asyncio.wait_for(started.wait(), 10)
    clock.advance(30)  # long past any stale_after: no beat came

    recovered, _ = await recover(agent, stale_after=2)
    release.set()
    output = await asyncio.wait_for(work, 10)

    assert recovered == []
    assert output.text == "Listed."
    assert len(model.chat.requests) == 2  # one model call per step, none repeated by a takeover


@pytest.mark.parametrize("stalled_reply", ["a call", "an answer"])
async def test_a_process_that_stalled_past_its_lease_records_nothing_of_the_step_another_took_over(
    model, storage, clock, stalled_reply
):
    """A process stalls in a model call for longer than its lease (a long pause of the VM, SIGSTOP), another
    takes the run over, asks the model again and runs the refund its reply asks for; the first wakes with its
    own reply to the same step (a call, or a final answer) while the refund still runs. The step is recorded
    once: the refund is issued once, the run goes on where it was taken over, and the stalled stream says so
    instead of failing the run."""
    refunds, refunding, refund_done = [], asyncio.Event(), asyncio.Event()

    async def refund(input, ctx):
        refunds.append(input["order_id"])
        refunding.set()
        await refund_done.wait()
        return {"refunded": input["order_id"]}

    tool = create_tool(
        id="issue-refund",
        description="Refund an order.",
        input_schema={"type": "object", "properties": {"order_id": {"type": "string"}}, "required": ["order_id"]},
        execute=refund,
    )
    wake = threading.Event()

    def stalled(body):
        wake.wait(30)
        if stalled_reply == "an answer":
            return reply("Ø-7 n'est pas remboursable.")
        return tool_calls(call("issue-refund", {"order_id": "Ø-7"}, id="call_stalled"))

    model.chat.push(
        stalled,
        tool_calls(call("issue-refund", {"order_id": "Ø-7"}, id="call_taken_over")),
        reply("已退款：Ø-7。"),
    )
    stalled_agent = make_agent([tool], storage=storage, default_options={"heartbeat_interval": 60})
    work = asyncio.create_task(stalled_agent.generate("请退款 Ø-7", resource_id="u1"))
    await asyncio.to_thread(model.chat.wait_for_requests, 1, 10)
    clock.advance(30)  # no beat came: the run looks abandoned
    taker, streams = make_agent([tool], storage=storage), []
    taker.hooks["on_background_stream"] = streams.append
    [run_id] = await taker.recover_stale_runs(stale_after=2)
    await asyncio.wait_for(refunding.wait(), 10)

    wake.set()
    stalled_output = await asyncio.wait_for(work, 10)
    refund_done.set()
    [taken_over] = [await stream.result() for stream in streams]

    assert refunds == ["Ø-7"]
    assert stalled_output.finish_reason == "error"
    assert "another process" in stalled_output.error
    assert (taken_over.finish_reason, taken_over.text) == ("stop", "已退款：Ø-7。")
    assert (await storage.runs.get_run(run_id)).status == "completed"
    messages = await storage.runs.run_messages(run_id)
    assert [m["role"] for m in messages] == ["user", "assistant", "tool", "assistant"]
    assert messages[1]["tool_calls"][0]["id"] == "call_taken_over"


async def test_a_recovery_loop_makes_its_agent_beat_faster_than_any_replica_calls_a_run_stale(storage):
    """A replica calls a run stale after `stale_after` seconds without a beat: the beat must come sooner."""
    sub = make_agent([], storage=storage, id="sub-agent")
    agent = make_agent([], storage=storage, agents=[sub])  # default beat: every 5 s
    loop = RecoveryLoop(agent, every=60, stale_after=2)
    try:
        assert agent.default_options["heartbeat_interval"] < 1
        assert sub.default_options["heartbeat_interval"] < 1
    finally:
        await loop.stop()


async def test_a_request_rule_missing_in_the_continuing_process_means_approval(model, database_url, storage, effects):
    """Guarantee 7: the run was started with a request-level callable that lets list-records run
    freely; another process goes on with it and, lacking the callable, asks a human instead."""
    model.chat.push(
        tool_calls(call("delete-record", {"id": "3"}, id="call_del")),
        tool_calls(call("list-records", {"id": "all"}, id="call_list")),
        reply("Done."),
    )
    agent = build_agent(storage)
    output = await agent.generate("Delete 3, then list", resource_id="u1", require_tool_approval=lambda check: False)
    assert output.finish_reason == "suspended"

    continued = await run("approve", output.run_id, "call_del", database_url=database_url)

    assert continued["finish_reason"] == "suspended"
    assert continued["waiting"] == ["call_list"]
    assert lines(effects, "started list-records") == []
    waiting = await waiting_calls(agent)
    assert waiting["call_list"].requires_approval is True


async def test_the_process_that_has_the_request_rule_still_uses_it(model, database_url, storage, effects):
    model.chat.push(
        tool_calls(call("delete-record", {"id": "3"}, id="call_del")),
        tool_calls(call("list-records", {"id": "all"}, id="call_list")),
        reply("Done."),
    )
    agent = build_agent(storage)
    output = await agent.generate("Delete 3, then list", resource_id="u1", require_tool_approval=lambda check: False)

    done = await agent.approve_tool_call_generate(run_id=output.run_id, tool_call_id="call_del")

    assert done.finish_reason == "stop"
    assert len(lines(effects, "finished list-records")) == 1


async def test_a_model_that_hangs_fails_the_run_and_the_thread_goes_on(model, storage):
    from memory import Memory

    agent = make_agent([record_tool()], storage=storage, memory=Memory(storage), default_options={"model_timeout": 1})
    model.chat.push(failure("timeout", seconds=8), reply("Hello again."))

    failed = await agent.generate("hi", thread_id="t-hang", resource_id="u1")

    assert failed.finish_reason == "error"
    assert "did not answer within 1 s" in failed.error
    assert (await storage.runs.get_run(failed.run_id)).status == "failed"
    again = await agent.generate("are you there?", thread_id="t-hang", resource_id="u1")
    assert again.finish_reason == "stop"
    assert again.text == "Hello again."


async def test_a_process_that_stalled_while_its_tool_ran_stores_nothing_of_it_when_it_wakes(model, storage, clock):
    """A process stalls while its tool runs, for longer than its lease; another takes the run over, which turns
    the call into an interrupted approval, and a person approves it there, so it runs again. The stalled
    process wakes while that second execution still runs, and its own execution ends: what it got is not
    stored (the call moved since its "started" mark), and it asks the model nothing (the run is not its
    own any more). The thread hears one answer, from the execution that was approved again."""
    gates = {"stalled": asyncio.Event(), "approved again": asyncio.Event()}
    started: list[str] = []

    async def listing(input, ctx):
        who = "stalled" if not started else "approved again"
        started.append(who)
        await gates[who].wait()
        return {"listed_by": who}

    tool = create_tool(
        id="list-records", description="List the records.", input_schema={"type": "object"}, execute=listing
    )
    model.chat.push(tool_calls(call("list-records", {}, id="call_list")), reply("Listé une fois."))
    stalled_agent = make_agent([tool], storage=storage, default_options={"heartbeat_interval": 60})
    work = asyncio.create_task(stalled_agent.generate("列出记录", resource_id="u1"))
    await until_true(lambda: started == ["stalled"])
    clock.advance(30)  # no beat came: the run looks abandoned
    taker = make_agent([tool], storage=storage)
    [run_id], [interrupted] = await recover(taker, stale_after=2)
    assert interrupted.finish_reason == "suspended"
    approved = asyncio.create_task(taker.approve_tool_call_generate(run_id=run_id, tool_call_id="call_list"))
    await until_true(lambda: started == ["stalled", "approved again"])

    gates["stalled"].set()  # the stalled process wakes: its execution ends
    stalled_output = await asyncio.wait_for(work, 10)
    gates["approved again"].set()
    output = await asyncio.wait_for(approved, 10)

    assert not stalled_output.text
    assert (output.finish_reason, output.text) == ("stop", "Listé une fois.")
    assert len(model.chat.requests) == 2 and not model.unexpected
    messages = await storage.runs.run_messages(run_id)
    assert [m["role"] for m in messages] == ["user", "assistant", "tool", "assistant"]
    assert "approved again" in messages[2]["content"]
    assert (await storage.runs.get_run(run_id)).status == "completed"


async def until_true(check, timeout: float = 10.0) -> None:
    for _ in range(int(timeout / 0.02)):
        if check():
            return
        await asyncio.sleep(0.02)
    raise AssertionError("not reached in time")
