"""`--agent module:attr` names an Agent (or a function that builds one)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys

import pytest

from bot.agent import Agent
from bot.cli import AgentNotFoundError, build_parser, load_agent

agent = Agent(id="named-agent", model="openai/test-model")
not_an_agent = 42


def make_agent() -> Agent:
    return Agent(id="built-agent", model="openai/test-model")


def test_an_agent_attribute_is_used_as_is():
    assert load_agent(f"{__name__}:agent") is agent


def test_a_factory_is_called():
    assert load_agent(f"{__name__}:make_agent").id == "built-agent"


@pytest.mark.parametrize(
    ("spec", "says"),
    [
        ("no_colon", "expected module:attribute"),
        ("no.such.module:agent", "cannot import"),
        (f"{__name__}:not_an_agent", "is not an Agent"),
        (f"{__name__}:missing", "is not an Agent"),
    ],
)
def test_a_bad_spec_says_what_is_wrong(spec, says):
    with pytest.raises(AgentNotFoundError, match=says):
        load_agent(spec)


def test_command_line_options():
    options = build_parser().parse_args(["serve", "--agent", "pkg:agent", "--port", "8080"])
    assert (options.command, options.agent, options.port) == ("serve", "pkg:agent", 8080)
    assert build_parser().parse_args(["serve"]).port == 3000
    assert build_parser().parse_args(["socket"]).agent is None


COUNTED_AGENT = """
import os
from bot.agent import Agent

def build():
    with open(os.environ["FACTORY_CALLS"], "a", encoding="utf-8") as calls:
        calls.write("built\\n")
    return Agent(id="counted-agent", model="openai/test-model")
"""


def _run_bot(tmp_path, *args: str) -> subprocess.CompletedProcess:
    (tmp_path / "counted_agent.py").write_text(COUNTED_AGENT)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLACK_", "OPENAI_", "DATABASE_URL", "BOT_"))}
    env |= {
        "PYTHONPATH": os.pathsep.join([str(tmp_path), env.get("PYTHONPATH", "")]),
        "FACTORY_CALLS": str(tmp_path / "calls.txt"),
        "DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path}/bot.db",
        "SLACK_BOT_TOKEN": "xoxb-1",
        "SLACK_SIGNING_SECRET": "s",
        "OPENAI_API_KEY": "k",
        "OPENAI_BASE_URL": "http://127.0.0.1:9/v1",
    }
    return subprocess.run(
        [sys.executable, "-m", "bot", *args], env=env, capture_output=True, text=True, timeout=60, check=False
    )


def test_a_factory_runs_once_for_an_admin_command(tmp_path):
    done = _run_bot(tmp_path, "policy", "list", "--agent", "counted_agent:build")
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "calls.txt").read_text().splitlines() == ["built"]


def test_a_factory_runs_once_when_the_bot_serves(tmp_path):
    """`serve` checks the agent before it connects anything and then runs that same agent: its factory's
    side effects happen once (here the start then fails on a port in use, after the agent was built)."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = _run_bot(tmp_path, "serve", "--agent", "counted_agent:build", "--host", "127.0.0.1", "--port", str(port))
    assert done.returncode == 1 and "in use" in done.stderr, done.stderr
    assert (tmp_path / "calls.txt").read_text().splitlines() == ["built"]
