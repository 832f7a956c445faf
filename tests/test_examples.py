"""Every script in examples/ runs as a user would run it, against a scripted model."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.scripted_model import call, reply, tool_calls

ROOT = Path(__file__).resolve().parents[1]


def run_example(name: str, model, *, database_url: str | None = None) -> str:
    env = dict(os.environ)
    env.update(OPENAI_BASE_URL=model.base_url, OPENAI_API_KEY="test", BOT_MODEL="openai/test-model")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    env.pop("DATABASE_URL", None)
    if database_url is not None:
        env["DATABASE_URL"] = database_url
    completed = subprocess.run(
        [sys.executable, str(ROOT / "examples" / name)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert completed.returncode == 0, completed.stderr[-4000:]
    assert model.unexpected == [], "the example asked the model more than scripted"
    return completed.stdout


def test_every_example_is_run_by_some_test():
    test_sources = "".join(p.read_text() for p in (ROOT / "tests").rglob("test_*.py"))
    examples = [p.name for p in (ROOT / "examples").glob("*.py") if not p.name.startswith("_")]
    assert [name for name in examples if f'"{name}"' not in test_sources] == []


@pytest.mark.parametrize("use_database_url", [False, True], ids=["default-db", "DATABASE_URL"])
def test_approve_in_stream(model, tmp_path, use_database_url):
    model.chat.push(tool_calls(call("delete-record", {"id": "42"})), reply("Record 42 has been deleted."))

    out = run_example(
        "approve_in_stream.py",
        model,
        database_url=f"sqlite+aiosqlite:///{tmp_path}/db.db" if use_database_url else None,
    )

    assert out.splitlines() == [
        "approval requested: delete-record {'id': '42'}",
        "[tool] deleting record 42",
        "Record 42 has been deleted.",
        "finished: stop",
    ]
    if use_database_url:
        assert (tmp_path / "db.db").exists()
    assert "deleted" in [m for m in model.chat.requests[-1]["messages"] if m["role"] == "tool"][0]["content"]


def test_decline_with_reason(model):
    model.chat.push(tool_calls(call("delete-record", {"id": "42"})), reply("I left record 42 alone."))

    out = run_example("decline_with_reason.py", model)

    assert out.splitlines() == [
        "suspended: delete-record {'id': '42'} (approval: True)",
        "agent: I left record 42 alone.",
        "finished: stop",
    ]
    [tool_message] = [m for m in model.chat.requests[-1]["messages"] if m["role"] == "tool"]
    assert "record 42 is still referenced" in tool_message["content"]


def test_suspend_and_resume(model, tmp_path):
    model.chat.push(tool_calls(call("book-table", {"restaurant": "Chez Nous"})), reply("Booked Chez Nous at 19:30."))

    out = run_example("suspend_and_resume.py", model, database_url=f"sqlite+aiosqlite:///{tmp_path}/db.db")

    lines = out.splitlines()
    assert lines[0] == "suspended: At what time should I book Chez Nous?"
    assert lines[1] == "waiting runs: 1; book-table asks: At what time should I book Chez Nous?"
    assert lines[2].startswith("rejected resume data:") and "time" in lines[2]
    assert lines[3:] == ["agent: Booked Chez Nous at 19:30.", "finished: stop"]
    [tool_message] = [m for m in model.chat.requests[-1]["messages"] if m["role"] == "tool"]
    assert json.loads(tool_message["content"]) == {"booked": "Chez Nous", "time": "19:30"}


def test_conditional_approval(model):
    model.chat.push(
        tool_calls(call("transfer-money", {"amount": 20, "to": "Bob"})),
        reply("Sent 20 to Bob."),
        tool_calls(call("transfer-money", {"amount": 500, "to": "Bob"})),
        reply("Sent 500 to Bob."),
        tool_calls(call("get-record", {"id": "7"}), call("delete-record", {"id": "7"})),
        reply("Record 7 (Alice) is deleted."),
    )

    out = run_example("conditional_approval.py", model)

    assert out.splitlines() == [
        "> Send 20 to Bob",
        "[tool] transferring 20 to Bob",
        "agent: Sent 20 to Bob.",
        "> Send 500 to Bob",
        "approval needed: transfer-money {'amount': 500, 'to': 'Bob'}",
        "[tool] transferring 500 to Bob",
        "agent: Sent 500 to Bob.",
        "> Look up record 7, then delete it",
        "[tool] reading record 7",
        "approval needed: delete-record {'id': '7'}",
        "[tool] deleting record 7",
        "agent: Record 7 (Alice) is deleted.",
    ]
