"""Standing grants in the playground: with `delete-record`'s policy allowing grants, Bob's "Approve and allow
for 1 hour in this thread" lets Alice's next delete in that thread run without asking; Bob's Home lists the
grant and revokes it; the page draws the grant buttons and the Home's grants section."""

from __future__ import annotations

import json
import shutil
import subprocess
from datetime import UTC, datetime
from pathlib import Path

import pytest

from memory import PolicyChange

from .browser import ALICE, BOB, NODE_DOM, action_ids, home_button, home_text, record_ids, thread

GRANT = "tool_approve_grant"


async def test_bob_grants_delete_record_in_the_thread_and_revokes_it_in_his_home(page, playground):
    await playground.storage.policies.set("delete-record", PolicyChange(grant_seconds=3600))
    ts = await page.say("@bot delete record 2")  # Alice asks
    approval = await page.wait_for(
        lambda s: next((m for m in thread(s, ts) if GRANT in action_ids(m)), None), what="the approval with a grant"
    )
    status, body = await page.click(approval, GRANT, user=BOB)
    assert status == 200 and body["bot_status"] == 200
    await page.wait_for(lambda s: [m for m in thread(s, ts) if "record 2 is deleted" in m["text"]], what="deleted")

    await page.say("delete record 4", thread_ts=ts)
    await page.wait_for(lambda s: [m for m in thread(s, ts) if "record 4 is deleted" in m["text"]], what="no asking")
    assert {2, 4} & set(await record_ids(playground)) == set()
    state = await page.state(ALICE)
    # the one approval was decided: its message offers at most Undo, now that the deletion ran
    assert [action_ids(m) for m in thread(state, ts) if action_ids(m)] in ([], [["tool_undo"]])

    await page.post("/play/home/open", {"user": BOB})
    bob = await page.wait_for(lambda s: s if home_button(s, "grant_revoke") else None, user=BOB, what="the grant")
    assert "常設授權" in home_text(bob) and "delete-record" in home_text(bob)  # Bob reads Traditional Chinese
    status, body = await page.post("/play/home/actions", {"user": BOB, **home_button(bob, "grant_revoke")})
    assert status == 200 and body["bot_status"] == 200
    await page.wait_for(lambda s: not home_button(s, "grant_revoke"), user=BOB, what="the grant gone")
    await page.say("delete record 5", thread_ts=ts)
    await page.wait_for(lambda s: [m for m in thread(s, ts) if GRANT in action_ids(m)], what="it asks again")
    actions = [e.action for e in await playground.storage.audit_log.entries() if e.tool_name == "delete-record"]
    assert {"granted", "grant_used", "grant_revoked"} <= set(actions)


def test_the_page_draws_the_grant_buttons_and_the_homes_grants(tmp_path):
    from bot.slack.approval_builder import ApprovalView, build_approval_blocks
    from bot.slack.home_builder import HomeGrant, HomeView, build_home_view
    from bot.slack.translator import translator

    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed")
    message = build_approval_blocks(
        ApprovalView(ref="r1", tool_name="delete-record", args={"id": 2}, requester="UALICE", grant_seconds=3600),
        translator("en"),
    )
    home = build_home_view(
        HomeView(
            user_id="UBOB",
            waiting_for_you=[],
            your_requests=[],
            grants=[
                HomeGrant(
                    id="g1",
                    tool_name="delete-record",
                    granted_by="UBOB",
                    same_arguments=True,
                    expires_at=datetime(2030, 1, 1, tzinfo=UTC),
                    channel="C1",
                )
            ],
        ),  # fmt: skip
        translator("en"),
    )
    script = tmp_path / "draw.js"
    script.write_text(
        NODE_DOM.replace(
            'if (n.tag === "input")',
            'if (n.tag === "button") found.push({ button: n.dataset.actionId });\n  if (n.tag === "input")',
        )
    )
    blockkit = Path(__file__).resolve().parents[2] / "bot" / "playground" / "static" / "blockkit.js"
    blocks = [block.to_dict() for block in message] + home["blocks"]
    drawn = subprocess.run([node, str(script), str(blockkit)], input=json.dumps(blocks), capture_output=True, text=True)
    assert drawn.returncode == 0, drawn.stderr
    found = json.loads(drawn.stdout)
    assert [i for i in found if "unsupported" in i] == []
    buttons = [i["button"] for i in found if "button" in i]
    assert {"tool_approve_grant", "tool_approve_grant_same_args", "grant_revoke"} <= set(buttons), buttons
