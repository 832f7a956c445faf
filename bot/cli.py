"""The command line: `python -m bot serve|socket|dev [--agent module:attr]`, `policy list|set`, `audit`.

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
    socket.add_argument("--port", type=int, default=3000, help="port of /health and the HTTP API (default 3000)")
    socket.add_argument("--host", default="0.0.0.0", help="address to listen on (default 0.0.0.0)")

    policy = commands.add_parser("policy", help="read and change tool policies in DATABASE_URL")
    policy_commands = policy.add_subparsers(dest="policy_command", required=True)
    policy_list = policy_commands.add_parser("list", help="every tool of the agent with its policy")
    policy_list.add_argument("--agent", metavar="MODULE:ATTR", help=agent_help)
    policy_set = policy_commands.add_parser("set", help="change a tool's policy (omitted options keep their value)")
    policy_set.add_argument("tool", metavar="TOOL", help="the tool's id, as `policy list` shows it")
    policy_set.add_argument("--agent", metavar="MODULE:ATTR", help=agent_help)
    policy_set.add_argument("--mode", choices=["inherit", "require_approval", "disabled"])
    policy_set.add_argument(
        "--approvers", metavar="U1,S2", help='Slack user and user-group IDs, comma-separated; "" clears (anyone)'
    )
    policy_set.add_argument(
        "--self-approval",
        dest="self_approval",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="whether the requester may approve their own call",
    )
    policy_set.add_argument(
        "--expires", metavar="SECONDS", type=_seconds, help="decline a waiting approval after this long; 0 removes"
    )

    audit = commands.add_parser("audit", help="print the audit trail, oldest first")
    audit.add_argument("--since", metavar="ISO-8601", help="only entries from this date or time on (UTC if no zone)")
    audit.add_argument("--tool", metavar="TOOL", help="only entries about this tool")
    audit.add_argument("--format", choices=["table", "jsonl", "csv"], default="table")

    dev = commands.add_parser("dev", help="run the local playground: an emulated Slack workspace in the browser")
    dev.add_argument("--agent", metavar="MODULE:ATTR", help=agent_help)
    dev.add_argument(
        "--port", type=int, default=3000, help="port on 127.0.0.1 (default 3000; the next free one if taken)"
    )
    return parser


def _seconds(value: str) -> int:
    try:
        seconds = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a whole number of seconds") from None
    if seconds < 0:
        raise argparse.ArgumentTypeError(f"{value} is negative; use 0 to remove the expiry")
    return seconds


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

    from .api import add_api_routes
    from .assemble import assemble_agent
    from .slack import build_web_app, create_slack_app, serve_http, serve_socket
    from .slack.http_api import slack_api_front
    from .slack.migrations import SCHEMA as SLACK_SCHEMA
    from .slack.server import EVENTS_PATH

    storage = Storage(settings.database_url)
    try:
        await storage.migrate(SLACK_SCHEMA)
        named = load_agent(options.agent) if options.agent else None
        agent = await assemble_agent(storage, model=settings.bot_model, agent=named)
        app = create_slack_app(
            agent=agent,
            storage=storage,
            token=settings.slack_bot_token,
            signing_secret=settings.slack_signing_secret if command == "serve" else None,
            api_url=settings.slack_api_url,
            admins=settings.bot_admins,
        )
        web_app = build_web_app(app, path=EVENTS_PATH if command == "serve" else None)
        if settings.bot_api_token:
            add_api_routes(web_app, slack_api_front(app, token=settings.bot_api_token))
        http = serve_http(web_app, host=options.host, port=options.port)
        logging.getLogger("bot").info(
            "listening on %s:%s%s%s",
            options.host,
            options.port,
            ", POST /slack/events" if command == "serve" else "",
            ", the HTTP API under /api" if settings.bot_api_token else "",
        )
        if command == "serve":
            await http
        else:
            await _together(http, serve_socket(app, app_token=settings.slack_app_token))
    finally:
        await storage.close()


async def _admin(options: argparse.Namespace, settings: Settings) -> None:
    """`policy list|set` and `audit` on DATABASE_URL."""
    from memory import PolicyChange, Storage

    from . import admin

    storage = Storage(settings.database_url)
    try:
        if options.command == "audit":
            await admin.print_audit(
                storage, since=admin.parse_since(options.since), tool_name=options.tool, format=options.format
            )
            return
        agent = load_agent(options.agent) if options.agent else _demo_agent(storage, settings)
        if options.policy_command == "list":
            await admin.list_policies(storage, agent)
            return
        approvers = None if options.approvers is None else options.approvers.split(",")
        change = PolicyChange(
            mode=options.mode, approvers=approvers, self_approval=options.self_approval, expires_after=options.expires
        )
        await admin.set_policy(storage, agent, options.tool, change)
    finally:
        await storage.close()


def _demo_agent(storage: Any, settings: Settings) -> Any:
    from bot.demo import build_demo_agent

    return build_demo_agent(storage, model=settings.bot_model)


REQUIRED = {"serve": ("SLACK_BOT_TOKEN", "SLACK_SIGNING_SECRET"), "socket": ("SLACK_BOT_TOKEN", "SLACK_APP_TOKEN")}


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    options = build_parser().parse_args(argv)
    if options.command in ("policy", "audit"):
        return _run_admin(options)
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


async def _together(*work: Coroutine[Any, Any, None]) -> None:
    """Run until one of `work` ends (or fails); then cancel the others."""
    tasks = [asyncio.ensure_future(w) for w in work]
    try:
        done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        for task in done:
            task.result()
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


def _run_admin(options: argparse.Namespace) -> int:
    from .admin import AdminInputError

    try:
        if getattr(options, "agent", None):
            load_agent(options.agent)
        asyncio.run(_admin(options, Settings()))
    except (AdminInputError, AgentNotFoundError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
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
