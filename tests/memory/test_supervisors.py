"""Supervisor agents: sub-agents offered as `agent-<id>` tools; an approval or a suspension at any
depth surfaces at the top with the top-level tool_call_id and the inner tool's name and arguments;
decisions taken at the top flow down to the inner run found from storage. Depth 2 and 3, on SQLite
and PostgreSQL, including a resume after a process restart."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

import pytest

from bot.agent import ResumeDataInvalidError, SnapshotNotFoundError, ToolCallNotSuspendedError
from tests.memory.chain_process import CITY_RESUME, INSTRUCTIONS, build_chain
from tests.memory.chain_process import THREAD as RESTART_THREAD
from tests.memory.chain_process import USER as RESTART_USER
from tests.memory.helpers import extraction_prompt, has_waiting_note, requests_of
from tests.runtime.helpers import (
    Calls,
    assert_every_tool_call_answered,
    collect,
    decide,
    finish_reason,
    of_type,
    one,
    run_status,
    says_not_approved,
    text_of,
    tool_messages,
    user_texts,
)
from tests.support.scripted_model import ScriptedResponse, call, reply, structured, tool_calls

ROOT = Path(__file__).resolve().parents[2]
THREAD, USER = "th-super", "u-super"
OPTS = {"thread_id": THREAD, "resource_id": USER}
DEPTHS = [pytest.param(2, id="depth2"), pytest.param(3, id="depth3")]


def delegate(model, depth: int, inner, *, top_id: str = "t1", mid_id: str = "m1", prompt: str = "please do it"):
    """Script the calls down the chain: top -> (mid ->) leaf -> `inner`."""
    if depth == 3:
        model.chat.push(
            tool_calls(call("agent-mid", {"prompt": prompt}, id=top_id)),
            tool_calls(call("agent-leaf", {"prompt": prompt}, id=mid_id)),
            tool_calls(inner),
        )
    else:
        model.chat.push(tool_calls(call("agent-leaf", {"prompt": prompt}, id=top_id)), tool_calls(inner))


def replies_up(model, depth: int, what: str) -> None:
    """Script the answers back up: leaf, (mid,) top."""
    model.chat.push(reply(f"leaf: {what}"))
    if depth == 3:
        model.chat.push(reply(f"mid: {what}"))
    model.chat.push(reply(f"top: {what}"))


async def chain_runs(storage, run_id: str, tool_call_id: str) -> list[tuple[str, str]]:
    """(run_id, tool_call_id) from the top run down to the innermost call, following what was stored."""
    found = [(run_id, tool_call_id)]
    while True:
        row = await storage.runs.get_tool_call(*found[-1])
        if row is None or row.child_run_id is None:
            return found
        found.append((row.child_run_id, row.child_tool_call_id))


def chain(storage, depth, **kwargs):
    calls = Calls()
    agents = build_chain(storage, depth=depth, calls=calls, **kwargs)
    return agents, calls


def runs_of(calls: Calls, tool: str) -> list:
    return [value for name, value in calls.inputs if name == tool]


# -- approve ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("depth", DEPTHS)
async def test_an_inner_approval_surfaces_at_the_top_and_approving_flows_down(model, storage, depth):
    agents, calls = chain(storage, depth)
    top = agents[0]
    delegate(model, depth, call("delete-record", {"id": "7"}, id="l1"), prompt="delete record 7")

    stream = await top.stream("Delete record 7", **OPTS)
    chunks = await collect(stream)

    assert finish_reason(chunks) == "suspended"
    approval = one(chunks, "tool-call-approval")
    assert approval.payload["tool_call_id"] == "t1"
    assert approval.payload["tool_name"] == "delete-record"
    assert approval.payload["args"] == {"id": "7"}
    assert one(chunks, "tool-call").payload["tool_name"] == ("agent-mid" if depth == 3 else "agent-leaf")
    assert all(c.run_id == stream.run_id for c in chunks)
    assert calls.inputs == []
    output = await stream.result()
    assert output.suspend_payload.tool_call_id == "t1" and output.suspend_payload.requires_approval

    # each agent lists only its own top-level runs
    [run] = (await top.list_suspended_runs()).runs
    assert run.run_id == stream.run_id and run.thread_id == THREAD and run.resource_id == USER
    [waiting] = run.tool_calls
    assert (waiting.tool_call_id, waiting.tool_name, waiting.args, waiting.requires_approval) == (
        "t1",
        "delete-record",
        {"id": "7"},
        True,
    )
    for sub_agent in agents[1:]:
        assert (await sub_agent.list_suspended_runs()).total == 0
    path = await chain_runs(storage, stream.run_id, "t1")
    assert len(path) == depth
    assert path[-1][1] == "l1"
    assert (await storage.runs.get_tool_call(*path[-1])).state == "awaiting_approval"

    replies_up(model, depth, "deleted")
    after = await decide(top.approve_tool_call(run_id=stream.run_id))  # tool_call_id omitted: the latest

    assert runs_of(calls, "delete-record") == [{"id": "7"}]
    result = one(after, "tool-result")
    assert result.payload["tool_call_id"] == "t1"
    assert result.payload["result"] == {"text": "mid: deleted" if depth == 3 else "leaf: deleted"}
    assert text_of(after) == "top: deleted"
    assert finish_reason(after) == "stop"
    assert all(c.run_id == stream.run_id for c in after)
    assert "deleted" in tool_messages(requests_of(model, INSTRUCTIONS["leaf"])[-1])["l1"]
    for run_id, _ in path:
        assert await run_status(storage, run_id) == "completed"
    for agent in agents:
        assert (await agent.list_suspended_runs()).total == 0
    for body in model.chat.requests:
        assert_every_tool_call_answered(body)
    assert model.unexpected == []

    with pytest.raises(ToolCallNotSuspendedError):
        await decide(top.approve_tool_call(run_id=stream.run_id, tool_call_id="t1"))
    assert len(runs_of(calls, "delete-record")) == 1


@pytest.mark.parametrize("depth", DEPTHS)
async def test_declining_at_the_top_never_runs_the_inner_tool(model, storage, depth):
    agents, calls = chain(storage, depth)
    top = agents[0]
    delegate(model, depth, call("delete-record", {"id": "7"}, id="l1"))
    output = await top.generate("Delete record 7", **OPTS)
    assert output.finish_reason == "suspended"

    replies_up(model, depth, "kept it")
    after = await decide(top.decline_tool_call(run_id=output.run_id, tool_call_id="t1", reason="we need it"))

    assert calls.inputs == []
    denied = one(after, "tool-output-denied")
    assert denied.payload["tool_call_id"] == "t1"
    assert denied.payload["tool_name"] == "delete-record"
    assert denied.payload["reason"] == "we need it"
    assert text_of(after) == "top: kept it"
    assert finish_reason(after) == "stop"
    # the sub-agent that owns the call hears the denial, with the reason
    leaf_seen = tool_messages(requests_of(model, INSTRUCTIONS["leaf"])[-1])["l1"]
    assert says_not_approved(leaf_seen) and "we need it" in leaf_seen
    for run_id, _ in await chain_runs(storage, output.run_id, "t1"):
        assert await run_status(storage, run_id) == "completed"
    assert (await storage.runs.get_tool_call(*(await chain_runs(storage, output.run_id, "t1"))[-1])).state == "declined"
    assert model.unexpected == []


# -- suspend and resume ----------------------------------------------------------------------------


@pytest.mark.parametrize("depth", DEPTHS)
async def test_an_inner_suspension_surfaces_at_the_top_and_resumes_from_there(model, storage, depth):
    agents, calls = chain(storage, depth, auto_resume=False)
    top = agents[0]
    delegate(model, depth, call("get-weather", {"when": "tomorrow"}, id="l1"))

    stream = await top.stream("Weather tomorrow?", **OPTS)
    chunks = await collect(stream)

    assert finish_reason(chunks) == "suspended"
    suspended = one(chunks, "tool-call-suspended")
    assert suspended.payload["tool_call_id"] == "t1"
    assert suspended.payload["tool_name"] == "get-weather"
    assert suspended.payload["args"] == {"when": "tomorrow"}
    assert suspended.payload["suspend_payload"] == {"question": "Which city?"}
    assert suspended.payload["resume_schema"] == CITY_RESUME
    [run] = (await top.list_suspended_runs(thread_id=THREAD)).runs
    assert run.tool_calls[0].suspend_payload == {"question": "Which city?"}
    assert run.tool_calls[0].requires_approval is False

    # data that does not fit the inner tool's resume_schema is refused at the top; nothing changes
    with pytest.raises(ResumeDataInvalidError):
        await decide(top.resume_stream({"town": "Paris"}, run_id=stream.run_id, tool_call_id="t1"))
    assert runs_of(calls, "get-weather") == [None]
    assert (await top.list_suspended_runs()).total == 1

    replies_up(model, depth, "sunny in Paris")
    output = await top.resume_generate({"city": "Paris"}, run_id=stream.run_id, tool_call_id="t1")

    assert output.run_id == stream.run_id
    assert output.text == "top: sunny in Paris" and output.finish_reason == "stop"
    assert runs_of(calls, "get-weather") == [None, {"city": "Paris"}]
    assert "Paris" in tool_messages(requests_of(model, INSTRUCTIONS["leaf"])[-1])["l1"]
    for run_id, _ in await chain_runs(storage, stream.run_id, "t1"):
        assert await run_status(storage, run_id) == "completed"
    assert model.unexpected == []


@pytest.mark.parametrize("depth", DEPTHS)
async def test_an_inner_suspension_is_auto_resumed_from_the_supervisors_thread(model, storage, depth):
    agents, calls = chain(storage, depth)
    top = agents[0]
    delegate(model, depth, call("get-weather", {"when": "tomorrow"}, id="l1"))
    first = await top.generate("Weather tomorrow?", **OPTS)
    assert first.finish_reason == "suspended"

    # an unrelated message: a normal turn at the top, told what the inner tool waits for
    model.structured.push(structured({"city": None}))
    model.chat.push(reply("Which city?"))
    unrelated = await top.generate("hello", **OPTS)
    assert unrelated.run_id != first.run_id
    assert has_waiting_note(model.chat.requests[-1], "get-weather", "Which city?")
    extraction = model.structured.requests[-1]
    assert extraction_prompt(extraction).startswith("Question: Which city?\nReply: hello\n")
    assert list(extraction["response_format"]["json_schema"]["schema"]["properties"]) == list(CITY_RESUME["properties"])

    # the answer resumes the inner call through the chain
    model.structured.push(structured({"city": "Paris"}))
    replies_up(model, depth, "sunny in Paris")
    stream = await top.stream("Paris", **OPTS)
    chunks = await collect(stream)

    assert stream.run_id == first.run_id
    assert text_of(chunks) == "top: sunny in Paris"
    assert one(chunks, "tool-result").payload["tool_call_id"] == "t1"
    assert runs_of(calls, "get-weather") == [None, {"city": "Paris"}]
    assert user_texts(model.chat.requests[-1]) == ["Weather tomorrow?", "hello", "Paris"]
    for run_id, _ in await chain_runs(storage, first.run_id, "t1"):
        assert await run_status(storage, run_id) == "completed"
    assert model.unexpected == []


@pytest.mark.parametrize("depth", DEPTHS)
async def test_an_inner_approval_is_never_auto_resumed_from_the_supervisors_thread(model, storage, depth):
    agents, calls = chain(storage, depth)
    top = agents[0]
    delegate(model, depth, call("delete-record", {"id": "7"}, id="l1"))
    first = await top.generate("Delete record 7", **OPTS)

    model.chat.push(reply("It needs an approval first."))
    output = await top.generate("approved=true, I approve this, go ahead", **OPTS)

    assert output.run_id != first.run_id
    assert model.structured.requests == []
    assert calls.inputs == []
    path = await chain_runs(storage, first.run_id, "t1")
    assert (await storage.runs.get_tool_call(*path[0])).state == "awaiting_approval"
    assert (await storage.runs.get_tool_call(*path[-1])).state == "awaiting_approval"
    assert has_waiting_note(model.chat.requests[-1], "delete-record")


# -- storage, not the model, routes decisions ------------------------------------------------------


async def test_the_same_call_id_at_every_level_still_routes_to_the_right_call(model, storage):
    agents, calls = chain(storage, 3)
    top = agents[0]
    delegate(model, 3, call("delete-record", {"id": "7"}, id="same"), top_id="same", mid_id="same")
    output = await top.generate("Delete record 7", **OPTS)
    assert output.suspend_payload.tool_call_id == "same"
    path = await chain_runs(storage, output.run_id, "same")
    assert len(path) == 3 and len({run_id for run_id, _ in path}) == 3

    replies_up(model, 3, "deleted")
    done = await top.approve_tool_call_generate(run_id=output.run_id, tool_call_id="same")
    assert done.text == "top: deleted"
    assert runs_of(calls, "delete-record") == [{"id": "7"}]


async def test_a_sub_agent_run_is_decided_through_its_supervisor_only(model, storage):
    agents, calls = chain(storage, 3)
    top, mid, leaf = agents
    delegate(model, 3, call("delete-record", {"id": "7"}, id="l1"))
    output = await top.generate("Delete record 7", **OPTS)
    path = await chain_runs(storage, output.run_id, "t1")

    # the top agent does not know the inner runs; the sub-agents do not list them
    with pytest.raises(SnapshotNotFoundError):
        await top.approve_tool_call(run_id=path[-1][0], tool_call_id="l1")
    assert (await leaf.list_suspended_runs()).total == 0
    assert (await mid.list_suspended_runs()).total == 0
    assert calls.inputs == []


async def test_a_decision_that_cannot_be_passed_down_fails_the_run_and_unlists_it(model, storage):
    """The inner call was settled behind the supervisor's back (through the leaf agent directly): the
    top decision cannot be carried out, so the top run ends failed, with an error chunk, and no longer
    lists as suspended."""
    agents, calls = chain(storage, 2)
    top, leaf = agents
    delegate(model, 2, call("delete-record", {"id": "7"}, id="l1"))
    output = await top.generate("Delete record 7", **OPTS)
    [(_, _), (inner_run, inner_call)] = await chain_runs(storage, output.run_id, "t1")
    model.chat.push(reply("leaf: declined"))
    assert (await leaf.decline_tool_call_generate(run_id=inner_run, tool_call_id=inner_call)).finish_reason == "stop"

    final = await top.approve_tool_call_generate(run_id=output.run_id)

    assert final.finish_reason == "error"
    assert "l1" in final.error
    assert await run_status(storage, output.run_id) == "failed"
    assert (await top.list_suspended_runs()).total == 0
    assert calls.inputs == []  # the inner tool never ran


async def test_each_agent_lists_only_its_own_runs(model, storage):
    agents, calls = chain(storage, 3)
    top, mid, leaf = agents
    delegate(model, 3, call("delete-record", {"id": "7"}, id="l1"))
    from_top = await top.generate("Delete record 7", **OPTS)
    # mid used on its own, as a top-level agent on the same storage
    model.chat.push(
        tool_calls(call("agent-leaf", {"prompt": "delete 8"}, id="m9")),
        tool_calls(call("delete-record", {"id": "8"}, id="l9")),
    )
    from_mid = await mid.generate("Delete record 8", resource_id="u-mid")
    assert from_mid.finish_reason == "suspended"
    # leaf used on its own
    model.chat.push(tool_calls(call("get-weather", {}, id="l10")))
    from_leaf = await leaf.generate("Weather?", resource_id="u-leaf")

    assert [r.run_id for r in (await top.list_suspended_runs()).runs] == [from_top.run_id]
    assert [r.run_id for r in (await mid.list_suspended_runs()).runs] == [from_mid.run_id]
    assert [r.run_id for r in (await leaf.list_suspended_runs()).runs] == [from_leaf.run_id]
    [mid_run] = (await mid.list_suspended_runs()).runs
    assert [(c.tool_call_id, c.tool_name, c.args) for c in mid_run.tool_calls] == [("m9", "delete-record", {"id": "8"})]
    assert (await top.list_suspended_runs(resource_id="u-mid")).total == 0

    # each is decided through its own agent
    model.chat.push(reply("leaf: deleted 8"), reply("mid: deleted 8"))
    assert (await mid.approve_tool_call_generate(run_id=from_mid.run_id)).text == "mid: deleted 8"
    assert runs_of(calls, "delete-record") == [{"id": "8"}]
    assert [r.run_id for r in (await top.list_suspended_runs()).runs] == [from_top.run_id]
    assert (await mid.list_suspended_runs()).total == 0


async def test_two_sub_agent_calls_in_one_step_wait_and_are_decided_separately(model, storage):
    agents, calls = chain(storage, 2)
    top = agents[0]

    def leaf_step(body) -> ScriptedResponse:
        prompt = user_texts(body)[-1]
        record = prompt.split()[-1]
        return tool_calls(call("delete-record", {"id": record}, id=f"l{record}"))

    model.chat.push(
        tool_calls(
            call("agent-leaf", {"prompt": "delete 7"}, id="t7"),
            call("agent-leaf", {"prompt": "delete 8"}, id="t8"),
        ),
        leaf_step,
        leaf_step,
    )
    stream = await top.stream("Delete 7 and 8", **OPTS)
    chunks = await collect(stream)
    approvals = {c.payload["tool_call_id"]: c.payload for c in of_type(chunks, "tool-call-approval")}
    assert set(approvals) == {"t7", "t8"}
    assert approvals["t7"]["args"] == {"id": "7"} and approvals["t8"]["args"] == {"id": "8"}
    [run] = (await top.list_suspended_runs()).runs
    assert sorted(c.tool_call_id for c in run.tool_calls) == ["t7", "t8"]

    model.chat.push(reply("leaf: deleted 8"))
    first = await decide(top.approve_tool_call(run_id=stream.run_id, tool_call_id="t8"))
    assert finish_reason(first) == "suspended"  # t7 still waits
    assert runs_of(calls, "delete-record") == [{"id": "8"}]

    model.chat.push(reply("leaf: kept 7"), reply("top: deleted 8, kept 7"))
    second = await decide(top.decline_tool_call(run_id=stream.run_id, tool_call_id="t7", reason="no"))
    assert text_of(second) == "top: deleted 8, kept 7"
    assert runs_of(calls, "delete-record") == [{"id": "8"}]
    results = tool_messages(model.chat.requests[-1])
    assert results["t8"] and "deleted 8" in results["t8"] and "kept 7" in results["t7"]
    assert model.unexpected == []


# -- after a restart -------------------------------------------------------------------------------


async def run_chain_process(command: str, database_url: str, effects: Path) -> dict:
    env = dict(os.environ)
    env.update(DATABASE_URL=database_url, SIDE_EFFECT_FILE=str(effects), PYTHONPATH=str(ROOT))
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "tests.memory.chain_process",
        command,
        cwd=ROOT,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    stdout, stderr = await asyncio.wait_for(process.communicate(), 60)
    assert process.returncode == 0, stderr.decode()[-3000:]
    return json.loads(stdout.decode().strip().splitlines()[-1])


@pytest.mark.parametrize("how", ["resume", "auto-resume"])
async def test_a_parked_call_deep_in_a_chain_resumes_after_a_restart(model, database_url, storage, tmp_path, how):
    effects = tmp_path / "effects.log"
    delegate(model, 3, call("get-weather", {"when": "tomorrow"}, id="l1"))
    started = await run_chain_process("suspend-ask", database_url, effects)
    assert started["finish_reason"] == "suspended"
    assert started["waiting"]["type"] == "tool-call-suspended"
    assert started["waiting"]["tool_call_id"] == "t1" and started["waiting"]["tool_name"] == "get-weather"
    assert not effects.exists()

    agents, calls = chain(storage, 3)  # a fresh chain, as after a restart
    top = agents[0]
    [run] = (await top.list_suspended_runs(thread_id=RESTART_THREAD)).runs
    assert run.run_id == started["run_id"]
    assert run.tool_calls[0].tool_name == "get-weather"
    assert run.tool_calls[0].suspend_payload == {"question": "Which city?"}

    replies_up(model, 3, "sunny in Paris")
    if how == "resume":
        output = await top.resume_generate({"city": "Paris"}, run_id=started["run_id"])
    else:
        model.structured.push(structured({"city": "Paris"}))
        output = await top.generate("Paris", thread_id=RESTART_THREAD, resource_id=RESTART_USER)

    assert output.run_id == started["run_id"]
    assert output.text == "top: sunny in Paris"
    assert runs_of(calls, "get-weather") == [{"city": "Paris"}]  # only this process's execution
    assert "Paris" in tool_messages(requests_of(model, INSTRUCTIONS["leaf"])[-1])["l1"]
    for run_id, _ in await chain_runs(storage, started["run_id"], "t1"):
        assert await run_status(storage, run_id) == "completed"
    assert (await top.list_suspended_runs()).total == 0
    assert model.unexpected == []


@pytest.mark.parametrize("decision", ["approve", "decline"])
async def test_an_approval_deep_in_a_chain_is_decided_after_a_restart(model, database_url, storage, tmp_path, decision):
    effects = tmp_path / "effects.log"
    delegate(model, 3, call("delete-record", {"id": "7"}, id="l1"))
    started = await run_chain_process("suspend-approval", database_url, effects)
    assert started["waiting"]["type"] == "tool-call-approval"
    assert started["waiting"]["args"] == {"id": "7"}

    agents = build_chain(storage, depth=3, side_effect_file=str(effects))
    top = agents[0]
    replies_up(model, 3, "done")
    if decision == "approve":
        output = await top.approve_tool_call_generate(run_id=started["run_id"], tool_call_id="t1")
        assert effects.read_text().count("deleted 7") == 1
    else:
        output = await top.decline_tool_call_generate(run_id=started["run_id"], tool_call_id="t1", reason="keep")
        assert not effects.exists()
        assert "keep" in tool_messages(requests_of(model, INSTRUCTIONS["leaf"])[-1])["l1"]
    assert output.text == "top: done"
    for run_id, _ in await chain_runs(storage, started["run_id"], "t1"):
        assert await run_status(storage, run_id) == "completed"


@pytest.mark.parametrize("depth", DEPTHS)
async def test_an_inner_tool_that_asks_again_surfaces_again_at_the_top(model, storage, depth):
    agents, calls = chain(storage, depth)
    top = agents[0]
    delegate(model, depth, call("get-weather", {}, id="l1"))
    first = await top.generate("Weather?", **OPTS)

    # the first answer makes the inner tool ask again: the new question surfaces at the top
    model.structured.push(structured({"city": "Atlantis"}))
    stream = await top.stream("Atlantis", **OPTS)
    chunks = await collect(stream)
    assert stream.run_id == first.run_id
    assert finish_reason(chunks) == "suspended"
    again = one(chunks, "tool-call-suspended")
    assert again.payload["tool_call_id"] == "t1" and again.payload["tool_name"] == "get-weather"
    assert again.payload["suspend_payload"] == {"question": "Atlantis is not on the map. Which city?"}
    [run] = (await top.list_suspended_runs()).runs
    assert run.tool_calls[0].suspend_payload == {"question": "Atlantis is not on the map. Which city?"}
    assert len(model.chat.requests) == depth  # nobody was asked to go on

    # the next answer is read against the new question and finishes the chain
    model.structured.push(structured({"city": "Paris"}))
    replies_up(model, depth, "sunny in Paris")
    output = await top.generate("Paris then", **OPTS)
    assert output.run_id == first.run_id and output.text == "top: sunny in Paris"
    assert extraction_prompt(model.structured.requests[-1]).startswith(
        "Question: Atlantis is not on the map. Which city?\nReply: Paris then\n"
    )
    assert runs_of(calls, "get-weather") == [None, {"city": "Atlantis"}, {"city": "Paris"}]
    for run_id, _ in await chain_runs(storage, first.run_id, "t1"):
        assert await run_status(storage, run_id) == "completed"
    assert model.unexpected == []


@pytest.mark.parametrize("depth", DEPTHS)
async def test_an_approval_and_a_question_in_one_inner_step_both_get_decided_from_the_top(model, storage, depth):
    agents, calls = chain(storage, depth, auto_resume=False)
    top = agents[0]
    if depth == 3:
        model.chat.push(
            tool_calls(call("agent-mid", {"prompt": "both"}, id="t1")),
            tool_calls(call("agent-leaf", {"prompt": "both"}, id="m1")),
        )
    else:
        model.chat.push(tool_calls(call("agent-leaf", {"prompt": "both"}, id="t1")))
    model.chat.push(tool_calls(call("delete-record", {"id": "7"}, id="l_del"), call("get-weather", {}, id="l_city")))

    stream = await top.stream("Delete 7 and tell me the weather", **OPTS)
    chunks = await collect(stream)
    assert finish_reason(chunks) == "suspended"
    surfaced = [
        (c.type, c.payload["tool_name"]) for c in chunks if c.type in ("tool-call-approval", "tool-call-suspended")
    ]
    assert surfaced, "nothing surfaced at the top"

    # settle whatever the top shows, one at a time, until the chain finishes; each inner call exactly once
    seen = list(surfaced)
    replies_up(model, depth, "both done")
    for _ in range(3):
        [run] = (await top.list_suspended_runs()).runs
        [waiting] = run.tool_calls
        assert waiting.tool_call_id == "t1"
        if waiting.requires_approval:
            after = await decide(top.approve_tool_call(run_id=stream.run_id, tool_call_id="t1"))
        else:
            after = await decide(top.resume_stream({"city": "Paris"}, run_id=stream.run_id, tool_call_id="t1"))
        seen += [
            (c.type, c.payload["tool_name"]) for c in after if c.type in ("tool-call-approval", "tool-call-suspended")
        ]
        if finish_reason(after) == "stop":
            break
    assert text_of(after) == "top: both done"
    assert sorted(seen) == [("tool-call-approval", "delete-record"), ("tool-call-suspended", "get-weather")]
    assert runs_of(calls, "delete-record") == [{"id": "7"}]
    assert runs_of(calls, "get-weather") == [None, {"city": "Paris"}]
    leaf_seen = tool_messages(requests_of(model, INSTRUCTIONS["leaf"])[-1])
    assert "deleted" in leaf_seen["l_del"] and "Paris" in leaf_seen["l_city"]
    assert model.unexpected == []
