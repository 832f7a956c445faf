"""The playground's page in a real browser: headless Chromium (Debian's `chromium`) driven by Playwright,
against `python -m bot dev` run as a process, restarted like a user restarts it.

Marked `browser`. Where Chromium or Playwright is missing the tests skip with the reason, except under
CI (`CI` set), where `.ci/run` installs both and a missing one is a failure. Screenshots of each step are
written to the test's temporary folder.
"""

from __future__ import annotations

import asyncio
import os
import re
import signal
import sys
from pathlib import Path

import pytest

from tests.support.processes import free_port

pytestmark = pytest.mark.browser

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
ROOT = Path(__file__).resolve().parents[2]


def _missing() -> str | None:
    if not CHROMIUM.exists():
        return f"{CHROMIUM} is not installed (apt-get install chromium)"
    try:
        import playwright.async_api  # noqa: F401
    except ImportError:
        return "Playwright is not installed (pip install -e '.[test]')"
    return None


@pytest.fixture
async def browser():
    missing = _missing()
    if missing:
        if os.environ.get("CI"):
            pytest.fail(f"browser tests must run in CI: {missing}")
        pytest.skip(missing)
    from playwright.async_api import async_playwright

    async with async_playwright() as playwright:
        chromium = await playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            yield chromium
        finally:
            await chromium.close()


class DevProcess:
    """`python -m bot dev` on a fixed port and database, which a test stops and starts again."""

    def __init__(self, workdir: Path):
        self.workdir = workdir
        self.port = free_port()
        self.env = {
            **{k: v for k, v in os.environ.items() if not k.startswith(("SLACK_", "OPENAI_", "BOT_"))},
            "DATABASE_URL": f"sqlite+aiosqlite:///{workdir}/playground.db",
        }
        self.process: asyncio.subprocess.Process | None = None
        self.output = b""

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def start(self) -> None:
        self.process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "bot",
            "dev",
            "--port",
            str(self.port),
            cwd=ROOT,
            env=self.env,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
        )
        assert self.process.stdout is not None
        while True:
            line = await asyncio.wait_for(self.process.stdout.readline(), 60)
            self.output += line
            assert line, f"the playground did not start: {self.output.decode()}"
            if line.startswith(b"Stop with Ctrl-C"):
                assert f":{self.port}".encode() in self.output  # the same address as before
                return

    async def stop(self) -> None:
        """Ctrl-C, as a user stops it."""
        if self.process is None or self.process.returncode is not None:
            return
        self.process.send_signal(signal.SIGINT)
        rest, _ = await asyncio.wait_for(self.process.communicate(), 20)
        self.output += rest
        assert self.process.returncode == 0, self.output.decode()


@pytest.fixture
async def dev(tmp_path):
    process = DevProcess(tmp_path)
    await process.start()
    try:
        yield process
    finally:
        await process.stop()


async def test_an_approval_asked_before_a_restart_is_approved_with_its_old_button(browser, dev, tmp_path):
    from playwright.async_api import expect

    page = await browser.new_page(viewport={"width": 1280, "height": 800})
    await page.goto(dev.url)
    await page.locator("#composer-text").fill("@bot delete record 2")
    await page.locator("#composer-text").press("Enter")
    thread_pane = page.locator("#thread")
    approve = thread_pane.get_by_role("button", name="Approve", exact=True)
    await expect(approve).to_be_visible(timeout=20_000)
    await page.screenshot(path=tmp_path / "1-approval.png")

    await dev.stop()
    await expect(page.locator("body")).to_have_class(re.compile("offline"), timeout=10_000)
    await page.screenshot(path=tmp_path / "2-server-stopped.png")
    await dev.start()
    await expect(page.locator("body")).not_to_have_class(re.compile("offline"), timeout=20_000)  # back by itself
    await expect(approve).to_be_visible()  # the approval asked before the restart, with its buttons
    await page.screenshot(path=tmp_path / "3-after-restart.png")

    await approve.click()

    await expect(thread_pane).to_contain_text("Approved by", timeout=20_000)
    await expect(thread_pane).to_contain_text("record 2 is deleted", timeout=20_000)
    await expect(approve).to_have_count(0)
    await page.screenshot(path=tmp_path / "4-approved.png")


async def test_the_thread_pane_opens_closes_and_takes_replies_into_its_thread(browser, dev, tmp_path):
    from playwright.async_api import expect

    page = await browser.new_page(viewport={"width": 1280, "height": 800})
    await page.goto(dev.url)
    thread_pane, reply_box = page.locator("#thread"), page.locator("#reply-text")
    await expect(page.locator("#messages")).to_contain_text("Nothing here yet")
    await expect(thread_pane).to_be_hidden()  # no empty Thread pane on first load
    await page.screenshot(path=tmp_path / "1-first-load.png")

    await page.locator("#composer-text").fill("@bot hello")
    await page.locator("#composer-text").press("Enter")
    await expect(thread_pane).to_be_visible()
    await expect(thread_pane).to_contain_text("delete record 3", timeout=20_000)  # the bot's reply in the thread
    await reply_box.fill("a draft for this thread")
    await page.screenshot(path=tmp_path / "2-thread-open.png")

    await page.locator("#thread-close").click()
    await expect(thread_pane).to_be_hidden()
    await page.screenshot(path=tmp_path / "3-thread-closed.png")
    await page.locator("#composer-text").press("Enter")  # an empty composer: nothing is sent
    await page.keyboard.press("Enter")

    await page.locator("#messages a.replies").first.click()  # open the thread again from its reply count
    await expect(thread_pane).to_be_visible()
    await expect(reply_box).to_have_value("")  # the closed thread's draft was not kept for later
    await reply_box.fill("thanks, bot")
    await reply_box.press("Enter")

    await expect(thread_pane).to_contain_text("thanks, bot")
    await page.screenshot(path=tmp_path / "4-reply-in-thread.png")
    channel_messages = page.locator("#messages > .message")
    await expect(channel_messages).to_have_count(1)  # the reply did not land as a new message in #general
    await expect(page.locator("#messages a.replies")).to_contain_text("2 replies", timeout=20_000)


async def test_the_agents_steps_show_in_the_thread(browser, dev, tmp_path):
    """A call without approval (list-records) showed nothing but "thinking..." and then the answer; an
    approved one now shows as done in the answer after the approval, and the README's refund reads $30."""
    from playwright.async_api import expect

    page = await browser.new_page(viewport={"width": 1280, "height": 800})
    await page.goto(dev.url)
    await page.locator("#composer-text").fill("@bot list records")
    await page.locator("#composer-text").press("Enter")
    thread_pane = page.locator("#thread")
    step = thread_pane.locator(".bk-task[data-status=complete]", has_text="list-records")
    await expect(step).to_be_visible(timeout=20_000)
    await expect(thread_pane).to_contain_text("records:", timeout=20_000)
    await page.screenshot(path=tmp_path / "1-list-records-step.png")

    await page.locator("#thread-close").click()
    await page.locator("#composer-text").fill("@bot refund order A-1 $30")
    await page.locator("#composer-text").press("Enter")
    approve = thread_pane.get_by_role("button", name="Approve", exact=True)
    await expect(approve).to_be_visible(timeout=20_000)
    await expect(thread_pane).to_contain_text("30")
    await approve.click()
    done = thread_pane.locator(".bk-task[data-status=complete]", has_text="issue-refund")
    await expect(done).to_be_visible(timeout=20_000)
    await expect(thread_pane).to_contain_text("$30.00", timeout=20_000)
    await page.screenshot(path=tmp_path / "2-refund-step.png")


async def test_feedback_buttons_under_an_answer_record_a_rating_that_a_second_click_changes(browser, dev, tmp_path):
    """👍 / 👎 under the bot's finished answer: the pressed one shows, the clicker alone is thanked, a second
    click changes the rating, and Alice (an admin) sees the count per tool in her Home."""
    from playwright.async_api import expect

    page = await browser.new_page(viewport={"width": 1280, "height": 800})
    await page.goto(dev.url)
    await page.locator("#composer-text").fill("@bot list records")
    await page.locator("#composer-text").press("Enter")
    thread_pane = page.locator("#thread")
    await expect(thread_pane).to_contain_text("records:", timeout=20_000)
    up = thread_pane.get_by_role("button", name="This answer was helpful", exact=True)
    down = thread_pane.get_by_role("button", name="This answer was not helpful", exact=True)
    await expect(up).to_be_visible(timeout=20_000)
    await expect(up).to_have_attribute("aria-pressed", "false")
    await page.screenshot(path=tmp_path / "1-feedback-buttons.png")

    await up.click()
    await expect(up).to_have_attribute("aria-pressed", "true")
    await expect(thread_pane).to_contain_text("Thanks for your feedback", timeout=20_000)
    await down.click()
    await expect(down).to_have_attribute("aria-pressed", "true")
    await expect(up).to_have_attribute("aria-pressed", "false")
    await expect(thread_pane).to_contain_text("Your rating of this answer is now", timeout=20_000)
    await page.screenshot(path=tmp_path / "2-rating-changed.png")

    await page.locator("#home-link").click()
    await expect(page.locator("#messages")).to_contain_text("Feedback on answers", timeout=20_000)
    await expect(page.locator("#messages")).to_contain_text("list-records: 👍 0 · 👎 1", timeout=20_000)
    await page.screenshot(path=tmp_path / "3-home-feedback.png")


@pytest.mark.parametrize(
    ("person", "locale", "approve", "needed"),
    [
        ("UBOB", None, "核准", "需要核准"),
        ("UCAROL", None, "승인", "승인이 필요합니다"),
        ("UALICE", "ja-JP", "承認", "承認が必要です"),
    ],
    ids=["bob-zh-TW", "carol-ko", "alice-switched-to-ja"],
)
async def test_an_approval_in_the_persons_language(browser, dev, tmp_path, person, locale, approve, needed):
    """Bob reads Traditional Chinese and Carol Korean; Alice switches to Japanese from the page's menu. The
    screenshots show the CJK text (Debian's fonts-noto-cjk), not boxes."""
    from playwright.async_api import expect

    page = await browser.new_page(viewport={"width": 1280, "height": 800})
    await page.goto(dev.url)
    await page.locator("#who").select_option(person)
    if locale:
        await page.locator("#lang").select_option(locale)
    await expect(page.locator("#lang")).to_have_value(locale or {"UBOB": "zh-TW", "UCAROL": "ko-KR"}[person])
    await page.locator("#composer-text").fill("@bot delete record 2")
    await page.locator("#composer-text").press("Enter")
    thread_pane = page.locator("#thread")
    button = thread_pane.get_by_role("button", name=approve, exact=True)
    await expect(button).to_be_visible(timeout=20_000)
    await expect(thread_pane).to_contain_text(needed)
    await page.screenshot(path=tmp_path / f"approval-{person}.png")
