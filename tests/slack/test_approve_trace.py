"""ARCHITECTURE.md names the files one Approve click passes through: a trace of a real click (the Bolt app
over HTTP, the emulated Slack, the scripted model, SQLite and PostgreSQL) must find those files, no more
and no fewer, so the count cannot drift from the code."""

from __future__ import annotations

import re

import pytest

from tests.support.code_trace import CLICK, RELAY, ROOT, RUN, CodeTrace

from .harness import RunningBot, ask_to_delete, record_ids

pytestmark = pytest.mark.both_databases

SECTION = "### The files of that path, traced"
ONLY_ON = {"SQLite": "sqlite", "PostgreSQL": "postgresql"}
"""A file's note in the tables when it runs on one database only, and how that database's URL starts."""


def documented(subsection: str, database_url: str) -> set[str]:
    """The files of `subsection`'s table in ARCHITECTURE.md's traced section, for this database."""
    text = (ROOT / "ARCHITECTURE.md").read_text()
    section = text.split(SECTION, 1)[1].split("\n## ", 1)[0]
    table = section.split(f"#### {subsection}", 1)[1].split("\n#### ", 1)[0]
    rows = re.findall(r"^\| \d+ \| `([^`]+)`(?: \((SQLite|PostgreSQL)\))? \|", table, re.MULTILINE)
    assert rows, f"no table under '#### {subsection}'"
    return {path for path, only in rows if not only or database_url.startswith(ONLY_ON[only])}


async def test_an_approve_click_passes_through_the_files_architecture_md_names(
    bot: RunningBot, model, database_url: str
):
    ask_to_delete(model)
    await bot.mention("delete record 3")
    message = await bot.approval_message()
    await bot.slack.settle()
    trace = CodeTrace(entry="build_web_app.<locals>.slack_events")
    with trace.running():
        await bot.sender.click(message, "tool_approve", user="U2")
        await bot.slack.wait_for("chat.stopStream")
        await trace.settled()  # the relay's last reads, the Home's refresh
    assert await record_ids(bot) == [1, 2, 4, 5]  # the click did what it does

    click = trace.files(CLICK)
    # who may approve is decided in the runtime's one box, for this click as for every surface
    assert {"bot/agent/_deciding.py", "bot/agent/_authorize.py"} <= click, "the rule did not decide the click"
    named = documented("The click", database_url)
    assert click == named, f"ran, not named: {sorted(click - named)}; named, did not run: {sorted(named - click)}"
    went_on = trace.files(RELAY, RUN) - click
    named = documented("The run going on", database_url)
    assert went_on == named, f"ran, not named: {sorted(went_on - named)}; named, not run: {sorted(named - went_on)}"
