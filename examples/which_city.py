"""The "which city?" conversation, end to end.

A weather tool that does not know the city calls `suspend()` to ask; the user answers in the next
message of the same thread; auto-resume reads that message as the answer and the very run that asked
picks up where it stopped. A message in between that does not answer is an ordinary turn, and the
call keeps waiting.

    OPENAI_API_KEY=... python examples/which_city.py
    OPENAI_BASE_URL=http://localhost:8000/v1 OPENAI_API_KEY=x BOT_MODEL=openai/my-model python examples/which_city.py
    python examples/which_city.py "Weather for the weekend?" "Lisbon"     # your own messages

Environment: OPENAI_API_KEY / OPENAI_BASE_URL (any OpenAI-compatible server), BOT_MODEL (default
openai/gpt-5-mini), DATABASE_URL (default: a SQLite file in a temporary directory).
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing

from bot.agent import Agent
from bot.defaults import DEFAULT_MODEL
from memory import Memory, Storage
from tools import create_tool

CONVERSATION = [
    "What's the weather tomorrow?",
    "By the way, what can you do?",
    "Paris, please.",
]
THREAD_ID, RESOURCE_ID = "which-city-demo", "U_DEMO"

FORECASTS = {"paris": "sunny, 21°C", "london": "light rain, 14°C", "lisbon": "clear, 24°C"}


async def get_weather(input, ctx):
    """Ask which city the first time; answer with the forecast once the user said it."""
    if ctx.agent.resume_data is None:
        return await ctx.agent.suspend({"question": "Which city?"})
    city = ctx.agent.resume_data["city"]
    return {"city": city, "when": input.get("when", "today"), "forecast": FORECASTS.get(city.lower(), "mild, 18°C")}


weather = create_tool(
    id="get-weather",
    description="The weather forecast. Call it without a city: it asks the user which city they mean.",
    input_schema={"type": "object", "properties": {"when": {"type": "string", "description": "e.g. today, tomorrow"}}},
    suspend_schema={"type": "object", "properties": {"question": {"type": "string"}}, "required": ["question"]},
    resume_schema={
        "type": "object",
        "properties": {"city": {"type": "string", "description": "The city the user named"}},
        "required": ["city"],
        "additionalProperties": False,
    },
    execute=get_weather,
)


def say(who: str, text: str) -> None:
    print(f"{who:>5}> {text}", flush=True)


async def main(messages: list[str]) -> None:
    database_url = os.environ.get("DATABASE_URL")
    if not database_url:
        database_url = f"sqlite+aiosqlite:///{tempfile.mkdtemp(prefix='which-city-')}/bot.db"
    storage = Storage(database_url)
    agent = Agent(
        id="weather-agent",
        name="Weather Agent",
        instructions="You tell people the weather. Use get-weather; keep answers short.",
        model=os.environ.get("BOT_MODEL", DEFAULT_MODEL),
        tools=[weather],
        memory=Memory(storage),
        default_options={"auto_resume_suspended_tools": True},
    )
    waiting_run: str | None = None
    try:
        for message in messages:
            say("user", message)
            output = await agent.generate(message, thread_id=THREAD_ID, resource_id=RESOURCE_ID)
            if output.run_id == waiting_run:
                say("bot", f"(the run that asked resumes: {output.run_id[:8]})")
                for result in output.tool_results:
                    say("bot", f"[{result['tool_name']} -> {result['result']}]")
                waiting_run = None
            if output.text:
                say("bot", output.text)
            if output.finish_reason == "suspended" and output.suspend_payload is not None:
                asked = output.suspend_payload
                question = (asked.payload or {}).get("question", asked.payload)
                say("bot", f"[{asked.tool_name} asks] {question}")
                waiting_run = output.run_id
            elif output.finish_reason == "error":
                say("bot", f"(error: {output.error})")
        still = await agent.list_suspended_runs(thread_id=THREAD_ID)
        print(f"\nstill waiting in the thread: {still.total}")
    finally:
        await storage.close()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:] or CONVERSATION))
