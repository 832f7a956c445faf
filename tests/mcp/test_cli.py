"""`python -m bot policy list|set --mcp FILE` (and BOT_MCP_CONFIG): MCP tools are listed with their
server and hints, their policies are set like any tool's, and a server that will not start is one line."""

from __future__ import annotations

import asyncio
import os
import sys

from .servers import stdio_entry, write_config


async def bot(*args: str, database_url: str, **env: str) -> tuple[int, str, str]:
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bot", *args, env={**os.environ, "DATABASE_URL": database_url, **env},
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await process.communicate()
    return process.returncode, out.decode(), err.decode()


async def test_policy_list_shows_mcp_tools_with_server_and_hints_and_names_a_server_that_failed(tmp_path):
    servers = {"tickets": stdio_entry(trust="read-only-hints"), "broken": {"command": str(tmp_path / "missing")}}
    path = write_config(tmp_path / "servers.json", servers)
    url = f"sqlite+aiosqlite:///{tmp_path}/bot.db"
    code, out, err = await bot("policy", "list", "--mcp", str(path), database_url=url)
    assert code == 0, err
    rows = {line.split()[0]: line for line in out.splitlines()[1:]}
    assert out.splitlines()[0].split()[-1] == "FROM"
    assert "MCP server tickets (destructive, idempotent, closed world)" in rows["tickets__close_ticket"]
    assert "MCP server tickets (read-only, closed world)" in rows["tickets__list_tickets"]
    assert rows["tickets__close_ticket"].split()[1] == "always" and rows["tickets__list_tickets"].split()[1] == "never"
    assert "delete-record" in rows  # the agent's own tools too
    assert [line for line in err.splitlines() if "'broken'" in line] == [
        line for line in err.splitlines() if "broken" in line
    ]
    assert len([line for line in err.splitlines() if "'broken'" in line]) == 1

    code, out, err = await bot(
        "policy", "set", "tickets__close_ticket", "--mode", "disabled", database_url=url, BOT_MCP_CONFIG=str(path)
    )
    assert code == 0, err
    assert out.startswith("tickets__close_ticket: mode disabled")

    code, out, err = await bot("policy", "set", "tickets__open_ticket", "--mode", "disabled", database_url=url)
    assert code == 2 and "unknown tool 'tickets__open_ticket'" in err  # without the servers file it is not a tool


async def test_a_bad_servers_file_is_one_line_and_exit_status_2(tmp_path):
    path = write_config(tmp_path / "servers.json", {"Bad Name": {"command": "x"}})
    code, out, err = await bot(
        "policy", "list", "--mcp", str(path), database_url=f"sqlite+aiosqlite:///{tmp_path}/b.db"
    )
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert code == 2 and len(errors) == 1 and "'Bad Name'" in errors[0]
