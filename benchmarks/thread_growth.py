"""Does the cost of a turn grow with the thread? (issue 3, guarantee 5)

For threads of 5, 50 and 500 prior turns, built through the real agent on SQLite with the scripted
OpenAI-compatible server answering, it runs the "which city?" exchange at the end of the thread:

    turn N+1  "What's the weather tomorrow?"  -> get-weather suspends ("Which city?")
    turn N+2  "hello, are you there?"         -> extraction says "none": a normal turn
    turn N+3  "Paris"                         -> extraction answers the parked call: the run resumes
    turn N+4  "thanks"                        -> a plain turn

and measures, side by side:

- extraction bytes: the JSON body of the structured-output request the server received at turn N+3
  (the request that reads "Paris" as the answer);
- stored bytes, which-city run: `storage.runs.stored_bytes(run_id)` of the run that asked and resumed
  (its row, messages and tool calls);
- stored bytes, plain turn: the same for the run of turn N+4;
- chat request bytes: the JSON body of the last chat request (the bounded window), for context.

Each is reported as a ratio to the 5-turn thread; the script exits 1 if any ratio is outside 0.9-1.1.

    python benchmarks/thread_growth.py                  # 5, 50, 500
    python benchmarks/thread_growth.py --turns 5 50 500 2000 --database-url postgresql+asyncpg://...
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.support.scripted_model import ScriptedModel, call, reply, structured, tool_calls  # noqa: E402

TOLERANCE = 0.10


def weather_tool():
    from tools import create_tool

    async def execute(input, ctx):
        if ctx.agent.resume_data is None:
            return await ctx.agent.suspend({"question": "Which city?"})
        return {"city": ctx.agent.resume_data["city"], "forecast": "sunny"}

    return create_tool(
        id="get-weather",
        description="Weather forecast; asks which city",
        input_schema={"type": "object", "properties": {"when": {"type": "string"}}},
        suspend_schema={"type": "object", "properties": {"question": {"type": "string"}}, "required": ["question"]},
        resume_schema={
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
            "additionalProperties": False,
        },
        execute=execute,
    )


def body_bytes(body: dict) -> int:
    return len(json.dumps(body, ensure_ascii=False).encode())


async def measure(model: ScriptedModel, turns: int, database_url: str) -> dict:
    from bot.agent import Agent
    from memory import Memory, Storage

    storage = Storage(database_url)
    try:
        agent = Agent(
            id="bench-agent",
            instructions="You are a weather bot.",
            model="openai/bench-model",
            tools=[weather_tool()],
            memory=Memory(storage),
            default_options={"auto_resume_suspended_tools": True},
        )
        thread = {"thread_id": f"bench-thread-{turns:06d}", "resource_id": "U_BENCH"}

        started = time.monotonic()
        for turn in range(turns):  # the prior turns: same sizes whatever the thread length
            model.chat.push(reply(f"reply number {turn:06d}: " + "lorem ipsum " * 8))
            await agent.generate(f"message number {turn:06d}: " + "dolor sit amet " * 6, **thread)
        built = time.monotonic() - started

        model.chat.push(tool_calls(call("get-weather", {"when": "tomorrow"}, id="call_city")))
        asked = await agent.generate("What's the weather tomorrow?", **thread)
        assert asked.finish_reason == "suspended", asked

        model.structured.push(structured({"city": None}))
        model.chat.push(reply("Hello! Which city should I look up?"))
        unrelated = await agent.generate("hello, are you there?", **thread)
        assert unrelated.run_id != asked.run_id

        model.structured.push(structured({"city": "Paris"}))
        model.chat.push(reply("Tomorrow in Paris: sunny."))
        resumed = await agent.generate("Paris", **thread)
        assert resumed.run_id == asked.run_id and resumed.text == "Tomorrow in Paris: sunny.", resumed
        extraction = model.structured.requests[-1]

        model.chat.push(reply("You're welcome."))
        plain = await agent.generate("thanks", **thread)
        assert model.unexpected == [], "the scripted model ran out of answers"

        return {
            "turns": turns,
            "extraction_bytes": body_bytes(extraction),
            "stored_bytes_which_city_run": await storage.runs.stored_bytes(asked.run_id),
            "stored_bytes_plain_turn": await storage.runs.stored_bytes(plain.run_id),
            "chat_request_bytes": body_bytes(model.chat.requests[-1]),
            "thread_messages": len(await agent.memory.messages(thread["thread_id"])),
            "build_seconds": round(built, 1),
            "extraction_body": extraction,
        }
    finally:
        await storage.close()


COLUMNS = [
    ("extraction_bytes", "extraction request (bytes)"),
    ("stored_bytes_which_city_run", "stored, which-city run (bytes)"),
    ("stored_bytes_plain_turn", "stored, plain turn (bytes)"),
    ("chat_request_bytes", "chat request (bytes)"),
]


def table(results: list[dict]) -> str:
    base = results[0]
    header = "| prior turns | messages in thread | " + " | ".join(title for _, title in COLUMNS) + " |"
    lines = [header, "|" + "---|" * (2 + len(COLUMNS))]
    for row in results:
        cells = [f"{row[key]} ({row[key] / base[key]:.3f}x)" for key, _ in COLUMNS]
        lines.append(f"| {row['turns']} | {row['thread_messages']} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--turns", type=int, nargs="+", default=[5, 50, 500])
    parser.add_argument(
        "--database-url",
        help="one database for all sizes (each size uses its own thread); default: a fresh SQLite file per size",
    )
    parser.add_argument(
        "--show-request", action="store_true", help="print the extraction request body of the largest thread"
    )
    args = parser.parse_args()

    results = []
    with ScriptedModel() as model, tempfile.TemporaryDirectory(prefix="thread-growth-") as directory:
        os.environ["OPENAI_BASE_URL"] = model.base_url
        os.environ["OPENAI_API_KEY"] = "benchmark"
        for turns in sorted(args.turns):
            url = args.database_url or f"sqlite+aiosqlite:///{directory}/bench-{turns}.db"
            results.append(await measure(model, turns, url))
            print(f"  {turns} turns measured (thread built in {results[-1]['build_seconds']}s)", file=sys.stderr)

    print(table(results))
    if args.show_request:
        print("\nextraction request body at", results[-1]["turns"], "turns:")
        print(json.dumps(results[-1]["extraction_body"], indent=2, ensure_ascii=False))
    base = results[0]
    flat = all(
        abs(row[key] / base[key] - 1) <= TOLERANCE
        for row in results
        for key, _ in COLUMNS
        if key != "chat_request_bytes"
    )
    print(f"\nflat within {TOLERANCE:.0%}: {'yes' if flat else 'NO'}")
    return 0 if flat else 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
