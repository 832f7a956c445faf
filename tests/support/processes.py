"""The bot in real OS processes, for the tests that start one: `python -m bot serve` on a port of this test
worker's own, its environment, the admin commands, and the crash agent (`tests/runtime/crash_agent.py`)
that a test kills at a chosen step.

Ports: `free_port()` hands out ports below the kernel's ephemeral range (32768 and up on Linux), in a
block of this pytest-xdist worker's own, so neither another worker nor an outgoing connection can take
the port between the test picking it and the bot binding it.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import itertools
import json
import os
import signal
import socket
import sys
import threading
import time
import weakref
from pathlib import Path
from typing import Any

import aiohttp

from bot.slack_emulator import SlackEmulator
from memory import Storage

ROOT = Path(__file__).resolve().parents[2]
SECRET = "cli-test-signing-secret"

_PORTS_PER_WORKER = 400
_FIRST_PORT = 20000


def _worker_number() -> int:
    """0 for `gw0` (or a run without pytest-xdist), 1 for `gw1`, ..."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0")
    return int(worker.removeprefix("gw")) if worker.removeprefix("gw").isdigit() else 0


_next_port = itertools.count(_FIRST_PORT + _worker_number() * _PORTS_PER_WORKER)


def free_port() -> int:
    """A loopback port nothing listens on, from this worker's block (skipping any that is taken)."""
    last = _FIRST_PORT + (_worker_number() + 1) * _PORTS_PER_WORKER
    for port in _next_port:
        if port >= last:
            break
        with socket.socket() as probe:
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise AssertionError("this test worker used up its block of ports")


def bot_env(database_url: str, slack: SlackEmulator, **extra: str) -> dict[str, str]:
    """The environment of a `python -m bot serve` on `database_url`, talking to the emulated `slack` and the
    scripted model (`OPENAI_BASE_URL`, set by the `model` fixture)."""
    return {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "SLACK_BOT_TOKEN": "xoxb-cli",
        "SLACK_SIGNING_SECRET": SECRET,
        "SLACK_API_URL": slack.api_url,
        "DATABASE_URL": database_url,
        "BOT_MODEL": "openai/test-model",
        "PYTHONFAULTHANDLER": "1",  # a bot stuck in its stop prints every thread's stack on SIGABRT (`stop_bot`)
        **extra,
    }


async def start_bot(port: int, env: dict[str, str], log: Path, *args: str) -> asyncio.subprocess.Process:
    """`python -m bot serve [args]` on `port`, its log appended to `log` (a file, so a full pipe never blocks it)."""
    with log.open("ab") as log_file:
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "bot",
            "serve",
            *args,
            "--port",
            str(port),
            "--host",
            "127.0.0.1",
            cwd=ROOT,
            env=env,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=log_file,
        )
    return await wait_until_healthy(process, port, log)


async def wait_until_healthy(process: asyncio.subprocess.Process, port: int, log: Path) -> asyncio.subprocess.Process:
    """`process` once its `/health` on `port` answers 200; its log in the error if it exits first."""
    _LOGS[process] = log
    deadline = time.monotonic() + 90  # a start takes a second or two; a loaded CI machine can take far longer
    async with aiohttp.ClientSession() as session:
        while time.monotonic() < deadline:
            if process.returncode is not None:
                raise AssertionError(log.read_text())
            try:
                async with session.get(f"http://127.0.0.1:{port}/health") as response:
                    if response.status == 200:
                        return process
            except aiohttp.ClientError:
                await asyncio.sleep(0.2)
    raise AssertionError("the bot did not start")


async def start_serve(port: int, env: dict[str, str], log: Path) -> asyncio.subprocess.Process:
    """`python -m bot serve` with the crash agent (`tests/runtime/crash_agent.py:bot_agent`)."""
    return await start_bot(port, env, log, "--agent", "tests.runtime.crash_agent:bot_agent")


_LOGS: weakref.WeakKeyDictionary[asyncio.subprocess.Process, Path] = weakref.WeakKeyDictionary()
"""The log of each bot `wait_until_healthy` saw start."""

STOP_WAIT = 15.0
"""Seconds `stop_bot` gives a bot to stop on SIGTERM (its own watchdog waits BOT_SHUTDOWN_GRACE + 15)."""


async def stop_bot(process: asyncio.subprocess.Process) -> None:
    """SIGTERM, and the bot must exit 0 within `STOP_WAIT` seconds. One that does not is sent SIGABRT, which
    makes it print every thread's stack into its log (PYTHONFAULTHANDLER, set by `bot_env`), and the
    failure shows the end of that log."""
    process.send_signal(signal.SIGTERM)
    try:
        await asyncio.wait_for(process.wait(), STOP_WAIT)
    except TimeoutError:
        process.send_signal(signal.SIGABRT)
        try:
            await asyncio.wait_for(process.wait(), 5)
        except TimeoutError:
            process.kill()
            await process.wait()
    if process.returncode != 0:
        log = _LOGS.get(process)
        shown = log.read_text(errors="replace")[-20000:] if log is not None and log.exists() else "(no log)"
        raise AssertionError(f"the bot did not stop cleanly (exit {process.returncode}); the end of its log:\n{shown}")


async def bot_command(*args: str, database_url: str) -> tuple[int, str, str]:
    """`python -m bot ARGS` (an admin command) on DATABASE_URL, to its end: exit code, stdout, stderr.

    Run by the command line's own `main`, as `python -m bot` runs it, in a thread of this process with
    its own event loop: the admin tests give dozens of commands each, and a new interpreter for each cost
    1-2 s (53 s for one test). `bot_process_command` starts the real process, for what only a process
    shows (the entry point, what reaches the terminal)."""
    return await asyncio.to_thread(_command_in_this_process, args, database_url)


_ONE_COMMAND_AT_A_TIME = threading.Lock()


def _command_in_this_process(args: tuple[str, ...], database_url: str) -> tuple[int, str, str]:
    from bot.cli import main

    out, err = io.StringIO(), io.StringIO()
    with _ONE_COMMAND_AT_A_TIME, contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        before = os.environ.get("DATABASE_URL")
        os.environ["DATABASE_URL"] = database_url
        try:
            code = main(list(args))
        except SystemExit as exc:  # argparse's usage errors, as the process would exit with them
            code = exc.code if isinstance(exc.code, int) else int(exc.code is not None)
        finally:
            if before is None:
                del os.environ["DATABASE_URL"]
            else:
                os.environ["DATABASE_URL"] = before
    return code, out.getvalue(), err.getvalue()


async def bot_process_command(*args: str, database_url: str) -> tuple[int, str, str]:
    """`python -m bot ARGS` (an admin command) in a real process on DATABASE_URL: exit code, stdout, stderr."""
    env = {**os.environ, "DATABASE_URL": database_url}
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bot", *args, env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    out, err = await process.communicate()
    return process.returncode, out.decode(), err.decode()


async def read(database_url: str, statement: Any) -> list[Any]:
    """What `statement` selects in the database a bot process uses, read through a Storage of its own."""
    storage = Storage(database_url)
    try:
        async with storage.session() as session:
            return list(await session.scalars(statement))
    finally:
        await storage.close()


def lines(effects: Path, prefix: str) -> list[str]:
    """The lines of the crash agent's effects log (`EFFECTS`) that start with `prefix`."""
    return [line for line in effects.read_text().splitlines() if line.startswith(prefix)] if effects.exists() else []


async def spawn(*args: str, database_url: str, **env: str) -> asyncio.subprocess.Process:
    """`python -m tests.runtime.crash_agent ARGS` on `database_url`, started."""
    environment = {**os.environ, "DATABASE_URL": database_url, "PYTHONPATH": str(ROOT), **env}
    return await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "tests.runtime.crash_agent",
        *args,
        cwd=ROOT,
        env=environment,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )


async def run(*args: str, database_url: str, **env: str) -> dict:
    """The crash agent run to its end; what it printed last (JSON)."""
    process = await spawn(*args, database_url=database_url, **env)
    stdout, stderr = await asyncio.wait_for(process.communicate(), 60)
    assert process.returncode == 0, stderr.decode()[-3000:]
    return json.loads(stdout.decode().strip().splitlines()[-1])


async def crash(*args: str, database_url: str, **env: str) -> None:
    """The crash agent run until it kills itself (SIGKILL) at its `CRASH_AT` step."""
    process = await spawn(*args, database_url=database_url, **env)
    _, stderr = await asyncio.wait_for(process.communicate(), 60)
    assert process.returncode == -signal.SIGKILL, f"expected a crash, got {process.returncode}: {stderr.decode()}"
