"""A tool that asks the user something with `suspend()`, resumed later, even after a restart.

`book-table` needs to know the time before it can book. It suspends with a question; the run is
stored. A second `Agent` on the same database (as a restarted process would build) finds the waiting
run with `list_suspended_runs` and resumes it with the answer, validated against `resume_schema`.

    OPENAI_API_KEY=... python examples/suspend_and_resume.py
"""

import asyncio
import os
import tempfile

from bot.agent import Agent, ResumeDataInvalidError
from bot.defaults import DEFAULT_MODEL
from memory import Storage
from tools import create_tool


async def book_table(input: dict, ctx) -> dict:
    if ctx.agent.resume_data is None:
        return await ctx.agent.suspend({"question": f"At what time should I book {input['restaurant']}?"})
    return {"booked": input["restaurant"], "time": ctx.agent.resume_data["time"]}


book_tool = create_tool(
    id="book-table",
    description="Book a table at a restaurant",
    input_schema={"type": "object", "properties": {"restaurant": {"type": "string"}}, "required": ["restaurant"]},
    suspend_schema={"type": "object", "properties": {"question": {"type": "string"}}, "required": ["question"]},
    resume_schema={
        "type": "object",
        "properties": {"time": {"type": "string", "pattern": "^[0-2][0-9]:[0-5][0-9]$"}},
        "required": ["time"],
    },
    execute=book_table,
)


def build_agent(storage: Storage) -> Agent:
    return Agent(
        id="booking-agent",
        name="Booking Agent",
        instructions="You book restaurant tables with book-table.",
        model=os.environ.get("BOT_MODEL", DEFAULT_MODEL),
        tools=[book_tool],
        storage=storage,
    )


async def main() -> None:
    database_url = os.environ.get("DATABASE_URL") or f"sqlite+aiosqlite:///{tempfile.mkdtemp()}/example.db"

    storage = Storage(database_url)
    try:
        output = await build_agent(storage).generate("Book a table at Chez Nous", resource_id="alice")
        print(f"{output.finish_reason}: {output.suspend_payload.payload['question']}")
    finally:
        await storage.close()

    # Later, in another process: nothing in memory, everything from the database.
    storage = Storage(database_url)
    try:
        agent = build_agent(storage)
        page = await agent.list_suspended_runs(resource_id="alice")
        run = page.runs[0]
        waiting = run.tool_calls[0]
        print(f"waiting runs: {page.total}; {waiting.tool_name} asks: {waiting.suspend_payload['question']}")

        try:
            await agent.resume_generate({"time": "half past seven"}, run_id=run.run_id)
        except ResumeDataInvalidError as error:
            print(f"rejected resume data: {error}")

        final = await agent.resume_generate({"time": "19:30"}, run_id=run.run_id, tool_call_id=waiting.tool_call_id)
        print(f"agent: {final.text}")
        print(f"finished: {final.finish_reason}")
    finally:
        await storage.close()


if __name__ == "__main__":
    asyncio.run(main())
