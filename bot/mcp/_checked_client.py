"""The MCP SDK's client session, with a tool's structured result checked against the tool's output schema
by `tools.Schema` (patterns on RE2) instead of by the SDK's own check, which runs Python's `re` on the
event loop: a server's output schema with `^(a+)+$` and a result of 26 "a" and a "!" would stall the bot.
"""

from __future__ import annotations

from typing import Any

import mcp.types as types
from mcp import ClientSession

from tools import InvalidSchemaError, Schema, SchemaValidationError


class CheckedClientSession(ClientSession):
    """A `ClientSession` whose result check cannot stall the loop; the same errors as the SDK's."""

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self._output_schemas: dict[str, dict[str, Any] | None] = {}
        """Tool name -> its output schema, from the server's last listing of it."""

    async def list_tools(self, *, params: types.PaginatedRequestParams | None = None) -> types.ListToolsResult:
        result = await super().list_tools(params=params)
        self._output_schemas.update((tool.name, tool.output_schema) for tool in result.tools)
        return result

    async def validate_tool_result(self, name: str, result: types.CallToolResult) -> None:
        if name not in self._output_schemas:
            await self.list_tools()  # a session that has not listed the tools yet (as the SDK does)
        schema = self._output_schemas.get(name)
        if schema is None:
            return
        if result.structured_content is None:
            raise RuntimeError(f"Tool {name} has an output schema but did not return structured content")
        try:
            Schema(schema).validate(result.structured_content)
        except InvalidSchemaError as exc:
            raise RuntimeError(f"Invalid schema for tool {name}: {exc}") from None
        except SchemaValidationError as exc:
            raise RuntimeError(f"Invalid structured content returned by tool {name}: {exc}") from None
