"""Build the Bolt app: a web client with retries, the services the listeners use, the middleware
that records each event (dropping those already handled, queueing the messages the bot answers), and
the listeners. Everything it needs is passed in."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING

from slack_bolt.async_app import AsyncApp
from slack_bolt.response import BoltResponse
from slack_sdk.http_retry.async_handler import AsyncRetryHandler
from slack_sdk.http_retry.builtin_async_handlers import (
    AsyncConnectionErrorRetryHandler,
    AsyncRateLimitErrorRetryHandler,
    AsyncServerErrorRetryHandler,
)
from slack_sdk.web.async_client import AsyncWebClient

from bot import metrics
from bot.defaults import DEFAULT_MAX_CONCURRENT_TURNS, DEFAULT_QUICK_APPROVAL_SECONDS, DEFAULT_SLACK_API_URL
from memory import Storage

from .clicks import LOST_TEXT, carry_out_left_clicks, complete_clicks, record_clicks, tell_clicker
from .directory import Directory
from .escalation import escalation_hook
from .home import HomePublisher
from .intake import RECORDED, EventIntake, record_event
from .listeners import register_listeners
from .listeners.events.turn import answered_already, reached_the_agent, take_turn
from .reader_language import ReaderLanguages
from .recovery import background_stream_hook, run_recovery
from .request_reading import read_socket_payload
from .services import SlackServices, attach_services, remember_services, services_of_app
from .stall_watch import StallWatch
from .stores import EventLog, SlackStores
from .translator import DEFAULT_LANGUAGE
from .turn_queue import TurnQueue

if TYPE_CHECKING:
    from bot.agent import Agent


def create_web_client(token: str, *, api_url: str = DEFAULT_SLACK_API_URL, retries: int = 3) -> AsyncWebClient:
    """A Web API client that retries 429 (after Retry-After), 500/503, and dropped connections."""
    return configure_web_client(AsyncWebClient(token=token), api_url=api_url, retries=retries)


def configure_web_client(client: AsyncWebClient, *, api_url: str, retries: int = 3) -> AsyncWebClient:
    """Point `client` at `api_url`, count its failures (`bot_slack_api_errors_total`) and let it retry
    429, 500/503 and dropped connections. Bolt copies both into the client each request gets."""
    client.base_url = api_url
    client.retry_handlers = [
        CountSlackApiErrors(),
        AsyncConnectionErrorRetryHandler(max_retry_count=retries),
        AsyncRateLimitErrorRetryHandler(max_retry_count=retries),
        AsyncServerErrorRetryHandler(max_retry_count=retries),
    ]
    return client


class CountSlackApiErrors(AsyncRetryHandler):
    """Not a retry: asked first after every attempt, it counts the failed ones and lets the others decide."""

    async def can_retry_async(self, *, state, request, response=None, error=None) -> bool:
        method = request.url.rsplit("/", 1)[-1]
        if error is not None:
            metrics.slack_api_error(method, type(error).__name__)
        elif response is not None:
            body = response.body if isinstance(response.body, dict) else {}
            if body.get("ok") is False or response.status_code != 200:
                metrics.slack_api_error(method, str(body.get("error") or f"http_{response.status_code}"))
        return False


def create_slack_app(
    *,
    agent: Agent,
    storage: Storage,
    token: str,
    signing_secret: str | None = None,
    api_url: str = DEFAULT_SLACK_API_URL,
    admins: Sequence[str] = (),
    streaming: bool = True,
    logger: logging.Logger | None = None,
    max_concurrent_turns: int = DEFAULT_MAX_CONCURRENT_TURNS,
    queued_notice_after: float = 10.0,
    stale_after: float = 30.0,
    language: str = DEFAULT_LANGUAGE,
    quick_approval_seconds: float = DEFAULT_QUICK_APPROVAL_SECONDS,
) -> AsyncApp:
    """The bot's Bolt app. `signing_secret` is needed over HTTP (requests are verified with it) and
    not over Socket Mode. `agent` must already have storage and memory attached. Who may decide is
    the runtime's rule (the tool policies), asking this app's `Directory` about people; `admins`
    (`BOT_ADMINS`) may change policies, else the workspace's admins and owners.

    At most `max_concurrent_turns` agent turns work at once (a turn waiting for the model or a tool
    holds no slot meanwhile); a message waiting `queued_notice_after`
    seconds behind earlier ones in its thread is told so; a thread's turn held by a replica silent for
    `stale_after` seconds is taken over (see `turn_queue`). Serve the app with `build_web_app` or
    `serve_socket`, which start and stop its background work. `language` (`BOT_LANGUAGE`, one of
    `translator.LANGUAGES`) is the bot's words for a person whose Slack locale it has no catalog for;
    `quick_approval_seconds` (`BOT_QUICK_APPROVAL_SECONDS`) what the admin's approval analytics count as quick."""
    logger = logger or logging.getLogger("bot.slack")
    # The token, not a client: given a client, Bolt also reads SLACK_BOT_TOKEN itself and warns that it
    # is unused. The client Bolt builds is then pointed at `api_url`, with retries.
    app = AsyncApp(
        token=token,
        signing_secret=signing_secret or "",
        request_verification_enabled=bool(signing_secret),
        process_before_response=False,  # ack at once; the listener's work goes on after the response
        logger=logger,
        name="approval-bot",
    )
    configure_web_client(app.client, api_url=api_url)
    directory = Directory(app.client, admins=admins)
    agent.attach(directory=directory)  # the runtime's rule of who may act asks Slack about people
    services = SlackServices(
        agent=agent,
        stores=SlackStores.on(storage),
        directory=directory,
        streaming=streaming,
        logger=logger,
        quick_approval_seconds=quick_approval_seconds,
        repost_after=stale_after,  # what BOT_STALE_AFTER gives the recovery on every replica too
    )
    services.languages = ReaderLanguages(directory, services.stores.conversations, default=language)
    services.home = HomePublisher(services, app.client)
    remember_services(app, services)
    services.stalls = StallWatch(gap=stale_after * 0.8)  # another replica takes work over after stale_after
    services.turns = TurnQueue(
        services.stores,
        app.client,
        lambda message: take_turn(services, app.client, message),
        holder=agent.owner,
        reached_agent=lambda message: reached_the_agent(services, message),
        answered=lambda message: answered_already(services, message, app.client),
        max_concurrent_turns=max_concurrent_turns,
        queued_notice_after=queued_notice_after,
        stale_after=stale_after,
        logger=logger,
        languages=services.languages,
    )
    if signing_secret:  # over HTTP: events are acknowledged before Bolt's dispatch
        services.intake = EventIntake(
            app,
            services.stores.events,
            services.stores.clicks,
            signing_secret,
            holder=agent.owner,
            tell_lost=lambda body: tell_clicker(services, app.client, body, LOST_TEXT),
            logger=logger,
        )
    app.use(read_socket_payload)  # over HTTP the request was read before Bolt (server.py)
    app.use(attach_services(services))
    app.use(record_events(services.stores.events))
    app.use(record_clicks(services.stores.clicks, agent.owner))  # over Socket Mode: no intake records them
    complete_clicks(app, services.stores.clicks)
    register_listeners(app)
    # Runs the runtime continues on its own (recovery, expiry, an unread continuation) show in their thread.
    agent.hooks["on_background_stream"] = background_stream_hook(services, app.client)
    # The escalation sweep (bot/expiry.py) brings a call waiting too long to its policy's escalate_to here.
    agent.hooks["on_escalation"] = escalation_hook(services, app.client)
    return app


async def run_slack_recovery(app: AsyncApp, *, every: float = 10.0, repost_after: float = 30.0) -> None:
    """Keep every waiting call shown in Slack: the recovery pass (`recovery.py`) at once and then every
    `every` seconds, until cancelled; beside it, the sweep of clicks left undone (`run_click_sweep`).
    The bot runs both on every replica."""
    await asyncio.gather(
        run_recovery(services_of_app(app), app.client, every=every, repost_after=repost_after),
        # a click is left to the sweep only once its take is `repost_after` old: looking more often finds
        # nothing more, and each look is a statement of an idle replica
        run_click_sweep(app, every=repost_after, stale_after=repost_after),
    )


async def run_click_sweep(app: AsyncApp, *, every: float, stale_after: float) -> None:
    """Carry out the clicks a stopped replica acknowledged and left undone (`clicks.py`), at once and then
    every `every` seconds."""
    services = services_of_app(app)
    while True:
        try:
            await carry_out_left_clicks(app, stale_after=stale_after)
        except Exception:  # the next pass tries again
            services.logger.exception("the sweep of clicks left undone failed")
        await asyncio.sleep(every)


def record_events(events: EventLog):
    """A global middleware, the only database write before the ack: record the event's `event_id`,
    with the message when the bot answers it (queued for its turn, so a crash after the ack loses
    nothing). An event already recorded (a retry, or a delivery another replica took) is answered 200
    and goes no further."""

    async def record_slack_events(body, context, next, logger):
        if context.get(RECORDED):  # recorded on the ack path already (`intake.EventIntake`)
            await next()
            return
        if body.get("type") == "event_callback" and body.get("event_id"):
            if not await record_event(events, body, context.bot_user_id, context.team_id):
                logger.info("event %s already handled; skipped", body["event_id"])
                return BoltResponse(status=200, body="")
        await next()

    return record_slack_events
