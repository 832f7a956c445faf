"""Nothing waits unseen: the Slack side of recovery.

A call can wait for a human with no message in Slack to decide it: `chat.postMessage` failed for good
(Slack down), the process died while posting, or it died before the message was even recorded. And a
message can keep its buttons after its call was settled, when the update failed. The recovery pass,
run at start and then every few seconds on every replica (`run_recovery`), mends all three:

1. a waiting call of a Slack thread without an open message gets one recorded (a grace period leaves
   the turn that met the call time to record it first; if both do, they get the same row);
2. a recorded message never posted is posted by whichever replica claims it (one conditional UPDATE),
   at most once per pass, after looking in the thread for a copy an earlier try may have left; a row
   whose call no longer waits is closed instead, and any copy found is updated;
3. an open message whose call no longer waits is updated (no buttons, the outcome).

Runs the runtime continues on its own (recovery of a stale run, an expiry, a decision's continuation
nobody reads) reach the adapter through the `on_background_stream` hook: `relay_background_stream`
relays them into the run's thread, so an interrupted call's approval is posted like any other.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bot.agent import AgentStream

from .conversation import continue_run
from .posting import UNCLEAR, find_copies
from .services import SlackServices
from .tables import ToolCallMessageRow
from .threads import SlackThread
from .waiting_messages import (
    post_recorded,
    record_of,
    refresh_message,
    still_waits,
)

MAX_BACKOFF = timedelta(hours=1)


@dataclass(kw_only=True)
class RecoveryReport:
    """What one pass did (for logs and tests)."""

    recorded: int = 0
    """Waiting calls that had no message and got one recorded."""
    posted: int = 0
    """Messages posted (or found already in Slack and adopted)."""
    closed: int = 0
    """Messages whose call no longer waited: updated and closed."""
    pending: int = 0
    """What a later pass may have to do: a call within its grace, a message someone else is posting or that
    failed lately, a message that could not be updated."""


async def recover_messages(
    services: SlackServices, client: AsyncWebClient, *, repost_after: float = 30.0
) -> RecoveryReport:
    """One recovery pass (see the module docstring). `repost_after`: seconds a post someone took on may
    take before another replica takes it over (it grows for a message that keeps failing)."""
    # this process's own posts assume no takeover sooner than this (`posting.deliver`)
    services.repost_after = min(services.repost_after, repost_after)
    report = RecoveryReport()
    waiting = await _waiting_calls(services)
    await _record_missing(services, waiting, grace=repost_after, report=report)
    for row in await services.stores.messages.unposted():
        done = report.posted + report.closed
        await _post_unposted(services, client, row, repost_after=repost_after, report=report)
        report.pending += report.posted + report.closed == done
    for row in await services.stores.messages.open():
        if row.ts is not None and (row.run_id, row.tool_call_id) not in waiting:
            try:
                report.closed += await refresh_message(services, client, row)
            except (SlackApiError, *UNCLEAR) as exc:
                report.pending += 1
                services.logger.warning("could not update the message of %s/%s: %r", row.run_id, row.tool_call_id, exc)
    return report


@dataclass(frozen=True, kw_only=True)
class _Waiting:
    run_id: str
    tool_call_id: str
    tool_name: str
    args: Any
    requires_approval: bool
    suspend_payload: Any
    thread: SlackThread


async def _waiting_calls(services: SlackServices) -> dict[tuple[str, str], _Waiting]:
    """Every call of a Slack thread that waits for a human, by (run_id, tool_call_id)."""
    found: dict[tuple[str, str], _Waiting] = {}
    page = 0
    while True:
        runs = await services.agent.list_suspended_runs(page=page, per_page=100)
        for run in runs.runs:
            thread = thread_of_id(run.thread_id)
            if thread is None:
                continue
            for call in run.tool_calls:
                found[(run.run_id, call.tool_call_id)] = _Waiting(
                    run_id=run.run_id,
                    tool_call_id=call.tool_call_id,
                    tool_name=call.tool_name,
                    args=call.args,
                    requires_approval=call.requires_approval,
                    suspend_payload=call.suspend_payload,
                    thread=thread,
                )
        page += 1
        if page * 100 >= runs.total or not runs.runs:
            return found


async def _record_missing(
    services: SlackServices, waiting: dict[tuple[str, str], _Waiting], *, grace: float, report: RecoveryReport
) -> None:
    shown = await services.stores.messages.calls_shown(list(waiting))
    for key, call in waiting.items():
        if key in shown:
            continue
        record = await services.agent.get_tool_call(call.run_id, call.tool_call_id)
        if record is None:
            continue
        since = record.suspended_at
        if since is not None and since > services.agent.storage.clock.now() - timedelta(seconds=grace):
            report.pending += 1
            continue  # the turn that met the call is probably recording its message right now
        requester = await _requester_of(services, call.run_id)
        approval = call.requires_approval
        await services.stores.messages.record(
            kind="approval" if approval else "question",
            run_id=call.run_id,
            tool_call_id=call.tool_call_id,
            tool_name=call.tool_name,
            args=call.args if approval else call.suspend_payload,
            thread=call.thread,
            requester=requester,
            request_text=None,
            waiting_since=since,
            interrupted=approval and record.interrupted,
            claim=False,
        )
        report.recorded += 1
        services.logger.info("recorded the missing message of %s/%s", call.run_id, call.tool_call_id)


async def _post_unposted(
    services: SlackServices,
    client: AsyncWebClient,
    row: ToolCallMessageRow,
    *,
    repost_after: float,
    report: RecoveryReport,
) -> None:
    if row.post_claimed_at is not None and row.post_claimed_at > services.agent.storage.clock.now() - _backoff(
        row, repost_after
    ):
        return  # someone is posting it now, or it failed lately
    tried_before = row.post_attempts > 0
    if not await services.stores.messages.claim_post(row):
        return  # another replica took it
    record = await record_of(services, row)
    if still_waits(row, record):
        if await post_recorded(services, client, row, record, search_first=tried_before) is not None:
            report.posted += 1
            services.logger.info("posted the message of %s/%s", row.run_id, row.tool_call_id)
        return
    # Nobody needs this message any more; a copy an earlier try left in Slack still shows buttons.
    if tried_before and await find_copies(services, client, row):
        try:
            await refresh_message(services, client, await services.stores.messages.get(row.id) or row)
        except (SlackApiError, *UNCLEAR):
            return
    await services.stores.messages.close(row.id)
    report.closed += 1


def _backoff(row: ToolCallMessageRow, repost_after: float) -> timedelta:
    """How long after a try the next may start: `repost_after`, doubling after the third try, at most an hour."""
    doubling = max(0, row.post_attempts - 3)
    return min(timedelta(seconds=repost_after * 2 ** min(doubling, 20)), MAX_BACKOFF)


def thread_of_id(thread_id: str | None) -> SlackThread | None:
    """The Slack thread of a memory thread id `slack:<team>:<channel>:<thread_ts>`; None for another front end's."""
    parts = (thread_id or "").split(":")
    if len(parts) != 4 or parts[0] != "slack" or not all(parts[1:]):
        return None
    return SlackThread(team_id=parts[1], channel=parts[2], thread_ts=parts[3])


async def _requester_of(services: SlackServices, run_id: str) -> str:
    """The Slack user whose message started the run (its request context), else the thread's owner."""
    run = await services.agent.get_run(run_id)
    if run is None:
        return ""
    slack = run.request_context.get("slack") or {}
    return str(slack.get("user") or run.resource_id or "")


async def relay_background_stream(services: SlackServices, client: AsyncWebClient, stream: AgentStream) -> None:
    """Relay a run the runtime continues on its own into its Slack thread (runs of other front ends are
    left alone: they go on whether or not anyone reads them)."""
    run = await services.agent.get_run(stream.run_id)
    thread = thread_of_id(run.thread_id if run is not None else None)
    if thread is None:
        return
    requester = await _requester_of(services, stream.run_id)
    await continue_run(services, client, stream, thread=thread, requester=requester)


def background_stream_hook(services: SlackServices, client: AsyncWebClient) -> Callable[[AgentStream], None]:
    """The `on_background_stream` hook: relays each stream in a task of its own, so the runtime never
    waits for Slack."""
    tasks: set[asyncio.Task] = set()

    def on_background_stream(stream: AgentStream) -> None:
        task = asyncio.get_running_loop().create_task(relay_background_stream(services, client, stream))
        tasks.add(task)
        task.add_done_callback(tasks.discard)

    return on_background_stream


async def run_recovery(
    services: SlackServices, client: AsyncWebClient, *, every: float = 10.0, repost_after: float = 30.0
) -> None:
    """Run the recovery pass now and then every `every` seconds, until cancelled. On PostgreSQL, once a pass
    leaves nothing pending, the next waits until another replica moves a call or records a message
    (`memory._notices`), or until `repost_after` seconds after this replica did: what its own work may leave
    to the pass (a waiting call's message not recorded, a post that did not end) is due no sooner."""
    notices = services.agent.storage.notices
    while True:
        began = time.monotonic()
        due: float | None = every
        try:
            report = await recover_messages(services, client, repost_after=repost_after)
            if report.recorded or report.posted or report.closed:
                services.logger.info("recovery: %s", report)
            due = every if report.pending else None
        except Exception:  # a bad pass must not end the loop; the next one tries again
            services.logger.exception("the Slack recovery pass failed")
        spent = time.monotonic() - began
        await notices.pause(
            max(0.1, every - spent),
            since=began,
            due=due,
            tables=("tool_calls", "slack_tool_call_messages"),
            own_after={"tool_calls": repost_after, "slack_tool_call_messages": repost_after},
        )
