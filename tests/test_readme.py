"""The README's Python blocks run as written, against the scripted model."""

import os
import re
import subprocess
import sys
from pathlib import Path

from tests.support.scripted_model import call, reply, structured, tool_calls

ROOT = Path(__file__).resolve().parents[1]


def block(marker: str) -> str:
    readme = (ROOT / "README.md").read_text()
    match = re.search(rf"<!-- {marker}:.*?-->\s*```python\n(.*?)```", readme, re.DOTALL)
    assert match, f"the README has no {marker} block"
    return match.group(1)


def run(script: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, str(script)], cwd=cwd, env=env, capture_output=True, text=True, timeout=60)


def test_quick_start_runs_as_written(model, tmp_path):
    model.chat.push(tool_calls(call("delete-record", {"id": "42"}, id="call_1")), reply("Record 42 is deleted."))
    script = tmp_path / "quickstart.py"
    script.write_text(block("quick-start"))
    done = run(script, tmp_path)
    assert done.returncode == 0, done.stderr
    assert "waiting for approval: delete-record {'id': '42'}" in done.stdout
    assert "Record 42 is deleted." in done.stdout
    assert model.unexpected == []


ASKING_AGENT = """
import asyncio

from bot.agent import Agent
from memory import Memory, Storage
from tools import create_tool

{block}

async def main():
    storage = Storage("sqlite+aiosqlite:///asks.db")
    agent = Agent(id="weather-agent", instructions="Tell the weather.", model="openai/test", tools=[weather],
                  memory=Memory(storage), default_options={{"auto_resume_suspended_tools": True}})
    asked = await agent.generate("天気は？", thread_id="t1", resource_id="U1")
    print("asked:", asked.finish_reason, asked.suspend_payload.payload["question"])
    answered = await agent.generate("東京にいます", thread_id="t1", resource_id="U1")
    print("resumed:", answered.run_id == asked.run_id, answered.tool_results[0]["result"])
    print("answer:", answered.text)
    await storage.close()


asyncio.run(main())
"""


def test_the_tool_that_asks_is_answered_in_the_next_message(model, tmp_path):
    model.chat.push(tool_calls(call("get-weather", {}, id="call_w")), reply("東京は晴れ、21°C です。"))
    model.structured.push(structured({"city": "東京"}))
    script = tmp_path / "asks.py"
    script.write_text(ASKING_AGENT.format(block=block("tool-that-asks")))
    done = run(script, tmp_path)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "asked: suspended Which city?"
    assert lines[1] == "resumed: True {'city': '東京', 'forecast': 'sunny, 21°C'}"
    assert lines[2] == "answer: 東京は晴れ、21°C です。"
    assert model.unexpected == []
