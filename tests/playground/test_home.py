"""The App Home tab in the playground: Alice (a workspace admin) sees the tool policies and changes one;
Bob sees his approvals and decides one from his Home."""

from __future__ import annotations

from memory import PolicyChange

from .browser import ALICE, BOB, action_ids, home_button, home_text, record_ids, thread


async def test_alice_the_admin_sees_and_changes_the_policies_bob_does_not(page, playground):
    status, body = await page.post("/play/home/open", {"user": ALICE})
    assert status == 200 and body["bot_status"] == 200
    state = await page.wait_for(lambda s: s if "Tool policies" in home_text(s) else None, what="Alice's Home")
    edit = home_button(state, "policy_edit", "delete-record")
    assert edit is not None

    await page.post("/play/home/open", {"user": BOB})
    bob = await page.wait_for(lambda s: s if s.get("home") else None, user=BOB, what="Bob's Home")
    assert "Tool policies" not in home_text(bob) and home_button(bob, "policy_edit") is None

    status, body = await page.post("/play/home/actions", {"user": ALICE, **edit})
    assert status == 200 and body["bot_status"] == 200
    modal = await page.wait_for(lambda s: s.get("modal"), what="the policy modal")
    answer = await page.submit(
        modal,
        {
            "policy_mode": "require_approval",
            "policy_approvers": "UBOB",
            "policy_self_approval": ["allowed"],
            "policy_expiry": "",
        },
    )
    assert answer == {"ok": True}
    policy = await playground.storage.policies.get("delete-record")
    assert (policy.approvers, policy.version, policy.updated_by) == (("UBOB",), 1, ALICE)
    await page.wait_for(lambda s: "<@UBOB>" in home_text(s), what="Alice's Home showing the new policy")


async def test_bob_approves_from_his_home(page, playground):
    await playground.storage.policies.set("delete-record", PolicyChange(approvers=["UBOB"]))
    await page.post("/play/home/open", {"user": BOB})
    await page.wait_for(lambda s: s.get("home"), user=BOB, what="Bob's Home")
    ts = await page.say("@bot delete record 2")  # Alice asks
    await page.wait_for(lambda s: [m for m in thread(s, ts) if action_ids(m)], what="the approval")
    state = await page.wait_for(
        lambda s: s if home_button(s, "tool_approve") else None, user=BOB, what="the approval in Bob's Home"
    )
    status, body = await page.post("/play/home/actions", {"user": BOB, **home_button(state, "tool_approve")})
    assert status == 200 and body["bot_status"] == 200
    await page.wait_for(
        lambda s: [m for m in thread(s, ts) if "Approved by <@UBOB>" in str(m.get("blocks"))], what="approved"
    )
    # Bob reads Traditional Chinese: "Nothing is waiting for your decision."
    await page.wait_for(lambda s: "沒有等待你決定的項目。" in home_text(s), user=BOB, what="emptied")
    # the tool runs after the decision is shown: its effect is there once the bot says so in the thread
    await page.wait_for(
        lambda s: [m for m in thread(s, ts) if "record 2 is deleted" in m["text"]], what="the bot's summary"
    )
    assert 2 not in await record_ids(playground)


async def test_the_playground_serves_the_http_api_beside_the_emulated_slack(tmp_path):
    import aiohttp

    from bot.playground import Playground
    from bot.settings import Settings

    settings = Settings(
        database_url=f"sqlite+aiosqlite:///{tmp_path}/p.db", openai_api_key=None, bot_api_token="play-token"
    )
    async with Playground(settings, port=0, word_delay=0) as running, aiohttp.ClientSession() as session:
        async with session.get(running.url + "/api/openapi.json") as response:
            assert response.status == 200 and (await response.json())["openapi"].startswith("3.")
        url = running.url + "/api/agents/demo-agent/suspended-runs"
        async with session.get(url, headers={"Authorization": "Bearer play-token"}) as response:
            assert (response.status, await response.json()) == (200, {"runs": [], "total": 0, "totalExact": True})
        async with session.get(url) as response:
            assert response.status == 401


async def test_without_a_token_the_api_addresses_say_the_api_is_off(playground):
    """With BOT_API_TOKEN unset, /api/openapi.json was taken by the emulated Web API (`unknown_method`)."""
    import aiohttp

    from bot.api import API_OFF

    async with aiohttp.ClientSession() as session:
        for method, path in [
            ("GET", "/api/openapi.json"),
            ("GET", "/api/agents/demo-agent/suspended-runs"),
            ("POST", "/api/agents/demo-agent/runs/r1/tool-calls/c1/approve"),
        ]:
            async with session.request(method, playground.url + path) as response:
                assert (response.status, await response.json()) == (404, {"error": API_OFF}), path
        async with session.post(playground.url + "/api/auth.test") as response:  # the emulated Slack still answers
            assert (await response.json())["error"] == "not_authed"


async def test_opening_the_dm_shows_the_bots_prompts_and_greeting(page):
    from .browser import ALICE

    status, body = await page.post("/play/home/open", {"user": ALICE, "tab": "messages"})
    assert status == 200 and body["ok"], body
    state = await page.wait_for(lambda s: s["suggested_prompts"].get("DUALICE") and s, what="the prompts")
    assert [p["title"] for p in state["suggested_prompts"]["DUALICE"]["prompts"]][:2] == [
        "list-records",
        "delete-record",
    ]
    greeting = await page.wait_for(
        lambda s: [m for m in s["messages"] if m["channel"] == "DUALICE" and "Hi <@UALICE>" in m["text"]],
        what="the greeting",
    )
    assert "`issue-refund`" in greeting[0]["text"]


def bulk_values(state: dict) -> list[str]:
    return [
        option["value"]
        for block in (state.get("home") or {}).get("blocks", [])
        if (block.get("accessory") or {}).get("type") == "checkboxes"
        for option in block["accessory"]["options"]
    ]


async def test_bob_approves_two_of_three_at_once_from_his_home(page, playground):
    await playground.storage.policies.set("delete-record", PolicyChange(approvers=["UBOB"]))
    await page.post("/play/home/open", {"user": BOB})
    await page.wait_for(lambda s: s.get("home"), user=BOB, what="Bob's Home")
    asked = []
    for record in (1, 2, 4):
        ts = await page.say(f"@bot delete record {record}")  # Alice asks, three times
        await page.wait_for(lambda s, ts=ts: [m for m in thread(s, ts) if action_ids(m)], what="the approval")
        asked.append(ts)
    state = await page.wait_for(
        lambda s: s if len(bulk_values(s)) == 3 else None, user=BOB, what="three approvals to tick in Bob's Home"
    )
    picked = bulk_values(state)[:2]
    approve = home_button(state, "home_bulk_approve")
    assert approve is not None and home_button(state, "home_bulk_decline") is not None

    forged = {"user": BOB, **approve, "selected": {"home_bulk_pick": [picked[0].split(":")[0] + ":" + "0" * 64]}}
    status, _ = await page.post("/play/home/actions", forged)
    assert status == 400  # the page cannot tick what the Home does not offer

    status, body = await page.post(
        "/play/home/actions", {"user": BOB, **approve, "selected": {"home_bulk_pick": picked}}
    )
    assert status == 200 and body["bot_status"] == 200
    # in Bob's Traditional Chinese: "Approved 2: ..."
    home = await page.wait_for(lambda s: s if "已核准 2 件" in home_text(s) else None, user=BOB, what="the result")
    assert len(bulk_values(home)) <= 1

    def approved_threads(state: dict) -> int:
        return sum(any("Approved by <@UBOB>" in str(m.get("blocks")) for m in thread(state, ts)) for ts in asked)

    state = await page.wait_for(lambda s: s if approved_threads(s) == 2 else None, what="two threads approved")
    waiting = [ts for ts in asked if any("tool_approve" in action_ids(m) for m in thread(state, ts))]
    assert len(waiting) == 1  # the third still waits, with its buttons


async def test_alice_opens_the_approval_analytics_from_her_home(page, playground):
    await playground.storage.policies.set("delete-record", PolicyChange(approvers=["UBOB"]))
    await page.post("/play/home/open", {"user": BOB})
    await page.wait_for(lambda s: s.get("home"), user=BOB, what="Bob's Home")
    ts = await page.say("@bot delete record 2")  # Alice asks, Bob approves from his Home
    state = await page.wait_for(
        lambda s: s if home_button(s, "tool_approve") else None, user=BOB, what="the approval in Bob's Home"
    )
    await page.post("/play/home/actions", {"user": BOB, **home_button(state, "tool_approve")})
    await page.wait_for(
        lambda s: [m for m in thread(s, ts) if "record 2 is deleted" in m["text"]], what="the bot's summary"
    )

    await page.post("/play/home/open", {"user": ALICE})
    state = await page.wait_for(lambda s: s if home_button(s, "approval_analytics") else None, what="the button")
    status, body = await page.post("/play/home/actions", {"user": ALICE, **home_button(state, "approval_analytics")})
    assert status == 200 and body["bot_status"] == 200
    modal = await page.wait_for(lambda s: s.get("modal"), what="the analytics")
    sections = {b["text"]["text"]: b["fields"] for b in modal["view"]["blocks"] if b.get("fields")}
    assert set(sections) == {"*delete-record*", "<@UBOB>"}
    assert {"text": "*Decided*\n1", "type": "mrkdwn"} in sections["<@UBOB>"]


async def test_a_four_eyes_call_offers_no_edit_in_the_thread_nor_in_bobs_home(page, playground):
    """The playground draws the one view as Slack would: the thread's approval and Bob's card offer the same
    buttons (no edit of arguments everyone approves), and the card shows the preview and who may approve."""
    await playground.storage.policies.set("delete-record", PolicyChange(approvals_required=2))
    await page.post("/play/home/open", {"user": BOB})
    ts = await page.say("@bot delete record 2")  # Alice asks
    approval = await page.wait_for(
        lambda s: next((m for m in thread(s, ts) if "tool_approve" in action_ids(m)), None), what="the approval"
    )
    assert "tool_edit_args" not in action_ids(approval)
    bob = await page.wait_for(lambda s: s if home_button(s, "tool_approve") else None, user=BOB, what="Bob's card")
    assert home_button(bob, "tool_decline") is not None and home_button(bob, "tool_edit_args") is None
    assert "Will delete 1 record: #2" in home_text(bob)  # the preview, as in the thread
