"""MCP servers as a source of the agent's tools: each server's tools become `tools.Tool`s named
`SERVER__TOOL`, with the server's input schema, title and description, and an approval default read
from the server's annotations (hints the bot believes only from a server the config trusts).
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import mcp.types as types

from tools import InvalidSchemaError, Tool, ToolContext, check_schema, create_tool

from ._config import McpServerConfig
from ._connection import McpServerError, ServerConnection
from ._live_calls import LiveCall, Question, answer_of

log = logging.getLogger(__name__)

SEPARATOR = "__"
NAME_LIMIT = 64
"""The longest tool name the model providers accept."""
_MODEL_NAME = re.compile(r"[A-Za-z0-9_-]+")


INTERRUPTED_QUESTION = (
    "the MCP server {server!r} asked a question during this call, and the bot process that held the call "
    "stopped before the answer came: the call was interrupted and may or may not have taken effect"
)


class McpToolError(RuntimeError):
    """The MCP server ran the tool and answered that it failed (the message is the server's)."""


@dataclass(kw_only=True)
class McpServers:
    """The configured servers that started, their tools, and the ones that did not start."""

    connections: dict[str, ServerConnection] = field(default_factory=dict)
    tools: list[Tool] = field(default_factory=list)
    """Every tool of every server that started, as the agent's tools."""
    unavailable: dict[str, str] = field(default_factory=dict)
    """Server name -> why it did not start (one line)."""

    async def aclose(self) -> None:
        """Stop every server (the stdio processes end)."""
        await asyncio.gather(*(c.aclose() for c in self.connections.values()), return_exceptions=True)


async def connect_mcp_servers(configs: Sequence[McpServerConfig], *, elicitation: Any = None) -> McpServers:
    """Start (or connect to) every server at once and list its tools. A server that cannot start is
    named in one warning line and left out: the bot runs without its tools."""
    servers = McpServers()

    async def start(config: McpServerConfig) -> None:
        connection = ServerConnection(config)
        try:
            listed = await connection.list_tools()
        except (McpServerError, Exception) as exc:  # noqa: BLE001 - one server's failure is not the bot's
            await connection.aclose()
            reason = str(exc) if isinstance(exc, McpServerError) else f"{type(exc).__name__}: {exc}"
            servers.unavailable[config.name] = reason
            log.warning("MCP server %r is not available, the bot runs without its tools: %s", config.name, reason)
            return
        servers.connections[config.name] = connection
        for tool in listed:
            converted = mcp_tool(connection, tool)
            if converted is not None:
                servers.tools.append(converted)
        log.info("MCP server %r: %d tool(s) over %s", config.name, len(listed), config.transport)

    await asyncio.gather(*(start(c) for c in configs))
    servers.tools.sort(key=lambda t: t.id)
    return servers


def mcp_tool(connection: ServerConnection, tool: types.Tool) -> Tool | None:
    """The agent's tool for one MCP tool; None (and a warning) for a name the model would not accept."""
    server = connection.config
    name = f"{server.name}{SEPARATOR}{tool.name}"
    if len(name) > NAME_LIMIT or not _MODEL_NAME.fullmatch(name):
        log.warning(
            "MCP server %r: tool %r left out: %r is not a name models accept (A-Z, a-z, 0-9, _ and -, "
            "at most %d characters)",
            server.name,
            tool.name,
            name,
            NAME_LIMIT,
        )
        return None
    problem = _schema_problem(tool)
    if problem is not None:
        log.warning("MCP server %r: tool %r left out: %s", server.name, tool.name, problem)
        return None
    hints = annotation_hints(tool.annotations)
    read_only = bool(tool.annotations and tool.annotations.read_only_hint)
    title = tool.title or (tool.annotations.title if tool.annotations else None)

    async def execute(args: Any, ctx: ToolContext) -> Any:
        key = (ctx.run_id, ctx.tool_call_id)
        live = connection.live_calls.pop(key, None)
        action = ctx.agent.answer_action
        if live is None and action is not None:  # the runtime hands an answer only to the process holding it
            raise McpServerError(INTERRUPTED_QUESTION.format(server=server.name))
        if live is None:  # a first run, or a run again (an interrupted call approved)
            live = LiveCall(lambda ask: connection.call(tool.name, dict(args or {}), on_elicit=ask))
        else:
            live.answer(answer_of(ctx.agent.resume_data, action))
        event = await live.next()
        if isinstance(event, Question):
            connection.live_calls[key] = live
            await ctx.agent.suspend(
                question_payload(server.name, event.params), resume_schema=_schema_of(event.params), live=True
            )
            return None
        if event.error is not None:
            raise event.error
        result = event.result
        if result.is_error:
            raise McpToolError(f"the MCP server {server.name!r} answered that {tool.name!r} failed: {_text(result)}")
        return result_of(result)

    return create_tool(
        id=name,
        description=tool.description or title or tool.name,
        input_schema=tool.input_schema or {"type": "object", "properties": {}},
        execute=execute,
        # the hints are the server's word: believed (no approval) only for read-only on a trusted server
        require_approval=not (read_only and server.trust_read_only_hints),
        title=title,
        source=f"MCP server `{server.name}`",
        hints=hints,
    )


def _schema_problem(tool: types.Tool) -> str | None:
    """Why the bot cannot check values against the tool's schemas (the server's word, unchecked until
    here), or None: a tool with such a schema is left out, the server's other tools are not."""
    for which, schema in (("input", tool.input_schema), ("output", tool.output_schema)):
        if schema is None:
            continue
        try:
            check_schema(schema)
        except InvalidSchemaError as exc:
            return f"its {which} schema is invalid: {exc.problem}"
    return None


def question_payload(server: str, params: types.ElicitRequestParams) -> dict[str, Any]:
    """The `suspend_payload` of a call whose server asked a question: its `message` and `requested_schema`
    (form mode), or its `url` (URL mode: the answer happens there, the call waits for the server)."""
    payload: dict[str, Any] = {"message": params.message, "mcp_server": server}
    if isinstance(params, types.ElicitRequestURLParams):
        payload["url"] = params.url
        return payload
    payload["requested_schema"] = _schema_of(params)
    return payload


def _schema_of(params: types.ElicitRequestParams) -> dict[str, Any] | None:
    schema = getattr(params, "requested_schema", None)
    if schema is None:
        return None
    return schema if isinstance(schema, dict) else schema.model_dump(by_alias=True, exclude_none=True)


def annotation_hints(annotations: types.ToolAnnotations | None) -> tuple[str, ...]:
    """The server's annotations in words, with the MCP spec's defaults for what it left out."""
    if annotations is None:
        return ("no hints",)
    if annotations.read_only_hint:
        words = ["read-only"]
    else:
        words = [
            "destructive" if annotations.destructive_hint is not False else "not destructive",
            "idempotent" if annotations.idempotent_hint else "not idempotent",
        ]
    words.append("open world" if annotations.open_world_hint is not False else "closed world")
    return tuple(words)


def result_of(result: types.CallToolResult) -> Any:
    """What the model reads of a result: the structured content when there is some, else the text."""
    if result.structured_content is not None:
        content = result.structured_content
        if isinstance(content, dict) and set(content) == {"result"}:
            return content["result"]  # the SDK wraps a plain return value this way
        return content
    return _text(result)


def _text(result: types.CallToolResult) -> str:
    parts = []
    for block in result.content:
        if isinstance(block, types.TextContent):
            parts.append(block.text)
        else:
            parts.append(json.dumps({"type": block.type, "note": "content the bot does not show"}))
    return "\n".join(parts)
