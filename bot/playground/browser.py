"""The routes the browser page uses: the page itself, a long-polled snapshot of what the chosen person
sees, and what that person does (post a message, click a button, submit or close a modal).

Each action changes the workspace as Slack would, then hands Slack's payload to `Delivery`, which
signs it and posts it to the bot.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from aiohttp import web

from bot.slack_emulator import BOT_USER_ID, TEAM_ID, TEAM_NAME, Message, Modal, Workspace
from bot.slack_emulator.app_requests import action_of, checkbox_state, stale_button

from .delivery import Delivery

log = logging.getLogger(__name__)

STATIC = Path(__file__).parent / "static"
REQUIRED = "Please complete this required field."
POLL_SECONDS = 20.0


LOCALES = ("en-US", "zh-TW", "zh-CN", "ko-KR", "ja-JP")
"""The Slack locales a person of the playground can switch to (one per language the bot speaks)."""


def add_browser_routes(
    web_app: web.Application,
    workspace: Workspace,
    delivery: Delivery,
    info: dict[str, Any],
    *,
    forget_person: Callable[[str], None] = lambda _user: None,
) -> None:
    """`GET /` (the page), `/static/*`, and the page's API under `/play/`; `info` is shown in the page's banner.
    `forget_person(user)`: the bot's cached lookup of a person who switched their language is stale."""
    page = BrowserApi(workspace, delivery, info, forget_person=forget_person)
    web_app.router.add_get("/", page.index)
    web_app.router.add_static("/static", STATIC)
    web_app.router.add_get("/play/state", page.state)
    web_app.router.add_post("/play/messages", page.post_message)
    web_app.router.add_post("/play/actions", page.click)
    web_app.router.add_post("/play/home/open", page.open_home)
    web_app.router.add_post("/play/locale", page.set_locale)
    web_app.router.add_post("/play/home/actions", page.click_home)
    web_app.router.add_post("/play/views/{view_id}/submit", page.submit_view)
    web_app.router.add_post("/play/views/{view_id}/close", page.close_view)


class BrowserApi:
    def __init__(
        self,
        workspace: Workspace,
        delivery: Delivery,
        info: dict[str, Any],
        *,
        forget_person: Callable[[str], None] = lambda _user: None,
    ):
        self.workspace = workspace
        self.delivery = delivery
        self.info = info
        self.forget_person = forget_person

    async def index(self, _request: web.Request) -> web.FileResponse:
        return web.FileResponse(STATIC / "index.html", headers={"Cache-Control": "no-store"})

    async def state(self, request: web.Request) -> web.Response:
        """What `user` sees; with `since`, waits (up to 20 s) until something changed after that version."""
        user = self._person(request.query.get("user"))
        since = request.query.get("since")
        if since is not None and since.lstrip("-").isdigit():
            await self.workspace.wait_for_change(int(since), POLL_SECONDS)
        return web.json_response({**snapshot(self.workspace, user), "info": self.info})

    async def post_message(self, request: web.Request) -> web.Response:
        data = await _json(request)
        user = self._person(data.get("user"))
        channel = self.workspace.channels.get(str(data.get("channel") or ""))
        text = str(data.get("text") or "").strip()
        if channel is None or not channel.visible_to(user):
            raise web.HTTPNotFound(text="no such channel")
        if not text:
            raise web.HTTPBadRequest(text="empty message")
        thread_ts = data.get("thread_ts") or None
        if thread_ts and self.workspace.message(channel.id, thread_ts) is None:
            raise web.HTTPNotFound(text="no such thread")
        message = self.workspace.post(channel.id, user, to_slack_text(text, self.workspace), thread_ts=thread_ts)
        answers = await self.delivery.message_posted(message)
        return web.json_response({"ok": True, "ts": message.ts, "bot_status": [a.status for a in answers]})

    async def click(self, request: web.Request) -> web.Response:
        data = await _json(request)
        user = self._person(data.get("user"))
        message = self.workspace.message(str(data.get("channel") or ""), str(data.get("ts") or ""))
        if message is None or message not in self.workspace.visible_messages(user):
            raise web.HTTPNotFound(text="no such message")
        action = action_of(message, str(data.get("action_id") or ""), data.get("block_id"), data.get("value"))
        if action is None and data.get("value") is not None:
            # a click on a button the page still showed after the message changed: Slack delivers it too
            action = stale_button(str(data.get("action_id") or ""), data.get("block_id"), data["value"])
        if action is None:
            raise web.HTTPNotFound(text="no such button")
        answer = await self.delivery.button_clicked(user, message, action)
        return web.json_response({"ok": answer.status == 200, "bot_status": answer.status})

    async def open_home(self, request: web.Request) -> web.Response:
        """The person opened the bot's Home tab (or, with `"tab": "messages"`, its DM): Slack sends
        `app_home_opened`; the bot publishes the Home view, or offers suggested prompts in the DM."""
        data = await _json(request)
        user = self._person(data.get("user"))
        tab = "messages" if data.get("tab") == "messages" else "home"
        answer = await self.delivery.home_opened(user, tab)
        return web.json_response({"ok": answer.status == 200, "bot_status": answer.status})

    async def set_locale(self, request: web.Request) -> web.Response:
        """The person switched their language (Slack's locale): what they see alone follows at once; a
        conversation keeps the language it started in."""
        data = await _json(request)
        user = self._person(data.get("user"))
        locale = data.get("locale")
        if locale not in LOCALES:
            raise web.HTTPBadRequest(text="pick a language: " + ", ".join(LOCALES))
        self.workspace.set_locale(user, locale)
        self.forget_person(user)
        return web.json_response({"ok": True})

    async def click_home(self, request: web.Request) -> web.Response:
        data = await _json(request)
        user = self._person(data.get("user"))
        view = self.workspace.home_views.get(user)
        if view is None:
            raise web.HTTPNotFound(text="no Home view")
        home = Message(channel="", ts="", user=BOT_USER_ID, text="", blocks=view.get("blocks") or [])
        action = action_of(home, str(data.get("action_id") or ""), data.get("block_id"), data.get("value"))
        if action is None:
            raise web.HTTPNotFound(text="no such button")
        selected = data.get("selected") or {}  # the ticked checkboxes, by action_id: the view's state
        values: dict[str, Any] = {}
        try:
            if not isinstance(selected, dict):
                raise ValueError("selected must map action ids to lists of values")
            for action_id, chosen in selected.items():
                if not isinstance(chosen, list) or not all(isinstance(v, str) for v in chosen):
                    raise ValueError(f"selected[{action_id!r}] must be a list of values")
                for block_id, state in checkbox_state(view, str(action_id), chosen).items():
                    values.setdefault(block_id, {}).update(state)
        except ValueError as exc:
            raise web.HTTPBadRequest(text=str(exc)) from None
        answer = await self.delivery.home_clicked(user, view, action, values=values)
        return web.json_response({"ok": answer.status == 200, "bot_status": answer.status})

    async def submit_view(self, request: web.Request) -> web.Response:
        data = await _json(request)
        modal = self._modal(request, data)
        values, errors = state_values(modal.view, data.get("values") or {})
        if errors:
            modal.errors = errors
            self.workspace.changed(modal)
            return web.json_response({"ok": False, "errors": errors})
        answer = await self.delivery.view_submitted(modal, values)
        if answer.status != 200:
            modal.errors = {"": f"The bot answered HTTP {answer.status}."}
            self.workspace.changed(modal)
            return web.json_response({"ok": False, "errors": modal.errors})
        return web.json_response(self._apply_response_action(modal, answer.json()))

    async def close_view(self, request: web.Request) -> web.Response:
        modal = self._modal(request, await _json(request))
        self.workspace.close_modal(modal)
        await self.delivery.view_closed(modal)
        return web.json_response({"ok": True})

    def _apply_response_action(self, modal: Modal, response: dict[str, Any]) -> dict[str, Any]:
        """What Slack does with a view_submission's answer: show errors, update, push, clear, or close."""
        action = response.get("response_action")
        if action == "errors":
            modal.errors = {str(k): str(v) for k, v in (response.get("errors") or {}).items()}
            self.workspace.changed(modal)
            return {"ok": False, "errors": modal.errors}
        if action == "update" and isinstance(response.get("view"), dict):
            self.workspace.close_modal(modal)
            self.workspace.open_modal(modal.user, response["view"], push=True)
        elif action == "push" and isinstance(response.get("view"), dict):
            self.workspace.open_modal(modal.user, response["view"], push=True)
        else:
            self.workspace.close_modal(modal, all_of_them=action == "clear")
        return {"ok": True}

    def _person(self, user: Any) -> str:
        person = self.workspace.people.get(str(user or ""))
        if person is None or person.is_bot:
            raise web.HTTPBadRequest(text="pick a person: " + ", ".join(self.workspace.people))
        return person.id

    def _modal(self, request: web.Request, data: dict[str, Any]) -> Modal:
        user = self._person(data.get("user"))
        modal = self.workspace.find_modal(request.match_info["view_id"])
        if modal is None or modal.user != user:
            raise web.HTTPNotFound(text="no such modal")
        return modal


def snapshot(workspace: Workspace, user_id: str) -> dict[str, Any]:
    """Everything `user_id` sees, as the page renders it."""
    stack = workspace.modals.get(user_id)
    modal = None
    if stack:
        top = stack[-1]
        modal = {"id": top.id, "view": top.view, "errors": top.errors, "depth": len(stack)}
    return {
        "version": workspace.version,
        "team": {"id": TEAM_ID, "name": TEAM_NAME},
        "me": user_id,
        "bot_user_id": BOT_USER_ID,
        "people": [
            {"id": p.id, "name": p.name, "real_name": p.real_name, "is_bot": p.is_bot, "locale": p.locale}
            for p in workspace.people.values()
        ],
        "channels": [
            {"id": c.id, "name": c.name, "is_im": c.is_im} for c in workspace.channels.values() if c.visible_to(user_id)
        ],
        "usergroups": [{"id": g.id, "handle": g.handle} for g in workspace.usergroups.values()],
        "messages": [m.to_json() for m in workspace.visible_messages(user_id)],
        "statuses": [
            {"channel": channel, "thread_ts": ts, "status": status}
            for (channel, ts), status in workspace.statuses.items()
            if workspace.channels[channel].visible_to(user_id)
        ],
        "modal": modal,
        "home": workspace.home_views.get(user_id),
        "suggested_prompts": {
            channel: prompts
            for channel, prompts in workspace.suggested_prompts.items()
            if channel in workspace.channels and workspace.channels[channel].visible_to(user_id)
        },
    }


async def _json(request: web.Request) -> dict[str, Any]:
    try:
        data = await request.json()
    except ValueError:
        raise web.HTTPBadRequest(text="send JSON") from None
    if not isinstance(data, dict):
        raise web.HTTPBadRequest(text="send a JSON object")
    return data


def to_slack_text(text: str, workspace: Workspace) -> str:
    """What Slack makes of typed text: `&`, `<`, `>` escaped, and `@name` turned into a mention
    (`@bot`, `@demo-agent`, `@Demo Agent`, `@alice`, `@Alice`...)."""
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    names: list[tuple[str, str]] = [("bot", BOT_USER_ID)]
    for person in workspace.people.values():
        names += [(person.name, person.id), (person.real_name, person.id), (person.id, person.id)]
    for name, user_id in sorted(names, key=lambda pair: -len(pair[0])):
        text = re.sub(rf"(?<![\w<])@{re.escape(name)}\b", f"<@{user_id}>", text, flags=re.IGNORECASE)
    return text


def state_values(view: dict[str, Any], raw: dict[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
    """A modal's `state.values` as Slack sends them, from what the page collected (`raw`: block_id ->
    action_id -> text, option value, or list of option values); and, as Slack checks before sending, an
    error for each required input left empty."""
    values: dict[str, Any] = {}
    errors: dict[str, str] = {}
    for block in view.get("blocks") or []:
        element = block.get("element")
        if block.get("type") != "input" or not isinstance(element, dict):
            continue
        block_id, action_id = block["block_id"], element.get("action_id", "")
        given = (raw.get(block_id) or {}).get(action_id)
        kind = element.get("type")
        state: dict[str, Any] = {"type": kind}
        options = element.get("options") or []
        if kind in ("static_select", "radio_buttons"):
            state["selected_option"] = next((o for o in options if o.get("value") == given), None)
            empty = state["selected_option"] is None
        elif kind == "users_select":
            state["selected_user"] = given if isinstance(given, str) and given else None
            empty = state["selected_user"] is None
        elif kind == "checkboxes":
            chosen = set(given or []) if isinstance(given, list) else set()
            state["selected_options"] = [o for o in options if o.get("value") in chosen]
            empty = not state["selected_options"]
        else:  # plain_text_input, number_input, and any other text-like input
            text = None if given is None else str(given)
            state["value"] = text if text not in ("",) else None
            empty = state["value"] is None or not str(state["value"]).strip()
            if not empty and kind == "number_input" and not _is_number(text or "", element):
                errors[block_id] = "Enter a number." if element.get("is_decimal_allowed") else "Enter a whole number."
        if empty and not block.get("optional"):
            errors[block_id] = REQUIRED
        values[block_id] = {action_id: state}
    return values, errors


def _is_number(text: str, element: dict[str, Any]) -> bool:
    pattern = r"-?\d+(\.\d+)?" if element.get("is_decimal_allowed") else r"-?\d+"
    if not re.fullmatch(pattern, text.strip()):
        return False
    number = float(text)
    low, high = element.get("min_value"), element.get("max_value")
    return (low is None or number >= float(low)) and (high is None or number <= float(high))
