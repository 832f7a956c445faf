"""A tool's preview cannot stop `python -m bot serve`, stall an approval or leak a secret (issue 38, parts 4
and 5), in real processes (tests/cli/preview_agent.py), on SQLite and PostgreSQL: whatever the preview
raises, or if it hangs, the approval is posted with "Preview failed" and approving runs the tool; a
restart never runs the same preview again; what a failed preview (or tool) said is shown masked, and the
log alone has the full text."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from pathlib import Path

import aiohttp

from bot.slack_emulator import Message, SlackEmulator
from tests.support.processes import SECRET, bot_command, bot_env, free_port, start_bot, stop_bot
from tests.support.scripted_model import ScriptedModel, call, reply, tool_calls
from tests.support.slack import SignedSender

AGENT = "tests.cli.preview_agent:bot_agent"
ASKED = "清空 注文 表"
ANSWER = "已清空 注文。"
API_TOKEN = "api-令牌-Z9z9z9q"


@dataclass
class Bot:
    """One `serve` process of a test, and what the test reads of it."""

    port: int
    env: dict[str, str]
    log: Path
    previews: Path
    effects: Path
    slack: SlackEmulator
    process: asyncio.subprocess.Process | None = None

    @property
    def sender(self) -> SignedSender:
        return SignedSender(f"http://127.0.0.1:{self.port}/slack/events", SECRET, slack=self.slack)

    async def start(self) -> Bot:
        self.process = await start_bot(self.port, self.env, self.log, "--agent", AGENT)
        return self

    def previews_run(self) -> list[str]:
        return self.previews.read_text().splitlines() if self.previews.exists() else []

    def executions(self) -> list[str]:
        return self.effects.read_text().splitlines() if self.effects.exists() else []

    async def healthy(self) -> bool:
        async with aiohttp.ClientSession() as session, session.get(f"http://127.0.0.1:{self.port}/health") as answer:
            return answer.status == 200

    async def approval(self, count: int = 1) -> Message:
        posts = await self.slack.wait_for(
            "chat.postMessage", lambda c: "tool_approve" in str(c.params), count=count, timeout=30
        )
        return self.slack.posted_by(posts[-1])

    async def approve(self, approval: Message) -> None:
        assert (await self.sender.click(approval, "tool_approve", user="U2"))[0] == 200
        await self.slack.wait_for("chat.stopStream", timeout=30)
        await self.slack.settle()


def a_bot(database_url: str, slack: SlackEmulator, tmp_path: Path, **extra: str) -> Bot:
    previews, effects = tmp_path / "previews.log", tmp_path / "effects.log"
    quick = {"BOT_RECOVERY_INTERVAL": "0.5", "BOT_STALE_AFTER": "1", "BOT_API_TOKEN": API_TOKEN}
    env = bot_env(database_url, slack, PREVIEWS=str(previews), EFFECTS=str(effects), **quick, **extra)
    return Bot(free_port(), env, tmp_path / "bot.log", previews, effects, slack)


def ask_to_purge(model: ScriptedModel, *, proposals: int = 1) -> None:
    """The model proposes the purge (`proposals` times: again when a recovery asks it again), then answers."""
    for _ in range(proposals):
        model.chat.push(tool_calls(call("purge-rows", {"table": "注文"}, id="call_purge")))
    model.chat.push(reply(ANSWER))


def answered(slack: SlackEmulator, thread_ts: str) -> bool:
    return any(m.text == ANSWER for m in slack.thread("C1", thread_ts))


async def test_a_preview_raising_system_exit_leaves_the_bot_serving_and_is_never_run_again(
    database_url, slack, model, tmp_path
):
    ask_to_purge(model)
    bot = await a_bot(database_url, slack, tmp_path, PREVIEW_DOES="exit").start()
    try:
        event = bot.sender.mention(ASKED)
        assert (await bot.sender.event(event))[0] == 200
        approval = await bot.approval()
        assert "Preview failed" in approval.all_text and "SystemExit: 7" in approval.all_text
        assert approval.action_ids()[:2] == ["tool_approve", "tool_decline"]
        assert bot.process.returncode is None and await bot.healthy()
    finally:
        await stop_bot(bot.process)  # a clean stop: exit code 0

    await bot.start()  # the restart's recovery passes meet the waiting call
    try:
        await asyncio.sleep(2)  # several recovery passes (every 0.5 s)
        await bot.approve(approval)
        assert bot.executions() and len(bot.executions()) == 1 and answered(slack, event["ts"])
        assert len(bot.previews_run()) == 1  # run once, by the first process only
    finally:
        await stop_bot(bot.process)


async def test_a_preview_that_ends_the_process_is_not_run_again_after_the_restart(database_url, slack, model, tmp_path):
    """`os._exit` inside the preview ends the process, as a crash would; the restart's recovery asks the model
    again, meets the same call and posts its approval with the preview failed, without running it again."""
    ask_to_purge(model, proposals=2)
    bot = await a_bot(database_url, slack, tmp_path, PREVIEW_DOES="os_exit").start()
    event = bot.sender.mention(ASKED)
    assert (await bot.sender.event(event))[0] == 200
    assert await asyncio.wait_for(bot.process.wait(), 30) == 7
    assert len(bot.previews_run()) == 1

    await bot.start()
    try:
        approval = await bot.approval()
        assert approval.thread_ts == event["ts"]
        assert "Preview failed" in approval.all_text and "not run again" in approval.all_text
        await bot.approve(approval)
        assert len(bot.executions()) == 1 and answered(slack, event["ts"])
        assert len(bot.previews_run()) == 1
    finally:
        await stop_bot(bot.process)


async def test_a_preview_raising_cancelled_error_still_posts_the_approval(database_url, slack, model, tmp_path):
    ask_to_purge(model)
    bot = await a_bot(database_url, slack, tmp_path, PREVIEW_DOES="cancel").start()
    try:
        event = bot.sender.mention(ASKED)
        assert (await bot.sender.event(event))[0] == 200
        approval = await bot.approval()
        assert "Preview failed" in approval.all_text and "CancelledError" in approval.all_text
        await bot.approve(approval)
        assert len(bot.executions()) == 1 and answered(slack, event["ts"])
        await asyncio.sleep(2)  # recovery passes: the preview is not run again
        assert len(bot.previews_run()) == 1
    finally:
        await stop_bot(bot.process)


async def test_a_hanging_preview_is_cut_off_by_its_time_bound(database_url, slack, model, tmp_path):
    ask_to_purge(model)
    bot = await a_bot(database_url, slack, tmp_path, PREVIEW_DOES="hang", PREVIEW_TIMEOUT="1").start()
    try:
        event = bot.sender.mention(ASKED)
        assert (await bot.sender.event(event))[0] == 200
        approval = await bot.approval()
        assert "Preview failed" in approval.all_text and "did not answer within 1 s" in approval.all_text
        await bot.approve(approval)
        assert len(bot.executions()) == 1 and answered(slack, event["ts"])
    finally:
        await stop_bot(bot.process)


async def test_what_a_failed_preview_or_tool_said_is_shown_without_secrets(database_url, slack, model, tmp_path):
    """The preview's error names a database URL with its password, a Slack token and the bot's API token;
    the tool then fails with the same words. The thread, the audit trail and the model see them masked;
    the bot's log has the full text."""
    ask_to_purge(model)
    failure = "write failed: postgres://admin:s3cr3t-密码@db/prod {api_token}"
    bot = a_bot(database_url, slack, tmp_path, PREVIEW_DOES="secret", EXECUTE_FAILS_WITH=failure)
    await bot.start()
    try:
        event = bot.sender.mention(ASKED)
        assert (await bot.sender.event(event))[0] == 200
        approval = await bot.approval()
        assert "Preview failed" in approval.all_text
        assert "postgres://admin:***@db/prod (东京 リージョン) with xoxb-***" in approval.all_text
        await bot.approve(approval)
        assert len(bot.executions()) == 1
    finally:
        await stop_bot(bot.process)

    leaks = ("s3cr3t", "leakedtoken", API_TOKEN)
    slack_text = json.dumps([c.params for c in slack.calls], ensure_ascii=False)
    assert "postgres://admin:***@db/prod" in slack_text and not [s for s in leaks if s in slack_text]
    model_text = json.dumps(model.requests, ensure_ascii=False)
    assert "write failed: postgres://admin:***@db/prod ***" in model_text  # the tool's error, as the model read it
    assert not [s for s in leaks if s in model_text]

    code, out, _ = await bot_command("audit", "--format", "jsonl", database_url=database_url)
    assert code == 0
    audit = {line["action"]: line for line in map(json.loads, out.splitlines())}
    assert audit["requested"]["detail"].startswith(
        "preview failed: ConnectionError: could not reach db at postgres://admin:***@db/prod (东京 リージョン) "
        "with xoxb-*** and key ***"
    )
    assert audit["failed"]["detail"] == "RuntimeError: write failed: postgres://admin:***@db/prod ***"
    assert not [s for s in leaks if s in out]

    log = bot.log.read_text()
    assert "postgres://admin:s3cr3t-密码@db/prod" in log and "xoxb-1111-2222-leakedtoken" in log
