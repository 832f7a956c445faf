"""The README's replicas example runs as written: the Procfile's two `serve` commands with the settings of
`replicas.env`, on one PostgreSQL database; a mention sent to one replica is approved through the other."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

from tests.support.processes import SECRET, bot_env, free_port, stop_bot, wait_until_healthy
from tests.support.scripted_model import call, reply, tool_calls
from tests.support.slack import SignedSender

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "replicas"


def procfile() -> dict[str, list[str]]:
    lines = (EXAMPLE / "Procfile").read_text().splitlines()
    return {name: command.split() for name, command in (line.split(": ", 1) for line in lines if line.strip())}


def env_file() -> dict[str, str]:
    lines = (EXAMPLE / "replicas.env").read_text().splitlines()
    return dict(line.split("=", 1) for line in lines if line.strip() and not line.startswith("#"))


async def start(command: list[str], port: int, env: dict[str, str], log: Path) -> asyncio.subprocess.Process:
    assert command[:4] == ["python", "-m", "bot", "serve"], command
    args = [sys.executable, *command[1:]]
    args[args.index("--port") + 1] = str(port)  # the example's 3001/3002 may be taken here
    args[args.index("--host") + 1] = "127.0.0.1"
    with log.open("ab") as out:
        process = await asyncio.create_subprocess_exec(*args, env=env, stdout=out, stderr=out)
    await wait_until_healthy(process, port, log)
    return process


async def test_the_procfile_runs_two_replicas_that_share_one_database(database_url, slack, model, tmp_path):
    if not database_url.startswith("postgresql"):
        pytest.skip("the replicas example is on PostgreSQL")
    settings = env_file()
    assert settings["DATABASE_URL"].startswith("postgresql+asyncpg://")
    env = bot_env(database_url, slack, **{k: v for k, v in settings.items() if k != "DATABASE_URL"})
    commands = procfile()
    assert sorted(commands) == ["bot1", "bot2"]
    model.chat.push(tool_calls(call("delete-record", {"id": 2}, id="call_1")), reply("Record 2 is deleted."))
    ports = {name: free_port() for name in commands}
    replicas = [await start(commands[name], ports[name], env, tmp_path / f"{name}.log") for name in commands]
    try:
        first = SignedSender(f"http://127.0.0.1:{ports['bot1']}/slack/events", SECRET, slack=slack)
        second = SignedSender(f"http://127.0.0.1:{ports['bot2']}/slack/events", SECRET, slack=slack)
        assert (await first.event(first.mention("delete record 2")))[0] == 200
        posted = await slack.wait_for(
            "chat.postMessage", lambda c: "tool_approve" in str(c.params.get("blocks")), timeout=60
        )
        message = slack.posted_by(posted[0])
        assert (await second.click(message, "tool_approve", user="U2"))[0] == 200
        stops = await slack.wait_for("chat.stopStream", timeout=60)
        assert slack.message("C1", stops[-1].params["ts"]).text == "Record 2 is deleted."
        assert message.action_ids() == []
    finally:
        for replica in replicas:
            await stop_bot(replica)
    assert '"level": "INFO"' in (tmp_path / "bot1.log").read_text()  # BOT_LOG_FORMAT=json was read
