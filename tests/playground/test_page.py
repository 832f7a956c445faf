"""The page and the pieces around it: files served, the bot's events URL signed-only, Slack's text rules."""

from __future__ import annotations

from bot.playground.browser import state_values, to_slack_text
from bot.slack_emulator import Workspace

from .browser import NODE_DOM


async def test_the_page_and_its_scripts_are_served(page):
    for path, expected in [
        ("/", "/static/app.js"),
        ("/static/app.js", "/play/state"),
        ("/static/blockkit.js", "mrkdwn"),
    ]:
        async with page.session.get(page.url + path) as response:
            assert response.status == 200, path
            assert expected in await response.text()
    state = await page.state()
    assert [c["name"] for c in state["channels"]] == ["general", "Alice"]
    assert state["info"]["demo_model"] is True


async def test_the_bot_only_takes_requests_signed_with_the_run_s_secret(page):
    async with page.session.post(page.url + "/slack/events", json={"type": "event_callback", "event": {}}) as response:
        assert response.status == 401


async def test_the_web_api_wants_the_bot_token(page):
    url = page.url + "/api/chat.postMessage"
    async with page.session.post(url, data={"channel": "C0GENERAL", "text": "x"}) as response:
        assert (await response.json()) == {"ok": False, "error": "not_authed"}
    async with page.session.post(url, data={"channel": "C0GENERAL", "text": "x", "token": "xoxb-guess"}) as response:
        assert (await response.json()) == {"ok": False, "error": "invalid_auth"}
    assert (await page.state())["messages"] == []


def test_typed_text_becomes_slack_text():
    workspace = Workspace()
    assert to_slack_text("@bot delete <b> & @Bob's @alice", workspace) == (
        "<@UBOT> delete &lt;b&gt; &amp; <@UBOB>'s <@UALICE>"
    )
    assert to_slack_text("mail me@bot.example", workspace) == "mail me@bot.example"


def test_modal_state_is_built_as_slack_sends_it():
    view = {
        "blocks": [
            {
                "type": "input",
                "block_id": "n",
                "element": {"type": "number_input", "action_id": "v", "is_decimal_allowed": False},
            },
            {
                "type": "input",
                "block_id": "s",
                "optional": True,
                "element": {
                    "type": "static_select",
                    "action_id": "v",
                    "options": [{"text": {"type": "plain_text", "text": "A"}, "value": '"a"'}],
                },
            },
            {
                "type": "input",
                "block_id": "c",
                "optional": True,
                "element": {
                    "type": "checkboxes",
                    "action_id": "v",
                    "options": [{"text": {"type": "plain_text", "text": "Yes"}, "value": "true"}],
                },
            },
        ]
    }
    values, errors = state_values(view, {"n": {"v": "7"}, "s": {"v": '"a"'}, "c": {"v": ["true"]}})
    assert errors == {}
    assert values["n"] == {"v": {"type": "number_input", "value": "7"}}
    assert values["s"]["v"]["selected_option"]["value"] == '"a"'
    assert values["c"]["v"]["selected_options"][0]["value"] == "true"
    _, errors = state_values(view, {"n": {"v": "1.5"}})
    assert list(errors) == ["n"]
    _, errors = state_values(view, {})
    assert list(errors) == ["n"]


async def test_a_taken_port_moves_the_playground_to_the_next_one(tmp_path):
    import socket

    from bot.playground import Playground
    from bot.settings import Settings

    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    port = taken.getsockname()[1]
    settings = Settings(database_url=f"sqlite+aiosqlite:///{tmp_path}/p.db", openai_api_key=None)
    try:
        async with Playground(settings, port=port, word_delay=0) as playground:
            assert playground.port != port and playground.url.startswith("http://127.0.0.1:")
    finally:
        taken.close()


def test_the_page_draws_every_emoji_the_bot_writes():
    """The bot's messages name emoji by code (`:mag:` before a preview); the page showed ":mag:" as text."""
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    script = (root / "bot" / "playground" / "static" / "blockkit.js").read_text()
    table = script[script.index("const EMOJI = {") : script.index("};", script.index("const EMOJI = {"))]
    drawn = set(re.findall(r"([a-z_0-9]+): \"", table))
    written = set()
    for source in (root / "bot" / "slack").rglob("*.py"):
        written |= set(re.findall(r"(?<![\w:]):([a-z][a-z_0-9]+):(?![\w:])", source.read_text()))
    written.discard("memory")  # SQLite's in-memory database, ":memory:", is no emoji
    assert written and written <= drawn, written - drawn


def test_the_page_draws_the_homes_bulk_checkboxes(tmp_path):
    """The Home's bulk selection (a checkboxes accessory per approval) is drawn as ticking boxes that carry
    their value and action id, which the page sends as the view's state; blockkit.js drew "[checkboxes]"."""
    import json
    import shutil
    import subprocess
    from pathlib import Path

    import pytest

    from bot.slack.home_builder import HomeApproval, HomeView, build_home_view
    from bot.slack.translator import translator

    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed")
    approvals = [
        HomeApproval(
            ref=f"ref{i}",
            tool_name="delete-record",
            args={"id": i},
            requester="UALICE",
            channel="C1",
            fingerprint=f"{i:064d}",
        )  # fmt: skip
        for i in range(3)
    ]
    view = build_home_view(HomeView(user_id="UBOB", waiting_for_you=approvals, your_requests=[]), translator("en"))
    script = tmp_path / "draw.js"
    script.write_text(NODE_DOM)
    blockkit = Path(__file__).resolve().parents[2] / "bot" / "playground" / "static" / "blockkit.js"
    drawn = subprocess.run(
        [node, str(script), str(blockkit)], input=json.dumps(view["blocks"]), capture_output=True, text=True
    )
    assert drawn.returncode == 0, drawn.stderr
    inputs = json.loads(drawn.stdout)
    assert [i for i in inputs if "unsupported" in i] == []
    assert inputs == [
        {"type": "checkbox", "value": f"ref{i}:{i:064d}", "actionId": "home_bulk_pick", "disabled": False}
        for i in range(3)
    ]


async def test_a_user_group_is_shown_by_its_handle_as_slack_shows_it(page, tmp_path):
    """ "Who may approve: @S0LEADS" showed the group's raw ID; Slack shows `<!subteam^S0LEADS>` as @leads. The
    page gets the workspace's groups with its state and draws a mention by the group's handle."""
    import json
    import shutil
    import subprocess
    from pathlib import Path

    import pytest

    state = await page.state()
    assert {"id": "S0LEADS", "handle": "leads"} in state["usergroups"]
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed")
    script = tmp_path / "draw.js"
    script.write_text(
        NODE_DOM.replace("nameOf: (id) => id,", "nameOf: (id) => id, groupHandle: (id) => (id === 'S0LEADS' ? 'leads' : id),")
        .replace('if (n.tag === "input")', 'if (n.innerHTML) found.push({ html: n.innerHTML });\n  if (n.tag === "input")')
    )  # fmt: skip
    blockkit = Path(__file__).resolve().parents[2] / "bot" / "playground" / "static" / "blockkit.js"
    blocks = [{"type": "section", "text": {"type": "mrkdwn", "text": "Who may approve: <!subteam^S0LEADS>"}}]
    drawn = subprocess.run([node, str(script), str(blockkit)], input=json.dumps(blocks), capture_output=True, text=True)
    assert drawn.returncode == 0, drawn.stderr
    html = " ".join(item.get("html", "") for item in json.loads(drawn.stdout))
    assert '<span class="mention">@leads</span>' in html and "S0LEADS" not in html, html
