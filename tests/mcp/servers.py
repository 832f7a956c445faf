"""The example MCP server (examples/mcp/server.py) as the tests start it: over stdio (the bot starts
it) or over Streamable HTTP (a process of its own on a free port)."""

from __future__ import annotations

import asyncio
import json
import sys
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aiohttp

from bot.mcp import McpServerConfig, connect_mcp_servers, load_mcp_config
from tests.support.processes import free_port
from tools import AgentToolContext, ToolContext

ROOT = Path(__file__).resolve().parents[2]
SERVER = ROOT / "examples" / "mcp" / "server.py"


def stdio_entry(**extra: Any) -> dict[str, Any]:
    return {"command": sys.executable, "args": [str(SERVER), "--test-tools"], **extra}


def write_config(path: Path, servers: dict[str, dict[str, Any]]) -> Path:
    path.write_text(json.dumps({"mcpServers": servers}), encoding="utf-8")
    return path


def configs(tmp_path: Path, servers: dict[str, dict[str, Any]], environ: dict[str, str] | None = None):
    return load_mcp_config(write_config(tmp_path / "servers.json", servers), environ or {})


@asynccontextmanager
async def connected(server_configs: list[McpServerConfig], **options: Any) -> AsyncIterator[Any]:
    servers = await connect_mcp_servers(server_configs, **options)
    try:
        yield servers
    finally:
        await servers.aclose()


@asynccontextmanager
async def http_server(port: int | None = None) -> AsyncIterator[str]:
    """The example server over Streamable HTTP (on `port`, or a free one); yields its URL."""
    port = port or free_port()
    process = await asyncio.create_subprocess_exec(
        sys.executable, str(SERVER), "--test-tools", "--http", str(port),
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL,
    )  # fmt: skip
    try:
        url = f"http://127.0.0.1:{port}/mcp"
        async with aiohttp.ClientSession() as http:
            for _ in range(300):  # until it answers HTTP (well under a second on an idle machine)
                try:
                    async with http.get(url, timeout=aiohttp.ClientTimeout(total=5)):
                        break
                except (OSError, aiohttp.ClientError, TimeoutError):
                    if process.returncode is not None:
                        raise RuntimeError("the example MCP server exited at start") from None
                    await asyncio.sleep(0.1)
        yield url
    finally:
        if process.returncode is None:
            process.terminate()
        await process.wait()


def context() -> ToolContext:
    """The context of a call made outside a run (a test that calls a tool itself)."""
    return ToolContext(
        run_id="test", tool_call_id=uuid.uuid4().hex, thread_id=None, resource_id=None, request_context={},
        agent=AgentToolContext(None),
    )  # fmt: skip


TITLE = "打印机着火了 · Drucker brennt · プリンター"
"""The title of a ticket the example server lists (Chinese, German, Japanese)."""


async def titles(mcp_servers) -> list[str]:
    tools = {t.id: t for t in mcp_servers.tools}
    return [t["title"] for t in await tools["tickets__list_tickets"].execute({}, context())]


@asynccontextmanager
async def demo_bot_with(servers: Any, *, database_url: str, slack: Any, clock: Any = None) -> AsyncIterator[Any]:
    """The bot running the demo agent with the tools of `servers` added, on `database_url`."""
    from bot.assemble import add_tools
    from bot.demo import build_demo_agent
    from tests.slack.harness import MODEL, running_bot

    def agent(storage: Any) -> Any:
        built = build_demo_agent(storage, model=MODEL)
        add_tools(built, servers.tools)
        return built

    timing = {} if clock is None else {"clock": clock}
    async with running_bot(database_url=database_url, slack=slack, agent_factory=agent, **timing) as running:
        yield running
