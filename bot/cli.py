"""The command line: `python -m bot serve|socket|dev [--agent module:attr]` (and, later, `policy`).

It is the one place that turns settings into running objects: storage from DATABASE_URL, the agent
(named, or the built-in demo), the Slack app, and the server.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import logging
import signal
import sys
from collections.abc import Coroutine, Sequence
from typing import Any

from .settings import MissingSettingError, Settings


class AgentNotFoundError(RuntimeError):
    """`--agent` does not name an importable Agent (or a function returning one)."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m bot", description="A Slack bot whose agent asks before it acts.")
    commands = parser.add_subparsers(dest="command", required=True)
    agent_help = "the Agent to run, as module:attribute (built without storage); default: the built-in demo agent"

    serve = commands.add_parser("serve", help="run the Slack app over HTTP (POST /slack/events)")
    serve.add_argument("--agent", metavar="MODULE:ATTR", help=agent_help)
    serve.add_argument("--port", type=int, default=3000, help="port to listen on (default 3000)")
    serve.add_argument("--host", default="0.0.0.0", help="address to listen on (default 0.0.0.0)")

    socket = commands.add_parser("socket", help="run the Slack app over Socket Mode")
    socket.add_argument("--agent", metavar="MODULE:ATTR", help=agent_help)

    commands.add_parser("policy", help="read and change tool policies (not yet available)", add_help=False)
    dev = commands.add_parser("dev", help="run the local playground: an emulated Slack workspace in the browser")
    dev.add_argument("--agent", metavar="MODULE:ATTR", help=agent_help)
    dev.add_argument(
        "--port", type=int, default=3000, help="port on 127.0.0.1 (default 3000; the next free one if taken)"
    )
    return parser


def load_agent(spec: str) -> Any:
    """Import `module:attr`; an attribute that is a function is called to build the agent."""
    from bot.agent import Agent

    module_name, _, attribute = spec.partition(":")
    if not module_name or not attribute:
        raise AgentNotFoundError(f"--agent {spec!r}: expected module:attribute, e.g. myproject.agents:support_agent")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise AgentNotFoundError(f"--agent {spec!r}: cannot import {module_name!r}: {exc}") from exc
    agent = getattr(module, attribute, None)
    if agent is not None and not isinstance(agent, Agent) and callable(agent):
        agent = agent()
    if not isinstance(agent, Agent):
        raise AgentNotFoundError(f"--agent {spec!r}: {module_name}.{attribute} is not an Agent")
    return agent


async def _run(command: str, options: argparse.Namespace, settings: Settings) -> None:
    from memory import Storage

    from .assemble import assemble_agent
    from .slack import build_web_app, create_slack_app, serve_http, serve_socket

    storage = Storage(settings.database_url)
    try:
        await storage.migrate()
        named = load_agent(options.agent) if options.agent else None
        agent = await assemble_agent(storage, model=settings.bot_model, agent=named)
        app = create_slack_app(
            agent=agent,
            storage=storage,
            token=settings.slack_bot_token,
            signing_secret=settings.slack_signing_secret if command == "serve" else None,
            api_url=settings.slack_api_url,
        )
        if command == "serve":
            logging.getLogger("bot").info("listening on %s:%s, POST /slack/events", options.host, options.port)
            await serve_http(build_web_app(app), host=options.host, port=options.port)
        else:
            await serve_socket(app, app_token=settings.slack_app_token)
    finally:
        await storage.close()


REQUIRED = {"serve": ("SLACK_BOT_TOKEN", "SLACK_SIGNING_SECRET"), "socket": ("SLACK_BOT_TOKEN", "SLACK_APP_TOKEN")}


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "policy":
        print(f"python -m bot {argv[0]}: not yet available", file=sys.stderr)
        return 2
    options = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    settings = Settings()
    try:
        settings.require(*REQUIRED.get(options.command, ()))
        if options.agent:
            load_agent(options.agent)  # fail before connecting anything
    except (MissingSettingError, AgentNotFoundError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if options.command == "dev":
        from bot.playground import run_playground

        named = load_agent(options.agent) if options.agent else None
        _run_until_stopped(run_playground(settings, port=options.port, agent=named))
    else:
        _run_until_stopped(_run(options.command, options, settings))
    return 0


def _run_until_stopped(work: Coroutine[Any, Any, None]) -> None:
    """Run `work` until Ctrl-C or SIGTERM (`docker stop`, process managers). Both cancel it, so its
    cleanup runs; a KeyboardInterrupt raised from a signal handler could land anywhere, even in a
    `__del__` that swallows it, and the bot would never stop."""

    async def main() -> None:
        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, asyncio.current_task().cancel)
        try:
            await work
        except asyncio.CancelledError:
            pass

    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        pass
