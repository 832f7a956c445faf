"""Every button click recorded before its ack, and never lost after it.

Slack sends a click once: it does not retry an interaction, and the clicker sees the button do nothing
if the bot's 200 comes and then its work is lost (a replica killed between the ack and the decision's
commit). So a `block_actions` payload is written to `slack_clicks` before its ack (`EventIntake` on
the HTTP path, before Bolt; `record_clicks` over Socket Mode, before the listener's `ack()`), the
listener runs after the ack as before, and when it has returned the click is marked done
(`ClickCompletion`, Bolt's listener completion handler: every action's listener, whoever registers it).

A click whose replica stopped before that is taken by a replica's sweep once its take is `stale_after`
seconds old (`carry_out_left_clicks`, beside the Slack recovery pass on every replica) and dispatched
again through Bolt, as if it had just come: a decision is still made once (a conditional UPDATE), so a
click already carried out meets "already decided", and a button that opens a form tells the clicker
the form could not be opened (its trigger has expired). A click taken `MAX_TRIES` times is given up,
with a word to the clicker.

Where a click cannot be recorded before Slack's 3 seconds are up (the database is away), it is answered
200 all the same, not carried out, and the clicker is told so in one ephemeral message: the buttons are
untouched and still live, so a click once the database is back works.

A submitted form (`view_submission`: the answer, edit, decline-reason, policy and delegation modals) is
recorded the same way, in the same table, before its listener acks it (`record_clicks`, on both paths: its
ack carries the modal's errors, so no intake can answer it first), marked done when its listener returns,
and carried out by the sweep when its replica stopped in between. A form that cannot be recorded within
`RECORD_WITHIN` seconds is not carried out: the modal stays open with a word under its first field
(`FORM_LOST_TEXT`), and a Submit once the database is back works.
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

from slack_bolt.async_app import AsyncApp
from slack_bolt.listener.async_listener_completion_handler import AsyncListenerCompletionHandler
from slack_bolt.listener.async_listener_error_handler import AsyncListenerErrorHandler
from slack_bolt.request.async_request import AsyncBoltRequest
from slack_bolt.response import BoltResponse
from slack_sdk.web.async_client import AsyncWebClient

from .intake import CLICK, RECORD_WITHIN, is_click, is_form
from .request_reading import READ
from .services import SlackServices, services_of, services_of_app
from .stores import ClickLog
from .translator import N_

MAX_TRIES = 3
"""Takes of one click (the first included) before it is given up."""

LOST_TEXT = N_(
    ":warning: I could not record your click, so nothing was done: my database is out of reach for a "
    "moment. The buttons still work: please click again shortly."
)
GIVEN_UP_TEXT = N_(
    ":warning: I could not carry out your click on *{button}* after several tries, so nothing was done. "
    "Please click again."
)
FORM_LOST_TEXT = N_(
    "I could not record this form, so nothing was done: my database is out of reach for a moment. Please submit "
    "it again shortly."
)
"""What the clicker is told (catalog message ids)."""

_log = logging.getLogger("bot.slack.clicks")


def record_clicks(clicks: ClickLog, holder: str):
    """A global middleware: a click that no intake recorded before its ack (over Socket Mode), and every
    submitted form, are recorded here, before their listener acks them."""

    async def record_slack_clicks(body, context, next):
        if is_click(body) and not context.get(CLICK):
            context[CLICK] = await clicks.record(body, holder=holder)
        elif is_form(body) and not context.get(CLICK):
            recording = asyncio.ensure_future(clicks.record(body, holder=holder))
            try:
                async with asyncio.timeout(RECORD_WITHIN):
                    context[CLICK] = await asyncio.shield(recording)
            except Exception as exc:  # noqa: BLE001 - the database away or slow: the modal stays open, told so
                _log.warning(
                    "form %s by %s not recorded within %.0f s (%s); not carried out, the modal kept open",
                    _action_id(body), (body.get("user") or {}).get("id"), RECORD_WITHIN,
                    type(exc).__name__ if str(exc) == "" else exc,
                )  # fmt: skip
                recording.add_done_callback(lambda done: _recorded_late(done, clicks))
                return await _form_not_recorded(services_of(context), body)
        await next()

    return record_slack_clicks


def _recorded_late(recording: asyncio.Future[str], clicks: ClickLog) -> None:
    """A form its submitter was told is lost, recorded after all: marked done, so no sweep carries it out."""
    if recording.cancelled() or recording.exception() is not None:
        return
    asyncio.ensure_future(clicks.done(recording.result()))


async def _form_not_recorded(services: SlackServices, body: dict[str, Any]) -> BoltResponse:
    """The answer to a form that could not be recorded: the modal stays open, saying so under its first
    field (a modal without one gets a 503, which Slack shows as a failed submission, the modal kept)."""
    blocks = (body.get("view") or {}).get("blocks") or []
    field = next((b.get("block_id") for b in blocks if b.get("type") == "input" and b.get("block_id")), None)
    if field is None:
        return BoltResponse(status=503, body="")
    words = await services.languages.of_person((body.get("user") or {}).get("id"), within=0.5)
    answer = {"response_action": "errors", "errors": {field: words.gettext(FORM_LOST_TEXT)}}
    return BoltResponse(status=200, body=json.dumps(answer), headers={"content-type": ["application/json"]})


FAILED = "approval_bot_click_failed"
"""Set in a request's Bolt context when its listener raised (`ClickFailure`): the click is left to the sweep."""


class ClickCompletion(AsyncListenerCompletionHandler):
    """Marks a recorded click done once its listener has returned (one that raised is left to the sweep).

    Bolt hands this handler no response when a global middleware returned none (ours call `next()` and
    return nothing) and also when a listener raised after its ack, so whether the listener raised is read
    from the context, where `ClickFailure` wrote it."""

    def __init__(self, clicks: ClickLog):
        self.clicks = clicks

    async def handle(self, request: AsyncBoltRequest, response: BoltResponse | None) -> None:
        click_id = request.context.get(CLICK)
        if click_id is None or request.context.get(FAILED) or (response is not None and response.status >= 500):
            return
        try:
            await self.clicks.done(click_id)
        except Exception:  # the sweep takes it again later: a repeat meets "already decided"
            _log.exception("could not mark click %s done", click_id)


class ClickFailure(AsyncListenerErrorHandler):
    """Notes in the request's context that its listener raised, then lets Bolt's own handler log it."""

    def __init__(self, handler: AsyncListenerErrorHandler):
        self.handler = handler

    async def handle(self, error: Exception, request: AsyncBoltRequest, response: BoltResponse | None) -> None:
        request.context[FAILED] = True
        await self.handler.handle(error=error, request=request, response=response)


def complete_clicks(app: AsyncApp, clicks: ClickLog) -> None:
    """Mark every recorded click done when its listener returns, whichever listener it is (an app that sets
    its own error handler, `app.error`, must do so before this)."""
    runner = app._async_listener_runner  # Bolt names no public setter for its completion handler
    if not hasattr(runner, "listener_completion_handler") or not hasattr(runner, "listener_error_handler"):
        raise RuntimeError("this slack_bolt has no listener completion handler: clicks could not be marked done")
    runner.listener_completion_handler = ClickCompletion(clicks)
    runner.listener_error_handler = ClickFailure(runner.listener_error_handler)


async def carry_out_left_clicks(app: AsyncApp, *, stale_after: float) -> int:
    """Dispatch again the clicks whose replica did not finish them; how many were taken."""
    services = services_of_app(app)
    taken = await services.stores.clicks.take_left(holder=services.agent.owner, stale_after=stale_after)
    for click_id, payload, tries in taken:
        if tries > MAX_TRIES:
            _log.warning("click %s given up after %d tries", click_id, tries - 1)
            await services.stores.clicks.done(click_id)
            await tell_clicker(services, app.client, payload, GIVEN_UP_TEXT)
            continue
        _log.info("carrying out click %s (%s), left by a replica that stopped", click_id, _action_id(payload))
        request = AsyncBoltRequest(body=payload, mode="socket_mode", context={CLICK: click_id, READ: True})
        try:
            await app.async_dispatch(request)
        except Exception:
            _log.exception("dispatching click %s again failed", click_id)
    return len(taken)


async def tell_clicker(services: SlackServices, client: AsyncWebClient, payload: dict[str, Any], text: str) -> None:
    """Tell the clicker `text` (a catalog message id) where they clicked: an ephemeral message in the
    thread, or a message of the bot's own to them for a click in the App Home."""
    user = (payload.get("user") or {}).get("id")
    if not user:
        return
    container = payload.get("container") or {}
    message = payload.get("message") or {}
    channel = (payload.get("channel") or {}).get("id") or container.get("channel_id")
    try:
        words = await services.languages.of_person(user, within=2.0)
        said = words.gettext(text, button=_button_text(payload))
        if channel and container.get("type") != "view":
            thread_ts = message.get("thread_ts") or container.get("thread_ts") or message.get("ts")
            await client.chat_postEphemeral(channel=channel, user=user, thread_ts=thread_ts, text=said)
        else:
            await client.chat_postMessage(channel=user, text=said)
    except Exception as exc:  # noqa: BLE001 - a word that cannot be said is logged, nothing else depends on it
        _log.warning("could not tell %s about their click: %s", user, exc)


def _action_id(payload: dict[str, Any]) -> str:
    if is_form(payload):
        return str((payload.get("view") or {}).get("callback_id") or "")
    return str(((payload.get("actions") or [{}])[0]).get("action_id") or "")


def _button_text(payload: dict[str, Any]) -> str:
    if is_form(payload):  # its Submit button
        submit = (payload.get("view") or {}).get("submit")
        return str(submit.get("text") if isinstance(submit, dict) else submit or _action_id(payload))
    action = (payload.get("actions") or [{}])[0]
    text = action.get("text")
    return str(text.get("text") if isinstance(text, dict) else text or action.get("action_id") or "")
