"""Guarantees across OS processes: resume after a restart, and two processes racing to approve the
same call on one database (guarantee 2), on SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

from bot.agent import ToolCallNotSuspendedError
from tests.runtime.helpers import decide, finish_reason, one, run_status, text_of, tool_messages
from tests.runtime.process_agent import build_agent
from tests.support.processes import bot_command, lines, run, spawn
from tests.support.scripted_model import call, reply, tool_calls

ROOT = Path(__file__).resolve().parents[2]


async def run_process(*args: str, env: dict[str, str], timeout: float = 60) -> dict:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "tests.runtime.process_agent",
        *args,
        cwd=ROOT,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    stdout, stderr = await asyncio.wait_for(process.communicate(), timeout)
    assert process.returncode == 0, stderr.decode()[-3000:]
    return json.loads(stdout.decode().strip().splitlines()[-1])


def process_env(database_url: str, side_effect_file: Path) -> dict[str, str]:
    env = dict(os.environ)  # carries OPENAI_BASE_URL / OPENAI_API_KEY set by the `model` fixture
    env.update(DATABASE_URL=database_url, SIDE_EFFECT_FILE=str(side_effect_file), PYTHONPATH=str(ROOT))
    return env


async def test_approve_after_the_process_that_suspended_exited(model, database_url, storage, tmp_path):
    effects = tmp_path / "effects.log"
    model.chat.push(tool_calls(call("delete-record", {"id": "42"}, id="call_restart")), reply("Deleted after restart."))

    started = await run_process("suspend-approval", env=process_env(database_url, effects))
    assert started["finish_reason"] == "suspended"
    assert started["tool_call_id"] == "call_restart"
    assert not effects.exists()

    agent = build_agent(storage, str(effects))  # a fresh agent, as after a restart
    page = await agent.list_suspended_runs()
    assert [r.run_id for r in page.runs] == [started["run_id"]]
    assert page.runs[0].tool_calls[0].args == {"id": "42"}

    chunks = await decide(agent.approve_tool_call(run_id=started["run_id"], tool_call_id="call_restart"))

    assert effects.read_text().count("deleted 42") == 1
    assert one(chunks, "tool-result").payload["result"] == {"deleted": True, "id": "42"}
    assert text_of(chunks) == "Deleted after restart."
    assert finish_reason(chunks) == "stop"
    assert "deleted" in tool_messages(model.chat.requests[-1])["call_restart"]
    assert await run_status(storage, started["run_id"]) == "completed"


async def test_resume_after_restart(model, database_url, storage, tmp_path):
    effects = tmp_path / "effects.log"
    model.chat.push(tool_calls(call("ask-city", {}, id="call_ask")), reply("Paris it is."))

    started = await run_process("suspend-ask", env=process_env(database_url, effects))
    assert started["finish_reason"] == "suspended"

    agent = build_agent(storage, str(effects))
    [run] = (await agent.list_suspended_runs()).runs
    assert run.tool_calls[0].suspend_payload == {"question": "Which city?"}
    output = await agent.resume_generate({"city": "Paris"}, run_id=started["run_id"], tool_call_id="call_ask")

    assert output.finish_reason == "stop"
    assert output.text == "Paris it is."
    assert effects.read_text().count("city Paris") == 1
    assert "Which city?" in tool_messages(model.chat.requests[-1])["call_ask"]


async def test_decline_after_restart(model, database_url, storage, tmp_path):
    effects = tmp_path / "effects.log"
    model.chat.push(tool_calls(call("delete-record", {"id": "42"}, id="call_d")), reply("Kept it."))

    started = await run_process("suspend-approval", env=process_env(database_url, effects))
    agent = build_agent(storage, str(effects))
    output = await agent.decline_tool_call_generate(run_id=started["run_id"], reason="not today")

    assert output.text == "Kept it."
    assert not effects.exists()
    assert "not today" in tool_messages(model.chat.requests[-1])["call_d"]


async def test_two_processes_racing_to_approve_run_the_tool_once(model, database_url, storage, tmp_path):
    rounds = 3
    for round_number in range(rounds):
        effects = tmp_path / f"effects-{round_number}.log"
        barrier = tmp_path / f"barrier-{round_number}"
        barrier.mkdir()
        env = process_env(database_url, effects)
        # Round 0: the tool is instant; later rounds: it is slow, so the loser arrives mid-run.
        env["TOOL_SECONDS"] = "0" if round_number == 0 else "0.5"
        model.chat.push(tool_calls(call("delete-record", {"id": "42"}, id=f"call_race_{round_number}")))
        started = await run_process("suspend-approval", env=env)
        assert started["finish_reason"] == "suspended"
        model.chat.push(reply("Deleted once."))

        args = ("approve", started["run_id"], started["tool_call_id"], str(barrier), "2")
        outcomes = await asyncio.gather(run_process(*args, env=env), run_process(*args, env=env))

        lines = effects.read_text().splitlines()
        assert len(lines) == 1, f"round {round_number}: the tool ran {len(lines)} times: {lines}"
        assert sorted(o["outcome"] for o in outcomes) == ["approved", "not_suspended"], outcomes
        winner = next(o for o in outcomes if o["outcome"] == "approved")
        assert winner["finish_reason"] == "stop"
        assert await run_status(storage, started["run_id"]) == "completed"
    assert model.unexpected == []


async def test_second_process_cannot_approve_a_decided_call(model, database_url, storage, tmp_path):
    effects = tmp_path / "effects.log"
    env = process_env(database_url, effects)
    model.chat.push(tool_calls(call("delete-record", {"id": "42"}, id="call_once")), reply("Deleted."))
    started = await run_process("suspend-approval", env=env)

    agent = build_agent(storage, str(effects))
    await decide(agent.approve_tool_call(run_id=started["run_id"], tool_call_id="call_once"))
    late = await run_process("approve", started["run_id"], "call_once", env=env)

    assert late["outcome"] == "not_suspended"
    assert effects.read_text().count("deleted 42") == 1
    try:
        await decide(agent.approve_tool_call(run_id=started["run_id"], tool_call_id="call_once"))
    except ToolCallNotSuspendedError:
        pass
    else:
        raise AssertionError("a decided call was approved again")


async def test_another_process_approves_while_the_stream_is_still_open(model, database_url, storage, tmp_path):
    """Guarantee 1 across processes: when the approval chunk is yielded, the suspension is already
    committed, and nothing the open stream holds (a transaction, a lock) blocks another process."""
    effects = tmp_path / "effects.log"
    env = process_env(database_url, effects)
    agent = build_agent(storage, str(effects))
    model.chat.push(tool_calls(call("delete-record", {"id": "42"}, id="call_open")), reply("Deleted elsewhere."))

    stream = await agent.stream("Delete record 42")
    outcome = None
    async for chunk in stream.full_stream:
        if chunk.type == "tool-call-approval":
            outcome = await run_process("approve", stream.run_id, "call_open", env=env, timeout=60)

    assert outcome == {"outcome": "approved", "finish_reason": "stop"}
    assert effects.read_text().count("deleted 42") == 1
    assert (await stream.result()).finish_reason == "suspended"
    assert await run_status(storage, stream.run_id) == "completed"


async def test_a_disable_from_another_process_between_the_approval_and_the_start_wins(
    model, database_url, storage, tmp_path, monkeypatch
):
    """Issue 17, with real processes: one process approves a call and stops right before the started mark;
    meanwhile `python -m bot policy set ... --mode disabled`, another process, commits; then the first
    goes on. The tool does not run, the model is told, and the audit trail says `blocked`."""
    effects = tmp_path / "effects.log"
    monkeypatch.setenv("EFFECTS", str(effects))
    gate = tmp_path / "gate"
    model.chat.push(tool_calls(call("delete-record", {"id": "5"}, id="call_del")), reply("It is disabled now."))
    started = await run("start", "Delete record 5", database_url=database_url)
    assert started["waiting"] == ["call_del"]

    approving = await spawn("approve", started["run_id"], "call_del", database_url=database_url,
                            PAUSE_BEFORE_TOOL=str(gate))  # fmt: skip
    try:
        deadline = asyncio.get_running_loop().time() + 60
        while not (tmp_path / "gate.reached").exists():  # decided; its tool has not started
            assert approving.returncode is None and asyncio.get_running_loop().time() < deadline
            await asyncio.sleep(0.05)
        code, _, err = await bot_command(
            "policy", "set", "delete-record", "--mode", "disabled", database_url=database_url
        )
        assert code == 0, err
        gate.touch()
        out, err = await asyncio.wait_for(approving.communicate(), 60)
    finally:
        if approving.returncode is None:
            approving.kill()
            await approving.wait()
    assert approving.returncode == 0, err.decode()[-3000:]
    assert json.loads(out.decode().strip().splitlines()[-1])["finish_reason"] == "stop"
    assert lines(effects, "started") == []
    assert "disabled by an admin" in str(model.chat.requests[-1]["messages"][-1]["content"])
    entries = await storage.audit_log.entries(run_id=started["run_id"])
    assert [e.action for e in entries] == ["requested", "approved", "blocked"]
