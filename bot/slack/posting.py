"""Posting the message of a waiting call without losing it and without leaving copies unaccounted for.

A post can end without a clear answer: the connection drops after Slack created the message, Slack
answers 5xx, the process dies. Retrying blindly then shows the same call twice or more. So the message
is posted with a client that retries only what certainly did nothing (429 after Retry-After); after an
unclear failure the thread is searched (`conversations.replies`) for a message whose buttons carry the
row's reference: found, it is adopted (every one found is recorded); not found, the post is tried
again. What still fails is left to the recovery pass (`recovery.py`), which posts it later.
"""

from __future__ import annotations

import asyncio
from datetime import datetime
from typing import Any

import aiohttp
from slack_sdk.errors import SlackApiError
from slack_sdk.http_retry.builtin_async_handlers import AsyncRateLimitErrorRetryHandler
from slack_sdk.web.async_client import AsyncWebClient

from .directory import is_user_id
from .services import SlackServices
from .tables import ToolCallMessageRow

ATTEMPTS = 3
"""Posts tried in a row before the message is left to the recovery pass."""
BACKOFF = 0.5
"""Seconds before the second try, doubled before each further one."""
UNCLEAR = (aiohttp.ClientError, TimeoutError)
"""Failures after which Slack may or may not have created the message."""
FRESH_CLAIM = 0.1
"""The part of `repost_after` within which a claim the caller made itself a moment ago is not checked again
before its first post (see `deliver`)."""


def careful_client(client: AsyncWebClient) -> AsyncWebClient:
    """A copy of `client` that retries a 429 only: a retried dropped connection or 5xx can post twice."""
    return AsyncWebClient(
        token=client.token,
        base_url=client.base_url,
        timeout=client.timeout,
        ssl=client.ssl,
        proxy=client.proxy,
        session=client.session,
        headers=dict(client.headers or {}),
        team_id=getattr(client, "team_id", None),
        logger=client.logger,
        retry_handlers=[AsyncRateLimitErrorRetryHandler(max_retry_count=3)],
    )


async def deliver(
    services: SlackServices,
    client: AsyncWebClient,
    row: ToolCallMessageRow,
    *,
    text: str,
    blocks: list[Any],
    search_first: bool = False,
    claimed_at: datetime | None = None,
) -> str | None:
    """Post `row`'s message (the caller has claimed it) and record its ts; None if it is not in Slack
    now (the recovery pass tries again later), or if the claim was taken over meanwhile (`holds_post`). A copy already in the thread is adopted, not posted again;
    `search_first` looks for one before the first try (an earlier try may have posted it and died).
    `claimed_at`: the caller inserted `row` with its claim at about this time (`storage.clock`), no earlier."""
    poster = careful_client(client)
    delay = BACKOFF
    if search_first and not row.maybe_copies:
        # The earlier try's post may still land after this one (Slack was slow, its sender died): the
        # thread is searched again when the call is settled, so that copy shows the decision too.
        await services.stores.messages.mark_maybe_copies(row.id)
        row.maybe_copies = True
    for attempt in range(ATTEMPTS):
        if attempt or search_first or row.maybe_copies:
            found = await find_copies(services, client, row)
            if found:
                return found[0]
            # Not found, or the thread could not be read: post. A copy we missed is still a message of
            # the call (its click decides the call) and `maybe_copies` has it searched for again later.
        fresh = attempt == 0 and just_claimed(services, claimed_at)  # nobody can have moved it yet
        if not fresh and not await services.stores.messages.holds_post(row):
            # this process stalled (a 503's backoff, SIGSTOP) and another took the post over, posted it, or
            # closed it: a post now would be a second message, with live buttons after the decision
            services.logger.info("the message of %s/%s is another's to post now", row.run_id, row.tool_call_id)
            return None
        try:
            response = await poster.chat_postMessage(
                channel=row.channel, thread_ts=row.thread_ts, text=text, blocks=blocks
            )
        except SlackApiError as exc:
            status = getattr(exc.response, "status_code", 0) or 0
            if status < 500:  # Slack refused it (or kept refusing with 429): nothing was posted
                services.logger.warning("could not post the message of %s/%s: %s", row.run_id, row.tool_call_id, exc)
                return None
            services.logger.warning("Slack answered %s to the message of %s/%s", status, row.run_id, row.tool_call_id)
        except UNCLEAR as exc:
            services.logger.warning(
                "posting the message of %s/%s ended without an answer: %r", row.run_id, row.tool_call_id, exc
            )
        else:
            ts = str(response["ts"])
            await services.stores.messages.set_ts(row.id, ts)
            return ts
        await services.stores.messages.mark_maybe_copies(row.id)
        row.maybe_copies = True
        await asyncio.sleep(delay)
        delay *= 2
    return None


def just_claimed(services: SlackServices, claimed_at: datetime | None) -> bool:
    """Whether a claim the caller made by inserting its message's row (`claimed_at`) is so young that asking
    whether it still holds (`holds_post`) could only say yes, so the post goes out without asking.

    Until someone posts the message, only a claimant changes what `holds_post` reads: the post (its ts),
    a close, or a takeover of the claim. A takeover comes from a recovery pass (any replica's) and only once
    the claim is `repost_after` old (`recovery._post_unposted`); the recovery records a missing message
    without a claim, and a wait surfaces in one stream, so no second record of it takes the claim. Within a
    small part of `repost_after` of the claim, as this process's clock measures it, nobody can have moved it.
    Past that (this process stalled, its loop was blocked), or for any other post (a retry, the recovery's, a
    claim met on another's row), the claim is asked about before the post: no post after a takeover."""
    if claimed_at is None:
        return False
    age = (services.agent.storage.clock.now() - claimed_at).total_seconds()
    return 0 <= age < services.repost_after * FRESH_CLAIM


async def find_copies(services: SlackServices, client: AsyncWebClient, row: ToolCallMessageRow) -> list[str] | None:
    """The ts of every message in `row`'s thread whose buttons carry `row`'s reference, oldest first,
    each recorded; None when the thread could not be read."""
    found: list[str] = []
    cursor = None
    try:
        while True:
            page = await client.conversations_replies(channel=row.channel, ts=row.thread_ts, cursor=cursor, limit=200)
            found += [str(m["ts"]) for m in page.get("messages") or [] if carries(m, row.id)]
            cursor = (page.get("response_metadata") or {}).get("next_cursor")
            if not cursor:
                break
    except (SlackApiError, *UNCLEAR) as exc:
        services.logger.warning("could not read the thread of %s/%s: %r", row.run_id, row.tool_call_id, exc)
        return None
    for ts in found:
        await services.stores.messages.set_ts(row.id, ts)
    return found


async def adopt_escalation_copies(services: SlackServices, client: AsyncWebClient, ref: str) -> None:
    """Record every copy of `ref`'s message that an escalation's post left in Slack unrecorded (its answer was
    lost), so that a settled call's copies all show the decision."""
    for recipient in await services.stores.messages.unconfirmed_escalation_posts(ref):
        await adopt_escalated_copy(services, client, ref, recipient)


async def adopt_escalated_copy(services: SlackServices, client: AsyncWebClient, ref: str, recipient: str) -> bool:
    """Look in `recipient`'s DM (or channel) for messages of `ref`'s call an escalation posted, and record them
    as its copies; whether any was found (False, too, when Slack could not be asked)."""
    try:
        channel = recipient
        if is_user_id(recipient):  # a DM is read by its channel's ID
            channel = str((await client.conversations_open(users=recipient))["channel"]["id"])
        found = await find_in_channel(client, ref, channel)
    except (SlackApiError, *UNCLEAR) as exc:
        services.logger.warning("could not look for the escalated copy of %s sent to %s: %r", ref, recipient, exc)
        return False
    for ts in found:
        await services.stores.messages.add_copy(ref, ts, channel=channel, escalated_to=recipient)
    return bool(found)


async def find_in_channel(client: AsyncWebClient, ref: str, channel: str) -> list[str]:
    """The ts of the latest messages of `channel` (a DM's or a channel's history, not a thread) whose buttons carry
    `ref`; raises what Slack raised when the history could not be read."""
    page = await client.conversations_history(channel=channel, limit=100)
    return [str(m["ts"]) for m in page.get("messages") or [] if carries(m, ref)]


def carries(message: dict[str, Any], ref: str) -> bool:
    """Whether a message's buttons carry `ref` as their value."""
    for block in message.get("blocks") or []:
        if block.get("type") != "actions":
            continue
        if any(element.get("value") == ref for element in block.get("elements") or []):
            return True
    return False
