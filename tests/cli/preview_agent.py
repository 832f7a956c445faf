"""An agent whose tool's preview misbehaves on purpose, for `python -m bot serve --agent
tests.cli.preview_agent:bot_agent` (tests/cli/test_preview_contained.py).

From the environment: `PREVIEW_DOES` (what the preview does), `PREVIEWS` (a file every preview appends a
line to, with O_APPEND, across processes), `EFFECTS` (a file every execution appends to),
`PREVIEW_TIMEOUT` (seconds, default 5), `EXECUTE_FAILS_WITH` (the text `execute` raises, when set).

    exit         raise SystemExit(7)
    os_exit      end the process at once (os._exit(7)): nothing in the process can contain that
    cancel       raise asyncio.CancelledError by itself
    hang         never answer
    secret       raise an error that names a database URL with its password and Slack tokens
    says         answer with text in Chinese, Japanese and Korean
"""

from __future__ import annotations

import asyncio
import os

from pydantic import BaseModel

from tools import create_tool

SECRET_ERROR = (
    "could not reach db at postgres://admin:s3cr3t-密码@db/prod (东京 リージョン) "
    "with xoxb-1111-2222-leakedtoken and key {api_token}"
)


class Rows(BaseModel):
    table: str


def _append(variable: str, line: str) -> None:
    fd = os.open(os.environ[variable], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, (line + "\n").encode())
    finally:
        os.close(fd)


async def preview(input: Rows, ctx) -> str:
    _append("PREVIEWS", f"preview {input.table} {ctx.tool_call_id} pid={os.getpid()}")
    does = os.environ.get("PREVIEW_DOES", "says")
    if does == "exit":
        raise SystemExit(7)
    if does == "os_exit":
        os._exit(7)
    if does == "cancel":
        raise asyncio.CancelledError
    if does == "hang":
        await asyncio.Event().wait()
    if does == "secret":
        raise ConnectionError(SECRET_ERROR.format(api_token=os.environ.get("BOT_API_TOKEN", "")))
    return f"将清空表 {input.table}：東京 3 行、서울 2 行を削除"


async def execute(input: Rows, ctx) -> dict:
    _append("EFFECTS", f"purged {input.table} pid={os.getpid()}")
    failure = os.environ.get("EXECUTE_FAILS_WITH")
    if failure:
        raise RuntimeError(failure.format(api_token=os.environ.get("BOT_API_TOKEN", "")))
    return {"purged": input.table}


def bot_agent():
    from bot.agent import Agent

    tool = create_tool(
        id="purge-rows",
        description="Delete every row of a table",
        input_schema=Rows,
        require_approval=True,
        execute=execute,
        preview=preview,
        preview_timeout=float(os.environ.get("PREVIEW_TIMEOUT", "5")),
    )
    return Agent(id="purge-agent", model="openai/test-model", tools=[tool])
