"""The command line: `python -m bot serve|socket|dev [--agent module:attr]`, `policy list|set`, `audit`.

It is the one place that turns settings into running objects: storage from DATABASE_URL, the agent
(named, or the built-in demo), the Slack app, and the server.
"""

from __future__ import annotations

import argparse
import asyncio
import errno
import importlib
import logging
import re
import sys
from collections.abc import Coroutine, Sequence
from typing import Any, NoReturn

from .cli_delegations import add_delegation_command, run_delegation_command
from .cli_rules import add_rules_commands, run_file_command, run_rules_command
from .defaults import DEV_STOP_DEADLINE
from .logs import LOG_FORMATS, LOG_LEVELS, configure_logging
from .settings import MissingSettingError, Settings, SettingsError, load_settings, without_password
from .stopping import cut_off, cut_off_the_rest, run_until_stopped


class AgentNotFoundError(RuntimeError):
    """`--agent` does not name an importable Agent (or a function returning one)."""


class StartupError(RuntimeError):
    """The bot cannot start; the message is one line that names the cause and the fix."""


AGENT_HELP = "the Agent to run, as module:attribute (built without storage); default: the built-in demo agent"


class _Parser(argparse.ArgumentParser):
    """argparse, with a mistake said in one line on stderr (exit status 2) instead of the usage and the
    message; the usage is for `--help`. Subcommands' parsers are of this class too."""

    def error(self, message: str) -> NoReturn:
        name, sep, rest = message.partition(": ")
        if name.startswith("argument ") and sep:
            option = name.removeprefix("argument ").split("/")[0]
            choice = re.fullmatch(r"invalid choice: '(.*)' \(choose from (.*)\)", rest)
            if choice:
                rest = f"{choice[1]!r} is not one of {choice[2].replace(chr(39), '')}"
            message = rest if rest.startswith(option) or option.startswith("{") else f"{option}: {rest}"
        self.exit(2, f"error: {message} (see {self.prog} --help)\n")


def build_parser(settings: Settings | None = None) -> argparse.ArgumentParser:
    settings = settings or Settings.model_construct()
    parser = _Parser(prog="python -m bot", description="A Slack bot whose agent asks before it acts.")
    commands = parser.add_subparsers(dest="command", required=True, metavar="{serve,socket,dev,policy,audit,delegate}")
    servers = _add_server_commands(commands)
    policy_list, policy_set, *policy_rules = _add_policy_commands(commands)
    audit = _add_audit_command(commands)
    delegate = add_delegation_command(commands)
    for command in (*servers, policy_list, policy_set, *policy_rules):
        _add_agent_options(command, settings)
    for command in (policy_list, policy_set, *policy_rules, audit, delegate):
        command.add_argument(
            "--playground",
            action="store_true",
            help="use the playground's database (the one `python -m bot dev` uses) instead of DATABASE_URL",
        )
    for command in servers:
        _add_log_options(command, settings)
    return parser


def _add_server_commands(commands: Any) -> tuple[argparse.ArgumentParser, ...]:
    """`serve`, `socket` and `dev`: the commands that run the bot."""
    serve = commands.add_parser("serve", help="run the Slack app over HTTP (POST /slack/events, GET /metrics)")
    serve.add_argument("--port", type=_port, default=3000, help="port to listen on (default 3000; 0: any free one)")
    socket = commands.add_parser("socket", help="run the Slack app over Socket Mode (GET /metrics on --port)")
    socket.add_argument(
        "--port", type=_port, default=3000, help="port of /health, /metrics and the HTTP API (default 3000)"
    )
    for command in (serve, socket):
        command.add_argument("--host", default="0.0.0.0", help="address to listen on (default 0.0.0.0)")
    dev = commands.add_parser("dev", help="run the local playground: an emulated Slack workspace in the browser")
    dev.add_argument(
        "--port", type=_port, default=3000, help="port on 127.0.0.1 (default 3000; the next free one if taken)"
    )
    return serve, socket, dev


def _add_policy_commands(commands: Any) -> tuple[argparse.ArgumentParser, ...]:
    """`policy list`, `policy set TOOL [--mode ...]` and `policy rules add|remove|move`."""
    policy = commands.add_parser("policy", help="read and change tool policies in DATABASE_URL")
    policy_commands = policy.add_subparsers(
        dest="policy_command", required=True, metavar="{list,set,rules,export,apply}"
    )
    policy_list = policy_commands.add_parser("list", help="every tool of the agent with its policy")
    policy_set = policy_commands.add_parser("set", help="change a tool's policy (omitted options keep their value)")
    policy_set.add_argument("tool", metavar="TOOL", help="the tool's id, as `policy list` shows it")
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
    policy_set.add_argument(
        "--approvals-required",
        dest="approvals_required",
        metavar="N",
        type=_approvals,
        help="distinct approvers a call needs before it runs (four eyes: 2; the requester never counts); 1 to 10",
    )
    policy_set.add_argument(
        "--grants",
        dest="grant_seconds",
        metavar="SECONDS",
        type=_grant_seconds,
        help="let an approver allow the tool for this long in one thread (standing grant; 60 to 604800); 0: no grants",
    )
    policy_set.add_argument(
        "--undo",
        dest="undo_seconds",
        metavar="SECONDS",
        type=_undo_seconds,
        help="how long after a call ran it may be undone, when its tool declares how (default 300); 0: no undo",
    )
    policy_set.add_argument(
        "--escalate-to",
        dest="escalate_to",
        metavar="S…|C…",
        type=_escalation_target,
        help="bring an approval still waiting after --escalate-after to this user group (a DM to each member) "
        'or channel (one post); "" removes',
    )
    policy_set.add_argument(
        "--escalate-after",
        dest="escalate_after",
        metavar="SECONDS",
        type=_escalation_seconds,
        help="seconds an approval waits before it is escalated (shorter than --expires); 0 removes",
    )
    return policy_list, policy_set, *add_rules_commands(policy_commands)


def _add_audit_command(commands: Any) -> argparse.ArgumentParser:
    audit = commands.add_parser("audit", help="print the audit trail, oldest first")
    audit.add_argument("--since", metavar="ISO-8601", help="only entries from this date or time on (UTC if no zone)")
    audit.add_argument("--tool", metavar="TOOL", help="only entries about this tool")
    audit.add_argument("--format", choices=["table", "jsonl", "csv"], default="table")
    audit.add_argument(
        "--summary",
        action="store_true",
        help="how approvals are decided, per tool and per person (quick: BOT_QUICK_APPROVAL_SECONDS)",
    )
    return audit


def _add_agent_options(command: argparse.ArgumentParser, settings: Settings) -> None:
    """`--agent` and `--mcp`: which agent, with which MCP servers' tools."""
    command.add_argument("--agent", metavar="MODULE:ATTR", help=AGENT_HELP)
    command.add_argument(
        "--mcp",
        metavar="FILE",
        default=settings.bot_mcp_config,
        help='MCP servers whose tools join the agent\'s: {"mcpServers": {...}} (default: BOT_MCP_CONFIG)',
    )


def _add_log_options(command: argparse.ArgumentParser, settings: Settings) -> None:
    command.add_argument(
        "--log-level",
        type=str.upper,
        choices=LOG_LEVELS,
        default=settings.bot_log_level,
        help="INFO (default, or BOT_LOG_LEVEL): a line at start, per turn and per decision; DEBUG: everything",
    )
    command.add_argument(
        "--log-format",
        choices=LOG_FORMATS,
        default=settings.bot_log_format,
        help="text (default, or BOT_LOG_FORMAT), or json: one object a line with run_id, thread_id, tool, decision",
    )


def _port(value: str) -> int:
    port = int(value) if value.isascii() and value.isdigit() else -1
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"--port {value} is not a port: use one of 1-65535 (0: any free one)")
    return port


def _approvals(value: str) -> int:
    from memory import PolicyError, approvals_count

    try:
        return approvals_count(value)
    except PolicyError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _undo_seconds(value: str) -> int:
    from memory import PolicyError, undo_seconds_of

    try:
        return undo_seconds_of(value)
    except PolicyError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _grant_seconds(value: str) -> int:
    from memory import PolicyError, grant_seconds_of

    try:
        return grant_seconds_of(value)
    except PolicyError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _escalation_target(value: str) -> str:
    from memory import PolicyError, escalation_target

    try:
        return escalation_target(value) or ""
    except PolicyError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _escalation_seconds(value: str) -> int:
    from memory import PolicyError, escalation_seconds

    try:
        return escalation_seconds(value)
    except PolicyError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _seconds(value: str) -> int:
    from memory import PolicyError, expiry_seconds

    try:
        return expiry_seconds(value)  # the one rule of the Home, the command line and storage
    except PolicyError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


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
    except Exception as exc:  # the module itself is broken: say where, without a traceback
        raise AgentNotFoundError(f"--agent {spec!r}: importing {module_name!r} failed: {_one_line(exc)}") from exc
    agent = getattr(module, attribute, None)
    if agent is not None and not isinstance(agent, Agent) and callable(agent):
        try:
            agent = agent()
        except Exception as exc:
            raise AgentNotFoundError(f"--agent {spec!r}: {module_name}.{attribute}() failed: {_one_line(exc)}") from exc
    if not isinstance(agent, Agent):
        raise AgentNotFoundError(f"--agent {spec!r}: {module_name}.{attribute} is not an Agent")
    return agent


async def _run(command: str, options: argparse.Namespace, settings: Settings, named: Any) -> None:
    """`serve` or `socket`: the storage, the agent (`named`, already loaded, or the demo) and its background
    work, the Slack app and its web server, until stopped; then the shutdown."""
    from . import telemetry
    from .agent import limit_model_requests
    from .assemble import assemble_agent
    from .slack.migrations import SCHEMA as SLACK_SCHEMA

    limit_model_requests(settings.bot_max_model_requests)
    tracing = telemetry.setup(
        settings.otel_exporter_otlp_endpoint,
        protocol=settings.otel_exporter_otlp_protocol,
        service_name=settings.otel_service_name,
    )
    storage = await open_storage(
        settings.database_url,
        SLACK_SCHEMA,
        pool_size=settings.bot_database_pool_size,
        max_overflow=settings.bot_database_max_overflow,
    )
    background = RuntimeWork()
    mcp: Any = None
    app: Any = None
    try:
        mcp = await connect_mcp(options.mcp, allow_http_loopback=settings.bot_mcp_allow_http_loopback)
        agent = await assemble_agent(
            storage,
            model=settings.bot_model,
            agent=named,
            model_timeout=settings.bot_model_timeout,
            tools=mcp.tools,
            secrets=settings.secrets(),
        )
        await _apply_policies_file(storage, agent, settings)
        background.start(agent, settings)
        app = _slack_app(command, agent, storage, settings)
        await _serve(command, app, storage, options, settings)
    finally:
        await background.stop(settings.bot_shutdown_grace)
        if app is not None:
            from .slack import stop_turns_left

            await stop_turns_left(app)
        if mcp is not None:
            await mcp.aclose()
        await cut_off_the_rest()
        await storage.close()
        telemetry.shutdown(tracing)  # sends the spans still buffered


async def _apply_policies_file(storage: Any, agent: Any, settings: Settings) -> None:
    """BOT_POLICIES_FILE, applied before the bot serves: all of it, or (a problem in it) nothing and no start."""
    if not settings.bot_policies_file:
        return
    from memory import SYSTEM

    from .policies_file import PoliciesFileError, apply_file, plan_lines

    try:
        planned = await apply_file(storage, agent, settings.bot_policies_file, actor=SYSTEM)
    except PoliciesFileError as exc:
        raise StartupError(f"BOT_POLICIES_FILE: {'; '.join(exc.problems)}") from None
    for line in plan_lines(planned):
        logging.getLogger("bot").info("BOT_POLICIES_FILE: %s", line)


class RuntimeWork:
    """What the runtime does on its own while the bot serves: the recovery of stale runs, the expiry sweep."""

    def __init__(self) -> None:
        self.recovery: Any = None
        self.expiry: asyncio.Task | None = None

    def start(self, agent: Any, settings: Settings) -> None:
        from .expiry import expire_forever
        from .recovery import RecoveryLoop

        self.recovery = RecoveryLoop(agent, every=settings.bot_recovery_interval, stale_after=settings.bot_stale_after)
        self.expiry = asyncio.get_running_loop().create_task(expire_forever(agent))

    async def stop(self, grace: float) -> None:
        """Events are no longer taken (the server stopped). Tools at work get `grace` seconds to finish;
        what is still running then is left to the recovery of the next start."""
        from .agent import wait_for_running_runs

        if self.recovery is not None:
            await self.recovery.stop()
        if self.expiry is not None:
            await cut_off([self.expiry])  # waited for, so it does not hold a connection while the storage closes
        left = await wait_for_running_runs(grace)
        if left:
            logging.getLogger("bot").warning(
                "stopping with %d run(s) still at work: the next start recovers them", left
            )


def _slack_app(command: str, agent: Any, storage: Any, settings: Settings) -> Any:
    from .slack import create_slack_app

    assert settings.slack_bot_token is not None, "required for serve and socket (REQUIRED)"
    return create_slack_app(
        agent=agent,
        storage=storage,
        token=settings.slack_bot_token,
        signing_secret=settings.slack_signing_secret if command == "serve" else None,
        api_url=settings.slack_api_url,
        max_concurrent_turns=settings.bot_max_concurrent_turns,
        stale_after=settings.bot_stale_after,
        admins=settings.bot_admins,
        language=settings.bot_language,
        quick_approval_seconds=settings.bot_quick_approval_seconds,
    )


async def _serve(command: str, app: Any, storage: Any, options: argparse.Namespace, settings: Settings) -> None:
    """The web server (Slack's events over HTTP for `serve`, /health, /metrics, the HTTP API), Slack's
    recovery pass and, for `socket`, the Socket Mode connection; a start that cannot succeed is one line."""
    from .api import add_api_off_routes, add_api_routes
    from .metrics import add_metrics_routes
    from .slack import build_web_app, run_slack_recovery, serve_http, serve_socket
    from .slack.http_api import slack_api_front
    from .slack.server import EVENTS_PATH, SlackUnreachableError

    web_app = build_web_app(app, path=EVENTS_PATH if command == "serve" else None)
    if settings.bot_api_token:
        add_api_routes(web_app, slack_api_front(app, token=settings.bot_api_token))
    else:
        add_api_off_routes(web_app)
    add_metrics_routes(web_app, storage)
    routes = ["POST /slack/events"] if command == "serve" else []
    routes += ["GET /metrics"] + (["the HTTP API under /api"] if settings.bot_api_token else [])
    http = serve_http(web_app, host=options.host, port=options.port, what=", ".join(routes))
    recovery = run_slack_recovery(app, every=settings.bot_recovery_interval, repost_after=settings.bot_stale_after)
    try:
        if command == "serve":
            await _together(http, recovery)
        else:
            assert settings.slack_app_token is not None, "required for socket (REQUIRED)"
            await _together(http, recovery, serve_socket(app, app_token=settings.slack_app_token))
    except SlackUnreachableError as exc:
        raise StartupError(str(exc)) from None
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            raise StartupError(
                f"port {options.port} on {options.host} is in use: stop the process that holds it, "
                "or choose another with --port"
            ) from None
        raise


class _NoMcpServers:
    """The MCP servers without a servers file: no tools, nothing to stop, and the SDK never imported."""

    tools: tuple = ()

    async def aclose(self) -> None:
        pass


async def connect_mcp(path: str | None, *, allow_http_loopback: bool = False) -> Any:
    """The MCP servers of the file at `path` (none without one), started; a server that cannot start is
    named in one warning line and the bot runs without its tools. `allow_http_loopback`: the setting
    `BOT_MCP_ALLOW_HTTP_LOOPBACK`."""
    if not path:
        return _NoMcpServers()
    from .mcp import McpConfigError, connect_mcp_servers, load_mcp_config  # the SDK costs 0.5 s to import
    from .settings import environment

    try:
        configs = load_mcp_config(path, environment(), allow_http_loopback=allow_http_loopback)
    except McpConfigError as exc:
        raise StartupError(str(exc)) from None
    return await connect_mcp_servers(configs)


async def _dev(settings: Settings, *, port: int, agent: Any, mcp_file: str | None = None) -> None:
    from bot.playground import run_playground

    # the playground's database checked first, so a bad DATABASE_URL is one line like serve's
    await (await open_storage(settings.playground_database_url)).close()
    mcp = await connect_mcp(mcp_file, allow_http_loopback=settings.bot_mcp_allow_http_loopback)
    try:
        await run_playground(settings, port=port, agent=agent, tools=mcp.tools)
    except OSError as exc:
        if exc.errno in (errno.EADDRINUSE, errno.EACCES, errno.EADDRNOTAVAIL):
            raise StartupError(
                f"cannot listen on 127.0.0.1:{port}: {exc.strerror}; choose another with --port"
            ) from None
        raise
    finally:
        await mcp.aclose()


async def open_storage(
    database_url: str, *schemas: Any, pool_size: int | None = None, max_overflow: int | None = None
) -> Any:
    """The bot's storage, migrated (the runtime's tables and `schemas`); a URL that cannot be used is a
    `StartupError` naming it."""
    from memory import Storage

    shown = without_password(database_url)
    fix = "set DATABASE_URL to e.g. sqlite+aiosqlite:///data/bot.db or postgresql+asyncpg://user@host/db"
    try:
        storage = Storage(database_url, pool_size=pool_size, max_overflow=max_overflow)
    except Exception as exc:  # unparsable, or not an async driver
        raise StartupError(f"DATABASE_URL={shown} cannot be used ({_one_line(exc)}): {fix}") from None
    try:
        await storage.migrate(*schemas)
    except Exception as exc:  # unreachable server, unknown database, a directory that cannot be made
        await storage.close()
        raise StartupError(
            f"cannot open the database at DATABASE_URL={shown} ({_one_line(exc)}): check that it is reachable "
            "and exists, or " + fix
        ) from None
    return storage


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text[:300]}" if text else type(exc).__name__


async def _admin(options: argparse.Namespace, settings: Settings, named: Any = None) -> None:
    """`policy list|set` and `audit` on DATABASE_URL (or, with `--playground`, the playground's database),
    said on stderr first; `named` is the agent `--agent` named, already loaded (else the demo's tools)."""
    from memory import PolicyChange

    from . import admin
    from .approval_summary import print_summary
    from .assemble import add_tools

    since = admin.parse_since(options.since) if options.command == "audit" else None  # a mistake touches nothing
    url = settings.playground_database_url if options.playground else settings.database_url
    _refuse_a_playground_that_is_not_there(options, settings)
    print(f"Database: {without_password(url)} ({_database_origin(options, settings)})", file=sys.stderr)
    storage = await open_storage(url)
    try:
        if options.command == "audit" and options.summary:
            quick = settings.bot_quick_approval_seconds
            await print_summary(storage, since=since, tool_name=options.tool, format=options.format, quick=quick)
            return
        if options.command == "audit":
            await admin.print_audit(storage, since=since, tool_name=options.tool, format=options.format)
            return
        if options.command == "delegate":
            await run_delegation_command(options, storage)
            return
        agent = named if named is not None else _demo_agent(storage, settings)
        mcp = await connect_mcp(options.mcp)
        try:
            add_tools(agent, mcp.tools)
        finally:
            await mcp.aclose()  # the tools are only named here, never called
        if options.policy_command == "list":
            await admin.list_policies(storage, agent)
            return
        if options.policy_command == "rules":
            await run_rules_command(options, storage, agent)
            return
        if options.policy_command in ("export", "apply"):
            await run_file_command(options, storage, agent)
            return
        approvers = None if options.approvers is None else options.approvers.split(",")
        change = PolicyChange(
            mode=options.mode,
            approvers=approvers,
            self_approval=options.self_approval,
            expires_after=options.expires,
            approvals_required=options.approvals_required,
            grant_seconds=options.grant_seconds,
            undo_seconds=options.undo_seconds,
            escalate_to=options.escalate_to,
            escalate_after=options.escalate_after,
        )
        await admin.set_policy(storage, agent, options.tool, change)
    finally:
        await storage.close()


def _refuse_a_playground_that_is_not_there(options: argparse.Namespace, settings: Settings) -> None:
    """A read (`policy list`, `audit`) of the playground's own database before `dev` ever made it would
    make an empty one and show defaults as if they were the playground's; it is refused instead. A
    `policy set` may make it: the playground starts with that policy."""
    reads = options.command == "audit" or getattr(options, "policy_command", None) in ("list", "export")
    own = "database_url" not in settings.model_fields_set
    if options.playground and own and reads and not settings.playground_database_file.exists():
        raise StartupError(
            f"there is no playground database yet (at {settings.playground_database_file}): "
            "run `python -m bot dev` first, or set DATABASE_URL to the database it uses"
        )


def _database_origin(options: argparse.Namespace, settings: Settings) -> str:
    """Why an admin command reads the database it reads, in the words of its stderr line."""
    chosen = "database_url" in settings.model_fields_set
    if options.playground:
        return "--playground: DATABASE_URL, as `dev` uses it" if chosen else "--playground: the playground's own"
    if chosen:
        return "DATABASE_URL"
    return "DATABASE_URL is not set: the default; the playground's database is --playground"


def _demo_agent(storage: Any, settings: Settings) -> Any:
    from bot.demo import build_demo_agent

    return build_demo_agent(storage, model=settings.bot_model)


REQUIRED = {
    "serve": ("SLACK_BOT_TOKEN", "SLACK_SIGNING_SECRET", "OPENAI_API_KEY"),
    "socket": ("SLACK_BOT_TOKEN", "SLACK_APP_TOKEN", "OPENAI_API_KEY"),
}


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        settings = load_settings()
    except SettingsError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    options = build_parser(settings).parse_args(argv)
    if options.command in ("policy", "audit", "delegate"):
        return _run_admin(options, settings)
    configure_logging(options.log_level, options.log_format)
    try:
        settings.require(*REQUIRED.get(options.command, ()))
        named = load_agent(options.agent) if options.agent else None  # fail before connecting anything
    except (MissingSettingError, AgentNotFoundError) as exc:
        for line in str(exc).splitlines():  # one line for each variable missing
            print(f"error: {line}", file=sys.stderr)
        return 2
    if options.command == "dev":
        work = _dev(settings, port=options.port, agent=named, mcp_file=options.mcp)
    else:
        work = _run(options.command, options, settings, named)
    # dev leaves whatever was at work to the recovery of its next start, so it is gone within 2 s
    hard_deadline = DEV_STOP_DEADLINE if options.command == "dev" else settings.bot_shutdown_grace + 15
    try:
        run_until_stopped(work, hard_deadline=hard_deadline)
    except StartupError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


async def _together(*work: Coroutine[Any, Any, None]) -> None:
    """Run until one of `work` ends (or fails); then cancel the others."""
    tasks = [asyncio.ensure_future(w) for w in work]
    try:
        done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        for task in done:
            task.result()
    finally:
        await cut_off(tasks)


def _run_admin(options: argparse.Namespace, settings: Settings) -> int:
    from .admin import AdminInputError

    try:
        named = load_agent(options.agent) if getattr(options, "agent", None) else None
        asyncio.run(_admin(options, settings, named))
    except (AdminInputError, AgentNotFoundError, StartupError) as exc:
        for line in str(exc).splitlines() or [""]:  # a policies file: one line per problem
            print(f"error: {line}", file=sys.stderr)
        return 2
    return 0
