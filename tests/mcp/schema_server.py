"""An MCP server (the SDK's low-level `Server`, over stdio) whose tools carry schemas a bot must not trust.

    python tests/mcp/schema_server.py [--tools echo,ask]    # stdio; all the tools unless named

Tools: `bad_pattern` (input `pattern` "(unclosed"), `bad_type` (`"type": 5`), `bad_output`
(an output schema with `"type": "strng"`), `echo` (a healthy tool whose `word` has the catastrophic
pattern `^(a+)+$`), `shout` (returns the word as structured content, whose output schema has that
pattern), and `ask` (asks a question whose requested schema is `kind`: `evil`, with the
catastrophic pattern, or `strng`, an invalid schema; it returns what it heard, or the error it got).
"""

from __future__ import annotations

import json
import sys
from typing import Any

import anyio
import mcp.types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError

EVIL = "^(a+)+$"
"""Backtracks exponentially on Python's `re`: 26 "a" and a "!" take seconds, 30 about 40 s."""

WORD = {"type": "object", "properties": {"word": {"type": "string"}}, "required": ["word"]}

TOOLS = [
    types.Tool(
        name="bad_pattern",
        description="A tool whose input pattern is not a regular expression",
        input_schema={"type": "object", "properties": {"q": {"type": "string", "pattern": "(unclosed"}}},
    ),
    types.Tool(
        name="bad_type",
        description="A tool whose input schema has a type that is a number",
        input_schema={"type": "object", "properties": {"n": {"type": 5}}},
    ),
    types.Tool(
        name="bad_output",
        description="A tool whose output schema is invalid",
        input_schema=WORD,
        output_schema={"type": "object", "properties": {"said": {"type": "strng"}}},
    ),  # fmt: skip
    types.Tool(
        name="echo",
        description="Say the word back (a word of only a's)",
        input_schema={
            "type": "object",
            "properties": {"word": {"type": "string", "pattern": EVIL}},
            "required": ["word"],
        },
        annotations=types.ToolAnnotations(read_only_hint=True),
    ),
    types.Tool(
        name="shout",
        description="Say the word back as structured content (its output schema has the catastrophic pattern)",
        input_schema=WORD,
        output_schema={"type": "object", "properties": {"said": {"type": "string", "pattern": EVIL}}},
        annotations=types.ToolAnnotations(read_only_hint=True),
    ),
    types.Tool(
        name="ask",
        description="Ask the user for a code",
        input_schema={"type": "object", "properties": {"kind": {"enum": ["evil", "strng"]}}, "required": ["kind"]},
    ),
]

QUESTIONS: dict[str, dict[str, Any]] = {
    "evil": {"type": "object", "properties": {"code": {"type": "string", "pattern": EVIL}}, "required": ["code"]},
    "strng": {"type": "object", "properties": {"code": {"type": "strng"}}, "required": ["code"]},
}


async def list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
    named = sys.argv[sys.argv.index("--tools") + 1].split(",") if "--tools" in sys.argv else None
    return types.ListToolsResult(tools=[tool for tool in TOOLS if named is None or tool.name in named])


async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
    args = params.arguments or {}
    if params.name == "shout":
        said = {"said": args.get("word")}
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=json.dumps(said))], structured_content=said
        )
    if params.name == "echo":
        text = f"echo: {args.get('word')}"
    elif params.name == "ask":
        kind = args.get("kind", "evil")
        try:
            answer = await ctx.session.elicit_form(f"代码是什么？ ({kind})", QUESTIONS[kind], ctx.request_id)
            text = f"heard {answer.action}: {json.dumps(answer.content, ensure_ascii=False)}"
        except MCPError as exc:
            text = f"the client refused the question: {exc.message}"
    else:
        text = f"{params.name} ran"
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)])


server = Server("schemas", on_list_tools=list_tools, on_call_tool=call_tool)


async def main() -> None:
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)
