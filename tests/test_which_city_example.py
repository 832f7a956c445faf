"""examples/which_city.py runs end to end against the scripted model, in its own process."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import pytest

from tests.support.scripted_model import call, reply, structured, tool_calls

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "which_city.py"


async def run_example(env: dict[str, str], *args: str) -> str:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        str(EXAMPLE),
        *args,
        cwd=ROOT / "examples",
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    stdout, stderr = await asyncio.wait_for(process.communicate(), 60)
    assert process.returncode == 0, stderr.decode()[-3000:]
    return stdout.decode()


@pytest.mark.both_databases
@pytest.mark.parametrize("with_database_url", [False, True], ids=["temporary-sqlite", "database-url"])
async def test_the_which_city_example(model, database_url, with_database_url):
    if not with_database_url and "postgresql" in database_url:
        pytest.skip("the default database of the example is a temporary SQLite file")
    model.chat.push(
        tool_calls(call("get-weather", {"when": "tomorrow"}, id="call_weather")),
        reply("I tell the weather. Which city did you mean for tomorrow?"),
        reply("Tomorrow in Paris: sunny, 21°C."),
    )
    model.structured.push(
        structured({"city": None}),
        structured({"city": "Paris"}),
    )
    env = dict(os.environ)  # OPENAI_BASE_URL / OPENAI_API_KEY from the `model` fixture
    env.pop("DATABASE_URL", None)
    env["PYTHONPATH"] = ""
    if with_database_url:
        env["DATABASE_URL"] = database_url

    out = await run_example(env)

    lines = [line.strip() for line in out.splitlines() if line.strip()]
    assert lines == [
        "user> What's the weather tomorrow?",
        "bot> [get-weather asks] Which city?",
        "user> By the way, what can you do?",
        "bot> I tell the weather. Which city did you mean for tomorrow?",
        "user> Paris, please.",
        lines[5],
        "bot> [get-weather -> {'city': 'Paris', 'when': 'tomorrow', 'forecast': 'sunny, 21°C'}]",
        "bot> Tomorrow in Paris: sunny, 21°C.",
        "still waiting in the thread: 0",
    ], out
    assert lines[5].startswith("bot> (the run that asked resumes:")
    assert model.unexpected == []
    # the answer was read by one structured request holding the question and the new message
    prompt = model.structured.requests[-1]["messages"][-1]["content"]
    assert prompt.startswith("Question: Which city?\nReply: Paris, please.\n")
    # the model was reminded of the open question during the unrelated turn
    reminder = [m["content"] for m in model.chat.requests[1]["messages"] if m["role"] == "system"]
    assert any("Which city?" in text for text in reminder)
