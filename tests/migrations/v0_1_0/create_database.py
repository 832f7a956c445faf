"""Run BY THE v0.1.0 CODE (`make_fixtures.py` puts an archive of tag v0.1.0 first on PYTHONPATH):
make the database at URL the way a bot of that release left it, with one approval waiting.

    python create_database.py URL

What it leaves: the runtime's tables with a run in thread `slack:T1:C1:1700000000.000100` (resource
U1) whose call `delete-record` {"id": "42"} (tool call id `call_v010`) waits for approval; the
Slack adapter's conversation row for that thread; the demo's five seeded records.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

AGENT_ID = "upgrade-agent"
THREAD_ID = "slack:T1:C1:1700000000.000100"
RESOURCE_ID = "U1"
TOOL_CALL_ID = "call_v010"


async def create(url: str) -> None:
    import memory
    from bot.agent import Agent
    from bot.demo import seed_demo_records
    from bot.slack.store import SlackStore
    from bot.slack.threads import SlackThread
    from memory import Memory, Storage
    from tests.support.scripted_model import ScriptedModel, call, tool_calls
    from tools import create_tool

    archive = Path(sys.path[1]).resolve()  # PYTHONPATH's first entry; sys.path[0] is this script's folder
    if not Path(memory.__file__).resolve().is_relative_to(archive):
        raise SystemExit(f"not running the v0.1.0 code: memory is {memory.__file__}, expected it under {archive}")

    async def delete_record(input, ctx):
        raise AssertionError("the tool must not run before it is approved")

    delete = create_tool(
        id="delete-record",
        description="Delete a record by ID",
        input_schema={"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]},
        require_approval=True,
        execute=delete_record,
    )
    with ScriptedModel() as model:
        model.chat.push(tool_calls(call("delete-record", {"id": "42"}, id=TOOL_CALL_ID)))
        import os

        os.environ["OPENAI_BASE_URL"] = model.base_url
        os.environ["OPENAI_API_KEY"] = "v0.1.0-fixture"
        storage = Storage(url)
        agent = Agent(
            id=AGENT_ID,
            name="Upgrade Agent",
            instructions="You delete records when asked.",
            model="openai/test-model",
            tools=[delete],
            memory=Memory(storage),
        )
        output = await agent.generate("Please delete record 42", thread_id=THREAD_ID, resource_id=RESOURCE_ID)
        assert output.finish_reason == "suspended", output
        await SlackStore(storage).start_conversation(
            SlackThread(team_id="T1", channel="C1", thread_ts="1700000000.000100"), RESOURCE_ID
        )
        await seed_demo_records(storage)
        await agent.aclose()
        await storage.close()
    print(f"v0.1.0 database with run {output.run_id} waiting for approval of {TOOL_CALL_ID}")


if __name__ == "__main__":
    asyncio.run(create(sys.argv[1]))
