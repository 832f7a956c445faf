"""The README's scenarios as a newcomer follows them, end to end: `python -m bot dev` as a process in a fresh
folder with nothing configured, the page's requests (`/play/*`) as Alice and Bob, the demo phrases the README
names, approve / decline with a reason / edit the arguments, a question answered in the thread, a rating of
an answer, then the admin walk-through (README "A walk-through") with `python -m bot policy list|set
--playground` and `python -m bot audit --playground` as real processes reaching the playground's database.

Nothing anyone runs prints a traceback; every step is checked by what a user sees.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import socket
import sys
from pathlib import Path

import aiohttp

from tests.playground.browser import (
    ALICE,
    BOB,
    GENERAL,
    PlaygroundPage,
    action_ids,
    from_bot,
    shown_text,
    thread,
)

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()


def clean_env() -> dict[str, str]:
    """A newcomer's environment: nothing of the bot's configured (no DATABASE_URL, no keys)."""
    return {
        k: v for k, v in os.environ.items() if not k.startswith(("SLACK_", "OPENAI_", "BOT_")) and k != "DATABASE_URL"
    }


class Playground:
    """`python -m bot dev --port N` in `folder`, its output in a file (read at the end, all of it)."""

    def __init__(self, folder: Path):
        self.folder = folder
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.log = folder / "dev-output.txt"
        self.process: asyncio.subprocess.Process | None = None

    async def __aenter__(self) -> Playground:
        self._out = self.log.open("wb")
        self.process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "bot", "dev", "--port", str(self.port),
            cwd=self.folder, env=clean_env(), stdout=self._out, stderr=asyncio.subprocess.STDOUT,
        )  # fmt: skip
        for _ in range(600):
            if "Stop with Ctrl-C" in self.output():
                return self
            assert self.process.returncode is None, self.output()
            await asyncio.sleep(0.1)
        raise AssertionError(f"the playground did not start: {self.output()}")

    async def __aexit__(self, *exc) -> None:
        assert self.process is not None
        if self.process.returncode is None:
            self.process.send_signal(signal.SIGINT)  # Ctrl-C, as the README says
            await asyncio.wait_for(self.process.wait(), 20)
        self._out.close()

    def output(self) -> str:
        return self.log.read_text(errors="replace")


async def cli(folder: Path, *args: str) -> tuple[int, str, str]:
    """`python -m bot ARGS` run in `folder` as the README writes it."""
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bot", *args, cwd=folder, env=clean_env(), stdout=-1, stderr=-1
    )
    out, err = await asyncio.wait_for(process.communicate(), 60)
    return process.returncode, out.decode(), err.decode()


def no_traceback(*texts: str) -> None:
    for text in texts:
        assert "Traceback" not in text and "Exception in" not in text, text


async def approval_in(page: PlaygroundPage, ts: str, *, user: str = ALICE) -> dict:
    found = await page.wait_for(lambda s: [m for m in thread(s, ts) if action_ids(m)], user=user, what="the approval")
    return found[0]


async def said(page: PlaygroundPage, ts: str, words: str, *, user: str = ALICE, channel: str = GENERAL) -> dict:
    """The bot's finished message in the thread that contains `words`."""
    found = await page.wait_for(
        lambda s: [m for m in from_bot(thread(s, ts, channel)) if words in shown_text(m) and not m["streaming"]],
        user=user,
        what=f"the bot saying {words!r}",
    )
    return found[0]


async def modal_of(page: PlaygroundPage, user: str) -> dict:
    return await page.wait_for(lambda s: s.get("modal"), user=user, what=f"{user}'s modal")


def input_block(modal: dict, kind: str) -> dict:
    return next(b for b in modal["view"]["blocks"] if b["type"] == "input" and b["element"]["type"] == kind)


def home_text(state: dict) -> str:
    return shown_text({"text": "", "blocks": (state.get("home") or {}).get("blocks", [])})


def home_button(state: dict, action_id: str, value: str | None = None) -> dict | None:
    for block in (state.get("home") or {}).get("blocks", []):
        elements = list(block.get("elements") or []) + ([block["accessory"]] if block.get("accessory") else [])
        for element in elements:
            if element.get("action_id") == action_id and (value is None or element.get("value") == value):
                return {"block_id": block.get("block_id"), "action_id": action_id, "value": element.get("value")}
    return None


def table(out: str) -> dict[str, list[str]]:
    return {line.split()[0]: line.split()[1:] for line in out.strip().splitlines()[1:]}


async def test_the_readme_walk_through_as_a_newcomer_follows_it(tmp_path):
    # The README's own commands and phrases, so that a README edit that breaks them fails here.
    for phrase in ("delete record 2", "refund $25 for", "order A-1001", "refund order A-1 $30", "what's the weather?"):
        assert phrase in README, phrase
    assert 'python -m bot policy set delete-record --expires 30 --approvers "" --playground' in README
    assert "python -m bot audit --tool delete-record --playground" in README

    async with Playground(tmp_path) as dev, aiohttp.ClientSession() as session:
        banner = dev.output()
        assert f"http://127.0.0.1:{dev.port}" in banner
        assert "python -m bot policy list --playground" in banner and "python -m bot audit --playground" in banner
        page = PlaygroundPage(f"http://127.0.0.1:{dev.port}", session)

        # --- The playground: the demo phrases ------------------------------------------------------
        ts = await page.say("@bot delete record 2")
        approval = await approval_in(page, ts)
        assert '"id": 2' in shown_text(approval)
        await page.click(approval, "tool_approve", user=BOB)  # Bob approves Alice's request
        await page.wait_for(
            lambda s: [m for m in thread(s, ts) if "Approved by <@UBOB>" in shown_text(m)], what="approved by Bob"
        )
        await said(page, ts, "record 2 is deleted")

        ts = await page.say("@bot refund $25 for order A-1001")
        approval = await approval_in(page, ts)
        assert '"amount": 25' in shown_text(approval) and '"order_id": "A-1001"' in shown_text(approval)
        await page.click(approval, "tool_decline_with_reason", user=BOB)
        modal = await modal_of(page, BOB)
        await page.submit(modal, {input_block(modal, "plain_text_input")["block_id"]: "pas aujourd'hui"}, user=BOB)
        await page.wait_for(
            lambda s: [m for m in thread(s, ts) if "Reason: pas aujourd'hui" in shown_text(m)], what="the reason"
        )
        assert "pas aujourd'hui" in (await said(page, ts, "did not run"))["text"]

        ts = await page.say("@bot refund order A-1 $30")
        approval = await approval_in(page, ts)
        assert '"amount": 30' in shown_text(approval) and '"order_id": "A-1"' in shown_text(approval)
        await page.click(approval, "tool_edit_args")
        modal = await modal_of(page, ALICE)
        amount = next(
            b for b in modal["view"]["blocks"] if b["type"] == "input" and "amount" in json.dumps(b["label"]).lower()
        )
        refused = await page.submit(modal, {**_initial_values(modal), amount["block_id"]: "-5"})
        assert refused["ok"] is False and amount["block_id"] in refused["errors"]  # the field's error, nothing ran
        await page.submit(modal, {**_initial_values(modal), amount["block_id"]: "20"})
        await page.wait_for(
            lambda s: [m for m in thread(s, ts) if "Approved with edited arguments" in shown_text(m)], what="edited"
        )
        assert "$20.00" in (await said(page, ts, "$20.00"))["text"]

        ts = await page.say("@bot 退款 订单 A-7 30美元")
        approval = await approval_in(page, ts)
        assert '"amount": 30' in shown_text(approval) and '"order_id": "A-7"' in shown_text(approval)
        await page.click(approval, "tool_decline", user=BOB)
        await said(page, ts, "did not run")

        ts = await page.say("@bot what's the weather?")
        question = (
            await page.wait_for(lambda s: [m for m in thread(s, ts) if "Which city?" in shown_text(m)], what="asked")
        )[0]
        await page.say("Lyon", thread_ts=ts)
        await page.wait_for(
            lambda s: [m for m in thread(s, ts) if m["ts"] == question["ts"] and "city = Lyon" in shown_text(m)],
            what="✅ Answered in the thread: city = Lyon",
        )
        answer = await said(page, ts, "°C")
        assert "Lyon" in answer["text"]
        # the answer's 👍, recorded through the bot's handler
        block_id, rating = _feedback_value(answer, "up")
        status, body = await page.post(
            "/play/actions",
            {"user": ALICE, "channel": GENERAL, "ts": answer["ts"], "block_id": block_id,
             "action_id": "answer_feedback", "value": rating},
        )  # fmt: skip
        assert status == 200 and body["bot_status"] == 200, body
        await page.wait_for(
            lambda s: [m for m in thread(s, ts) if m["ephemeral"] and "Thanks for your feedback" in m["text"]],
            what="thanks for the feedback",
        )

        dm = await page.say("list records", user=BOB, channel="DUBOB")  # the DM: no mention needed
        await said(page, dm, "records", user=BOB, channel="DUBOB")

        # --- For admins: A walk-through --------------------------------------------------------
        # 1. Alice edits delete-record's policy in her Home.
        await page.post("/play/home/open", {"user": ALICE})
        state = await page.wait_for(lambda s: s if "Tool policies" in home_text(s) else None, what="Alice's Home")
        assert "Feedback on answers" in home_text(state)
        await page.post("/play/home/actions", {"user": ALICE, **home_button(state, "policy_edit", "delete-record")})
        modal = await modal_of(page, ALICE)
        answer = await page.submit(
            modal,
            {"policy_mode": "inherit", "policy_approvers": "UBOB", "policy_self_approval": [], "policy_expiry": ""},
        )
        assert answer == {"ok": True}, answer
        await page.wait_for(lambda s: "<@UBOB>" in home_text(s) and "v1" in home_text(s), what="policy version 1")

        # 2. Alice's own request: her Approve is refused, to her alone.
        ts = await page.say("@bot delete record 3")
        approval = await approval_in(page, ts)
        await page.click(approval, "tool_approve", user=ALICE)
        told = await page.wait_for(lambda s: [m for m in thread(s, ts) if m["ephemeral"]], what="Alice told why not")
        assert "does not let you approve your own request" in told[0]["text"]
        assert "does not let you approve your own" in README

        # 3. Bob approves it from his Home; the thread says so, his Home empties.
        await page.post("/play/home/open", {"user": BOB})
        bob = await page.wait_for(lambda s: s if home_button(s, "tool_approve") else None, user=BOB, what="Bob's Home")
        assert "等待你決定" in home_text(bob)  # "Waiting for your decision", in Bob's Traditional Chinese
        await page.post("/play/home/actions", {"user": BOB, **home_button(bob, "tool_approve")})
        await page.wait_for(
            lambda s: [m for m in thread(s, ts) if "Approved by <@UBOB>" in shown_text(m)], what="approved by Bob"
        )
        await said(page, ts, "record 3 is deleted")
        await page.wait_for(lambda s: "沒有等待你決定的項目。" in home_text(s), user=BOB, what="empty")

        # 4. On the command line, on the playground's database; ask again and let it expire.
        code, out, err = await cli(tmp_path, "policy", "list", "--playground")
        no_traceback(out, err)
        assert code == 0 and "approval-bot/playground.db" in err, err
        assert table(out)["delete-record"][2:3] == ["UBOB"] or "UBOB" in " ".join(table(out)["delete-record"]), out
        code, out, err = await cli(
            tmp_path, "policy", "set", "delete-record", "--expires", "30", "--approvers", "", "--playground"
        )
        no_traceback(out, err)
        assert code == 0, err
        ts = await page.say("@bot delete record 4")
        approval = await approval_in(page, ts)
        assert "xpires" in shown_text(approval), shown_text(approval)  # the approval says when it expires
        expired = await page.wait_for(
            lambda s: [m for m in thread(s, ts) if m["ts"] == approval["ts"] and "Expired" in shown_text(m)],
            timeout=60,
            what="the approval expired",
        )
        assert action_ids(expired[0]) == []
        await said(page, ts, "I did not run `delete-record`: nobody decided within 30 s.")

        # 5. The audit trail of it all.
        code, out, err = await cli(tmp_path, "audit", "--tool", "delete-record", "--playground", "--format", "jsonl")
        no_traceback(out, err)
        assert code == 0 and "approval-bot/playground.db" in err, err
        lines = [json.loads(line) for line in out.splitlines()]
        assert [(x["action"], x["actor"], x["via"], x["policy_version"]) for x in lines] == [
            ("requested", ALICE, "runtime", 0),
            ("approved", BOB, "button", 0),
            ("executed", "system", "runtime", None),
            ("policy_changed", ALICE, "home", 1),
            ("requested", ALICE, "runtime", 1),
            ("refused", ALICE, "button", 1),
            ("approved", BOB, "home", 1),
            ("executed", "system", "runtime", None),
            ("policy_changed", "system", "cli", 2),
            ("requested", ALICE, "runtime", 2),
            ("expired", "system", "expiry", 2),
        ], lines
        code, out, err = await cli(tmp_path, "audit", "--tool", "delete-record", "--playground")
        no_traceback(out, err)
        assert code == 0 and out.splitlines()[0].split()[:2] == ["AT", "ACTION"], out

    assert (tmp_path / "user-data" / "approval-bot" / "playground.db").exists()  # XDG_DATA_HOME (tests/conftest.py)
    assert not (tmp_path / "data").exists()
    no_traceback(dev.output())
    assert not re.search(r"\bERROR\b", dev.output()), dev.output()


def _initial_values(modal: dict) -> dict:
    """The edit-arguments form as opened: each field's initial value."""
    values = {}
    for block in modal["view"]["blocks"]:
        if block.get("type") == "input":
            element = block["element"]
            if "initial_value" in element:
                values[block["block_id"]] = element["initial_value"]
            elif "initial_option" in element:
                values[block["block_id"]] = element["initial_option"]["value"]
    return values


def _feedback_value(message: dict, rating: str) -> tuple[str, str]:
    for block in message["blocks"]:
        if block.get("type") == "context_actions":
            element = block["elements"][0]
            return block["block_id"], element["positive_button" if rating == "up" else "negative_button"]["value"]
    raise AssertionError(f"no feedback buttons under {message}")


TRANSLATIONS = {"README.zh-TW.md": "zh_TW", "README.zh-CN.md": "zh_CN", "README.ko.md": "ko"}


def test_the_translated_quick_starts_say_what_the_walk_through_does():
    """Each translated quick start runs the same commands, tries phrases this walk-through drives (or the demo
    model reads), and names the buttons and headings as that language's catalog writes them."""
    from babel.messages.pofile import read_po

    from bot.playground.demo_model import city_in

    def sh_blocks(text: str) -> list[str]:
        return re.findall(r"```sh\n(.*?)```", text, re.DOTALL)

    for name, locale in TRANSLATIONS.items():
        assert f"({name})" in README, f"the README does not link {name}"
        text = (ROOT / name).read_text()
        assert sh_blocks(text)[0] == sh_blocks(README)[0], name  # the two commands, word for word
        for command in re.findall(r"`(python -m bot [^`]+)`", text):
            assert command in README, (name, command)
        for phrase in ("delete record 2", "delete record 3", "退款 订单 A-7 30美元", "refund order A-1 $30"):
            assert phrase in text and phrase in README, (name, phrase)
        with (ROOT / "bot" / "slack" / "locales" / locale / "LC_MESSAGES" / "messages.po").open("rb") as po:
            words = {str(m.string).strip("*") for m in read_po(po) if m.id and m.string}
        for label in re.findall(r"\*\*(.+?)\*\*", text):
            assert label == "Demo Agent · Home" or label in words, (name, label)
        weather = next(line for line in text.splitlines() if "*what's the weather?*" in line)
        weather += text.split(weather, 1)[1].split("\n- ", 1)[0].split("\n\n", 1)[0]
        answers = [a for a in re.findall(r"\*([^*]+)\*", weather) if a != "what's the weather?"]
        assert answers and all(city_in(answer) for answer in answers), (name, answers)
