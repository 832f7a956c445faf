"""A start that cannot succeed ends at once with one line on stderr that names the cause and the fix, and
no traceback; a start that succeeds says one line. Each case runs the real `python -m bot` process."""

from __future__ import annotations

import asyncio
import json
import os
import re
import socket
import sys
import time
from pathlib import Path

import aiohttp
import pytest

from bot.slack_emulator import SlackEmulator
from tests.support.processes import free_port
from tests.support.slack import slack_workspace


def startup_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLACK_", "OPENAI_", "DATABASE_URL", "BOT_"))}
    env.update(
        SLACK_BOT_TOKEN="xoxb-1",
        SLACK_SIGNING_SECRET="s",
        SLACK_APP_TOKEN="xapp-1",
        OPENAI_API_KEY="k",
        OPENAI_BASE_URL="http://127.0.0.1:9/v1",
        DATABASE_URL=f"sqlite+aiosqlite:///{tmp_path}/bot.db",
    )
    env.update(extra)
    return env


async def run_bot(*args: str, env: dict[str, str], timeout: float = 60) -> tuple[int, list[str], float]:
    """Run `python -m bot ARGS` to its end: exit code, stderr lines, seconds taken."""
    started = time.monotonic()
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bot", *args, env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    try:
        _, stderr = await asyncio.wait_for(process.communicate(), timeout)
    except TimeoutError:
        process.kill()
        await process.wait()
        raise AssertionError(f"python -m bot {' '.join(args)} did not stop within {timeout} s") from None
    return process.returncode, stderr.decode().splitlines(), time.monotonic() - started


def assert_one_error_line(lines: list[str], *words: str, after: str | None = None) -> None:
    """The only line is the error (or, with `after`, the one line that said `after` came first)."""
    if after is not None and lines and after in lines[0]:
        lines = lines[1:]
    assert len(lines) == 1, "\n".join(lines)
    assert lines[0].startswith("error: "), lines[0]
    for word in words:
        assert word in lines[0], lines[0]


async def test_serve_on_a_port_in_use(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        code, lines, _ = await run_bot("serve", "--host", "127.0.0.1", "--port", str(port), env=startup_env(tmp_path))
    assert code == 1
    assert_one_error_line(lines, f"port {port}", "in use", "--port")


async def test_serve_without_a_model_key(tmp_path):
    env = startup_env(tmp_path)
    del env["OPENAI_API_KEY"]
    code, lines, _ = await run_bot("serve", env=env)
    assert code == 2
    assert_one_error_line(lines, "OPENAI_API_KEY is not set")


@pytest.mark.parametrize(
    "url",
    [
        "not a url",
        "postgresql://postgres@127.0.0.1/db",  # not an async driver
        "sqlite+aiosqlite:///{tmp}/a-file/bot.db",  # its directory cannot be made
        "postgresql+asyncpg://postgres@127.0.0.1:{closed}/bot",
    ],
    ids=["unparsable", "sync-driver", "not-a-directory", "unreachable"],
)
async def test_serve_with_a_database_url_that_cannot_be_used(tmp_path, url):
    (tmp_path / "a-file").write_text("")
    url = url.format(tmp=tmp_path, closed=free_port())
    code, lines, _ = await run_bot("serve", "--port", str(free_port()), env=startup_env(tmp_path, DATABASE_URL=url))
    assert code == 1
    assert_one_error_line(lines, "DATABASE_URL", "set DATABASE_URL to")


async def test_dev_with_a_database_url_that_cannot_be_used(tmp_path):
    env = startup_env(tmp_path, DATABASE_URL=f"postgresql+asyncpg://postgres@127.0.0.1:{free_port()}/bot")
    code, lines, _ = await run_bot("dev", "--port", "0", env=env)
    assert code == 1
    assert_one_error_line(lines, "DATABASE_URL", "set DATABASE_URL to")


@pytest.mark.parametrize(
    ("source", "says"),
    [
        ("raise RuntimeError('no config file')", "importing 'broken_agent' failed: RuntimeError: no config file"),
        ("def agent():\n    raise KeyError('MODEL')", "broken_agent.agent() failed: KeyError"),
    ],
    ids=["import-fails", "factory-fails"],
)
async def test_an_agent_that_cannot_be_loaded(tmp_path, source, says):
    (tmp_path / "broken_agent.py").write_text(source + "\n")
    env = startup_env(tmp_path, PYTHONPATH=str(tmp_path))
    code, lines, _ = await run_bot("serve", "--agent", "broken_agent:agent", env=env)
    assert code == 2
    assert_one_error_line(lines, says)


async def test_socket_when_slack_cannot_be_reached(tmp_path):
    env = startup_env(tmp_path, SLACK_API_URL=f"http://127.0.0.1:{free_port()}/api/")
    code, lines, took = await run_bot("socket", "--port", str(free_port()), env=env)
    assert code == 1
    assert_one_error_line(lines, "cannot reach Slack", "check the network", after="listening on")
    assert took < 30


async def test_socket_when_slack_keeps_failing(tmp_path):
    async with SlackEmulator(slack_workspace()) as slack:
        slack.fail("apps.connections.open", status=500, times=10)
        env = startup_env(tmp_path, SLACK_API_URL=slack.api_url)
        code, lines, _ = await run_bot("socket", "--port", str(free_port()), env=env)
    assert code == 1
    assert_one_error_line(lines, "Slack refused the connection (fatal_error)", "SLACK_APP_TOKEN", after="listening on")


@pytest.mark.parametrize("log_format", ["text", "json"])
async def test_a_good_start_is_one_line(tmp_path, log_format):
    """No migration chatter, no warning about the token: one line with the address."""
    port = free_port()
    env = startup_env(tmp_path)
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bot", "serve", "--host", "127.0.0.1", "--port", str(port), "--log-format", log_format,
        env=env, stderr=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.DEVNULL,
    )  # fmt: skip
    try:
        async with aiohttp.ClientSession() as session:
            for _ in range(150):
                try:
                    async with session.get(f"http://127.0.0.1:{port}/health") as response:
                        if response.status == 200:
                            break
                except aiohttp.ClientError:
                    await asyncio.sleep(0.2)
    finally:
        process.terminate()
        _, stderr = await asyncio.wait_for(process.communicate(), 30)
    lines = stderr.decode().splitlines()
    assert len(lines) == 1, "\n".join(lines)
    assert f"listening on http://127.0.0.1:{port}" in lines[0]
    if log_format == "json":
        assert json.loads(lines[0])["level"] == "INFO"


@pytest.mark.parametrize("command", ["dev", "serve"])
async def test_a_port_that_is_not_a_port_is_one_line(tmp_path, command):
    code, lines, _ = await run_bot(command, "--port", "99999", env=startup_env(tmp_path))
    assert code == 2
    assert_one_error_line(lines, "--port 99999", "1-65535")


async def test_dev_on_a_port_in_use_says_where_it_moved(tmp_path):
    """It moved to the next free port silently: the URL in the README was then not the playground's."""
    env = {k: v for k, v in startup_env(tmp_path).items() if not k.startswith(("OPENAI_", "DATABASE_URL"))}
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "bot", "dev", "--port", str(port), env=env, cwd=tmp_path, stdout=-1, stderr=-2
        )
        try:
            printed = []
            while not printed or not printed[-1].startswith("Stop with Ctrl-C"):
                line = await asyncio.wait_for(process.stdout.readline(), 60)
                assert line, "\n".join(printed)
                printed.append(line.decode().rstrip())
        finally:
            process.send_signal(2)
            await asyncio.wait_for(process.wait(), 20)
    moved = [line for line in printed if line.startswith(f"Port {port} is in use: serving on ")]
    assert moved, printed
    assert any("python -m bot policy list --playground" in line for line in printed), printed


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (("serve", "--port", "abc"), "--port abc is not a port: use one of 1-65535"),
        (("dev", "--port", "３０００"), "--port ３０００ is not a port"),
        (("policy", "set", "delete-record", "--mode", "sometimes"), "--mode: 'sometimes' is not one of inherit,"),
        (("policy", "set", "delete-record", "--grants", "30"), "--grants: 30: a grant lasts 60 seconds to 7 days"),
        (("policy", "set", "delete-record", "--expires", "soon"), "--expires: 'soon' is not a whole number"),
        (("policy",), "the following arguments are required: {list,set,rules,export,apply}"),
        (("audit", "--format", "xml"), "--format: 'xml' is not one of table, jsonl, csv"),
        (("serve", "--log-level", "loud"), "--log-level: 'LOUD' is not one of DEBUG, INFO"),
        (("socket", "--agent"), "--agent: expected one argument"),
        (("deploy",), "'deploy' is not one of serve, socket, dev, policy, audit"),
        (("serve", "--verbose"), "unrecognized arguments: --verbose"),
    ],
    ids=lambda value: " ".join(value) if isinstance(value, tuple) else None,
)
async def test_every_command_line_mistake_is_one_line(tmp_path, args, says):
    """argparse printed its usage, ten lines and more, before the mistake; the usage is for --help."""
    code, lines, _ = await run_bot(*args, env=startup_env(tmp_path))
    assert code == 2
    assert_one_error_line(lines, says, "--help")
    assert not (tmp_path / "bot.db").exists()  # a mistake touches no database


async def test_the_usage_is_for_help(tmp_path):
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bot", "policy", "set", "--help", env=startup_env(tmp_path), stdout=-1, stderr=-1
    )
    out, err = await process.communicate()
    assert process.returncode == 0 and err == b""
    assert out.decode().startswith("usage: python -m bot policy set") and "--grants SECONDS" in out.decode()


@pytest.mark.parametrize("command", [("serve",), ("dev", "--port", "0"), ("policy", "list")])
@pytest.mark.parametrize("model", ["anthropic/claude-3", "gpt-5-mini", "openai/"])
async def test_a_model_the_bot_cannot_use_is_one_line(tmp_path, command, model):
    """BOT_MODEL=anthropic/claude-3 was taken silently: every answer then failed at the model."""
    code, lines, _ = await run_bot(*command, env=startup_env(tmp_path, BOT_MODEL=model))
    assert code == 2
    assert_one_error_line(lines, f"BOT_MODEL: {model!r} is not a model the bot can use", "openai/<model>")


async def test_serve_on_port_0_says_the_port_it_listens_on(tmp_path):
    """It said "listening on http://127.0.0.1:0": the one thing needed to reach it was not there."""
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bot", "serve", "--host", "127.0.0.1", "--port", "0",
        env=startup_env(tmp_path), stderr=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.DEVNULL,
    )  # fmt: skip
    try:
        line = (await asyncio.wait_for(process.stderr.readline(), 60)).decode()
        port = int(re.search(r"listening on http://127\.0\.0\.1:(\d+)", line).group(1))
        assert port != 0, line
        async with aiohttp.ClientSession() as session, session.get(f"http://127.0.0.1:{port}/health") as response:
            assert response.status == 200
    finally:
        process.terminate()
        await asyncio.wait_for(process.communicate(), 30)


async def test_a_policies_file_with_a_problem_stops_the_start(tmp_path: Path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("policies:\n  issue-refund:\n    rules:\n    - condition: args.amount > 100\n      effect: refuse\n")
    env = startup_env(tmp_path, BOT_POLICIES_FILE=str(bad))
    code, lines, _ = await run_bot("serve", "--port", "0", env=env)
    assert code == 1
    assert_one_error_line(lines, "BOT_POLICIES_FILE", f"{bad}:4", "(write 100.0)")
