"""Guarantee 6 for a live MCP question: the process that holds it keeps its lease while it waits; killed
(SIGKILL, a real process), the call is interrupted: listed again as an approval that says it may or may
not have taken effect, an answer stored meanwhile is not carried out, and nothing runs on its own."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys

import pytest

from bot.mcp import connect_mcp_servers
from memory import Storage
from tests.support.scripted_model import call, tool_calls
from tests.support.waiting import until

from .holder_process import build_agent
from .servers import ROOT, TITLE, configs, stdio_entry, write_config


@pytest.mark.parametrize("answered_meanwhile", [False, True], ids=["unanswered", "answered-meanwhile"])
async def test_a_killed_holder_leaves_an_interrupted_call_and_nothing_runs_on_its_own(
    tmp_path, database_url, model, answered_meanwhile
):
    model.chat.push(tool_calls(call("tickets__open_ticket", {"title": TITLE}, id="call_1")))
    config = write_config(tmp_path / "servers.json", {"tickets": stdio_entry()})
    holder = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "tests.mcp.holder_process", cwd=ROOT,
        env={**os.environ, "DATABASE_URL": database_url, "MCP_CONFIG": str(config), "PYTHONPATH": str(ROOT)},
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    storage = Storage(database_url)
    servers = await connect_mcp_servers(configs(tmp_path, {"tickets": stdio_entry()}))
    try:
        line = await asyncio.wait_for(holder.stdout.readline(), 60)
        assert line, (await holder.stderr.read()).decode()[-3000:]
        ids = json.loads(line)
        survivor = build_agent(storage, servers.tools)
        record = await survivor.get_tool_call(ids["run_id"], ids["tool_call_id"])
        assert record.state == "suspended" and "Choose its priority" in record.suspend_payload["message"]

        # alive, the holder keeps the lease of the waiting call: nobody takes the run over
        first_beat = (await storage.runs.get_run(ids["run_id"])).heartbeat_at

        async def beaten():
            return (await storage.runs.get_run(ids["run_id"])).heartbeat_at > first_beat

        await until(beaten, 15.0, every=0.1, what="the holder's heartbeat")
        assert await survivor.recover_stale_runs(stale_after=2.0) == []

        holder.send_signal(signal.SIGKILL)
        assert await holder.wait() == -signal.SIGKILL
        if answered_meanwhile:  # stored through another process, handed to the holder, which is gone
            handed = await survivor.resume_generate({"priority": "high", "confirm": True}, **ids)
            assert handed.text == "" and handed.tool_results == []

        async def recovered():
            return await survivor.recover_stale_runs(stale_after=1.0)

        assert await until(recovered, 15.0, every=0.1, what="the recovery") == [ids["run_id"]]
        record = await survivor.get_tool_call(ids["run_id"], ids["tool_call_id"])
        assert record.state == "awaiting_approval" and record.requires_approval
        assert record.suspend_payload["interrupted"] is True
        assert "may or may not have taken effect" in record.suspend_payload["message"]
        assert "Choose its priority" in record.suspend_payload["suspended_with"]["message"]
        (run,) = (await survivor.list_suspended_runs()).runs
        assert [c.tool_call_id for c in run.tool_calls] == [ids["tool_call_id"]]
        assert len(model.chat.requests) == 1  # the model was not told anything: nothing ran on its own

        # approving runs it again, from the start: the server asks its question anew, held here now
        again = await survivor.approve_tool_call_generate(**ids)
        assert again.finish_reason == "suspended"
        assert "Choose its priority" in again.suspend_payload.payload["message"]
    finally:
        if holder.returncode is None:
            holder.kill()
            await holder.wait()
        await servers.aclose()
        await storage.close()
