"""The MCP servers file: the `{"mcpServers": {...}}` format other MCP clients use, read and checked.

`${VAR}` in a server's `env` and `headers` values is read from the environment given (the settings'
reader of it); the values are secrets and are never logged or shown, only the names of missing ones.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from bot.defaults import MCP_CALL_TIMEOUT, MCP_MAX_SESSIONS, MCP_SESSION_IDLE, MCP_START_TIMEOUT

SERVER_NAME = re.compile(r"[a-z0-9-]{1,32}")
"""What a server's name may be: it becomes the prefix of its tools' names (`NAME__TOOL`)."""
TRUST_READ_ONLY_HINTS = "read-only-hints"
"""The one `trust` value: a tool of this server that says `readOnlyHint: true` runs without approval."""
_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
_PYTHON = {"python", "python3"}


class McpConfigError(ValueError):
    """The MCP servers file cannot be used; the message is one line naming the file, the server and the fix."""


@dataclass(frozen=True, kw_only=True)
class McpServerConfig:
    """One server of the file."""

    name: str
    command: str | None = None
    """The program the bot starts (stdio); `python`/`python3` mean the Python the bot runs on."""
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict, repr=False)
    """Extra environment of the started process, `${VAR}` expanded (secrets: never shown)."""
    cwd: str | None = None
    url: str | None = None
    """The Streamable HTTP endpoint (instead of `command`)."""
    headers: Mapping[str, str] = field(default_factory=dict, repr=False)
    """HTTP headers of every request, `${VAR}` expanded (secrets: never shown)."""
    trust_read_only_hints: bool = False
    """`"trust": "read-only-hints"`: believe this server's `readOnlyHint` and run such tools without approval."""
    call_timeout: float = MCP_CALL_TIMEOUT
    """Seconds one call may take (time spent waiting for a human's answer to an elicitation not counted)."""
    start_timeout: float = MCP_START_TIMEOUT
    """Seconds the server has to start and list its tools."""
    max_sessions: int = MCP_MAX_SESSIONS
    """Sessions (stdio: processes) open at once at most; each call holds one alone while it runs."""
    idle_timeout: float = MCP_SESSION_IDLE
    """Seconds a session may stay unused before it is closed (one always stays open)."""
    allow_http_loopback: bool = False
    """Offer the server's `http://` links to this machine in URL-mode questions (local development);
    only `https://` links otherwise."""

    @property
    def transport(self) -> str:
        return "stdio" if self.command is not None else "http"


def load_mcp_config(
    path: str | Path, environ: Mapping[str, str], *, allow_http_loopback: bool = False
) -> list[McpServerConfig]:
    """The servers of the file at `path`, checked; `environ` gives the values of `${VAR}`;
    `allow_http_loopback` (`BOT_MCP_ALLOW_HTTP_LOOPBACK`) lets URL-mode questions link to this machine."""
    where = f"the MCP servers file {str(path)!r}"
    try:
        document = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise McpConfigError(f"cannot read {where}: {exc.strerror or exc}") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise McpConfigError(f"{where} is not valid JSON ({exc})") from None
    servers = document.get("mcpServers") if isinstance(document, dict) else None
    if not isinstance(servers, dict):
        raise McpConfigError(f'{where} needs an object "mcpServers": {{NAME: {{"command": ...}} or {{"url": ...}}}}')
    return [
        replace(_server(name, entry, where, environ), allow_http_loopback=allow_http_loopback)
        for name, entry in servers.items()
    ]


def _server(name: str, entry: Any, where: str, environ: Mapping[str, str]) -> McpServerConfig:
    if not isinstance(name, str) or not SERVER_NAME.fullmatch(name):
        raise McpConfigError(
            f"{where}: the server name {name!r} must be 1 to 32 characters of a-z, 0-9 and '-' "
            "(it becomes the prefix of its tools' names)"
        )
    here = f"{where}, server {name!r}"
    if not isinstance(entry, dict):
        raise McpConfigError(f'{here}: expected an object with "command" (stdio) or "url" (Streamable HTTP)')
    command, url = entry.get("command"), entry.get("url")
    if (command is None) == (url is None):
        raise McpConfigError(f'{here}: give exactly one of "command" (stdio) and "url" (Streamable HTTP)')
    trust = entry.get("trust")
    if trust not in (None, TRUST_READ_ONLY_HINTS):
        raise McpConfigError(f'{here}: "trust" may only be "{TRUST_READ_ONLY_HINTS}", not {trust!r}')
    options: dict[str, Any] = {
        "name": name,
        "trust_read_only_hints": trust == TRUST_READ_ONLY_HINTS,
        "call_timeout": _seconds(entry, "timeout", MCP_CALL_TIMEOUT, here),
        "start_timeout": _seconds(entry, "startTimeout", MCP_START_TIMEOUT, here),
        "max_sessions": _count(entry, "maxSessions", MCP_MAX_SESSIONS, here),
        "idle_timeout": _seconds(entry, "idleTimeout", MCP_SESSION_IDLE, here),
    }
    if command is not None:
        if not isinstance(command, str) or not command:
            raise McpConfigError(f'{here}: "command" must be a non-empty string')
        args = entry.get("args", [])
        if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
            raise McpConfigError(f'{here}: "args" must be a list of strings')
        cwd = entry.get("cwd")
        if cwd is not None and not isinstance(cwd, str):
            raise McpConfigError(f'{here}: "cwd" must be a string')
        return McpServerConfig(
            command=sys.executable if command in _PYTHON else command,
            args=tuple(args),
            env=_expanded(entry, "env", here, environ),
            cwd=cwd,
            **options,
        )
    if not isinstance(url, str) or not url.startswith(("http://", "https://")):
        raise McpConfigError(f'{here}: "url" must be an http:// or https:// URL')
    return McpServerConfig(url=url, headers=_expanded(entry, "headers", here, environ), **options)


def _seconds(entry: dict[str, Any], key: str, default: float, here: str) -> float:
    value = entry.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        raise McpConfigError(f'{here}: "{key}" must be a positive number of seconds')
    return float(value)


def _count(entry: dict[str, Any], key: str, default: int, here: str) -> int:
    value = entry.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise McpConfigError(f'{here}: "{key}" must be a whole number, 1 or more')
    return value


def _expanded(entry: dict[str, Any], key: str, here: str, environ: Mapping[str, str]) -> dict[str, str]:
    values = entry.get(key, {})
    if not isinstance(values, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in values.items()):
        raise McpConfigError(f'{here}: "{key}" must be an object of strings')

    def value_of(match: re.Match[str]) -> str:
        variable = match.group(1)
        if variable not in environ:
            raise McpConfigError(f'{here}: "{key}" uses ${{{variable}}}, which is not set in the environment')
        return environ[variable]

    return {k: _VARIABLE.sub(value_of, v) for k, v in values.items()}
