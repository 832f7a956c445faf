"""A bot process that holds an MCP server's question and is then killed, for test_killed_holder:
`python -m tests.mcp.holder_process` with DATABASE_URL, MCP_CONFIG and OPENAI_BASE_URL/OPENAI_API_KEY.

It asks the scripted model, approves the MCP call the model makes, and once the server's question is
stored prints one JSON line (`run_id`, `tool_call_id`) and waits, holding the call, until it is killed."""

from __future__ import annotations

import asyncio
import json
import os

from bot.agent import Agent
from bot.mcp import connect_mcp_servers, load_mcp_config
from memory import Storage

AGENT_ID = "mcp-holder"
MODEL = "openai/test-model"


def build_agent(storage: Storage, tools, **options) -> Agent:
    return Agent(id=AGENT_ID, model=MODEL, tools=tools, storage=storage, default_options=options)


async def main() -> None:
    storage = Storage(os.environ["DATABASE_URL"])
    servers = await connect_mcp_servers(load_mcp_config(os.environ["MCP_CONFIG"], {}))
    agent = build_agent(storage, servers.tools, heartbeat_interval=0.2)
    approval = await agent.generate("open a ticket")
    question = await agent.approve_tool_call_generate(run_id=approval.run_id)
    assert question.finish_reason == "suspended", question
    print(json.dumps({"run_id": question.run_id, "tool_call_id": question.suspend_payload.tool_call_id}), flush=True)
    await asyncio.Event().wait()


if __name__ == "__main__":
    asyncio.run(main())
