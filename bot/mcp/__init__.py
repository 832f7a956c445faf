"""MCP servers as tool sources: read the servers file, start or connect to each server (stdio or
Streamable HTTP), and give the agent their tools as `tools.Tool`s (`SERVER__TOOL`).

It imports `tools` and `bot.defaults` (and the `mcp` SDK), never the runtime or an adapter: the bot's
command line adds these tools to the agent like any other, so policies, approvals, storage and the
HTTP API treat them as every tool.
"""

from ._config import TRUST_READ_ONLY_HINTS, McpConfigError, McpServerConfig, load_mcp_config
from ._connection import McpServerError, ServerConnection
from ._tools import McpServers, McpToolError, annotation_hints, connect_mcp_servers, mcp_tool

__all__ = [
    "TRUST_READ_ONLY_HINTS",
    "McpConfigError",
    "McpServerConfig",
    "McpServerError",
    "McpServers",
    "McpToolError",
    "ServerConnection",
    "annotation_hints",
    "connect_mcp_servers",
    "load_mcp_config",
    "mcp_tool",
]
