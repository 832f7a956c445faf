"""How the bot logs: quiet by default, as text or as JSON lines.

At the default level (INFO) the console shows the bot's own lines (one at start, one per turn, one
per decision) and warnings; the chatter of the libraries under it (Alembic's migration steps, the line
per model request of httpx, or of httpx2 under openai 3.x, aiohttp's access log, the Slack SDK's retry
and session notes) shows only at DEBUG. A line about a run carries its context as `extra` fields: `run_id`, `thread_id`, `tool`,
`decision`; JSON lines have them as keys, text lines as `key=value` at the end. Expected failures
(a reconnect to Slack that failed) are one line (`one_line`); an unexpected error keeps its traceback.
"""

from __future__ import annotations

import json
import logging
import sys
from datetime import UTC, datetime
from typing import Any, Literal

LogFormat = Literal["text", "json"]
LOG_FORMATS: tuple[LogFormat, ...] = ("text", "json")
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")

CONTEXT_FIELDS = ("run_id", "thread_id", "tool", "decision", "outcome")
"""Fields a log call may pass in `extra`; both formats print them."""

CHATTY_LOGGERS = (
    "alembic",
    "httpx",
    "httpcore",
    "httpx2",  # openai 3.x sends its requests through httpx2 and httpcore2 (httpx's line per request)
    "httpcore2",
    "openai",
    "aiohttp.access",
    "slack_sdk",
    "slack_bolt",
    "bot.slack.socket",
)
"""Libraries that talk at INFO about things an operator does not need to see; raised to WARNING unless
the level is DEBUG."""

LEVELLED_LOGGERS = ("bot", "bot.slack")
"""Given the level explicitly: the Slack SDK logs its retries at INFO through Bolt's logger (`bot.slack`)
whenever that logger's own level is unset."""


class TextFormatter(logging.Formatter):
    """`time LEVEL logger: message key=value ...` (and the traceback of an unexpected error)."""

    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)s %(name)s: %(message)s")

    def format(self, record: logging.LogRecord) -> str:
        context = " ".join(f"{key}={value}" for key, value in context_of(record).items())
        if not context:
            return super().format(record)
        first, newline, rest = super().format(record).partition("\n")
        return f"{first} {context}{newline}{rest}"


class JsonFormatter(logging.Formatter):
    """One JSON object a line: `time`, `level`, `logger`, `message`, the context fields, and for an
    exception `error` (its type and text) and `traceback`."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
            **context_of(record),
        }
        if record.exc_info and record.exc_info[1] is not None:
            error = record.exc_info[1]
            entry["error"] = f"{type(error).__name__}: {error}"
            entry["traceback"] = self.formatException(record.exc_info)
        return json.dumps(entry, ensure_ascii=False, default=str)


def context_of(record: logging.LogRecord) -> dict[str, Any]:
    return {key: getattr(record, key) for key in CONTEXT_FIELDS if getattr(record, key, None) is not None}


def one_line(record: logging.LogRecord) -> bool:
    """A logging filter: the record's traceback folded into its message as the exception's type and text."""
    if record.exc_info and record.exc_info[1] is not None:
        error = record.exc_info[1]
        record.msg, record.args = f"{record.getMessage()} ({type(error).__name__})", None
        record.exc_info = record.exc_text = None
    return True


def configure_logging(level: str = "INFO", log_format: LogFormat = "text", *, stream: Any = None) -> None:
    """Send every log line to stderr (or `stream`) at `level`, as text or JSON lines."""
    numeric = logging.getLevelName(level.upper())
    if not isinstance(numeric, int):
        raise ValueError(f"unknown log level {level!r}: use one of {', '.join(LOG_LEVELS)}")
    debug = numeric <= logging.DEBUG
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(JsonFormatter() if log_format == "json" else TextFormatter())
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(numeric)
    for name in LEVELLED_LOGGERS:
        logging.getLogger(name).setLevel(numeric)
    for name in CHATTY_LOGGERS:
        logging.getLogger(name).setLevel(numeric if debug else max(numeric, logging.WARNING))
