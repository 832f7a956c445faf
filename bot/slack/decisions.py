"""Deciding a waiting tool call from Slack: check a click, decide through the runtime, show the outcome.

A button's value is only a reference to a `ToolCallMessageRow`. Before anything is decided the click
must name a known message, come from that very message, find the call still waiting in the runtime,
and pass the decision rule. The runtime's conditional UPDATE then settles races (double clicks, two
replicas): the loser is told the request was already decided and sees the message updated.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bot import metrics
from bot.agent import (
    Action,
    AgentStream,
    AlreadyDecided,
    Approve,
    CallRead,
    Counted,
    DatabaseAwayError,
    Decided,
    Decision,
    Gone,
    Invalid,
    Refused,
    Resume,
    ToolCallRecord,
    ToolCallState,
    refuse_stale,
)
from bot.agent import (
    RefusalReason as RuleReason,
)

from .conversation import continue_run
from .permissions import refusal_text
from .services import SlackServices
from .tables import ToolCallMessageRow
from .threads import SlackThread
from .translator import N_
from .undo import offer_undo
from .waiting_messages import refresh_message, still_waits

# What a refused click is told (catalog message ids: `refuse` says them in the clicker's language).
UNKNOWN = N_("This button does not belong to a request that is waiting here.")
ALREADY_DECIDED = N_("This request was already decided.")
ALREADY_ANSWERED = N_("This question was already answered.")
EXPIRED = N_("This request expired: nobody decided before its tool policy's time limit, so it was not run.")
NOT_AS_SHOWN = N_(
    "This selection does not match the request as it waits now (a stale or forged Home), so it was not decided."
)


class RefusalReason(StrEnum):
    """Why a click decided nothing (the `reason` of `bot_refused_clicks_total`)."""

    UNKNOWN = "unknown"
    """The button names no message waiting here (or came from another message)."""
    ALREADY_DECIDED = "already_decided"
    """The call was decided (or answered) already: another click or replica won."""
    EXPIRED = "expired"
    """Nobody decided before the tool policy's expiry."""
    NOT_ALLOWED = "not_allowed"
    """The decision rule refused the clicker."""
    HELD_ELSEWHERE = "held_elsewhere"
    """A sub-agent's live question held by another bot process, which this answer cannot reach yet."""
    NOT_AS_SHOWN = "not_as_shown"
    """A bulk selection whose fingerprint is not the waiting call's (a stale or forged App Home)."""


class DataUnfit(Exception):
    """The runtime found a form's data unfit (resume data, edited arguments): nothing was decided."""


class ClickRefused(Exception):
    """The click changes nothing; `explanation` is shown to the user who clicked, and to nobody else."""

    def __init__(
        self,
        explanation: str,
        reason: RefusalReason,
        *,
        row: ToolCallMessageRow | None = None,
        about: ToolCallMessageRow | None = None,
        audited: bool = False,
        read: CallRead | None = None,
    ):
        super().__init__(explanation)
        self.read = read
        """The call as the click's check found it (settled): not read again to audit and show it."""
        self.audited = audited
        """The runtime audited it already (`decide_as`); else a stale click is audited when it is explained."""
        self.explanation = explanation
        self.reason = reason
        self.row = row
        """Set when the message should be updated to show that the call no longer waits."""
        self.about = row or about
        """The message the click was about: where to explain a click that came from no message (the App Home)."""


@dataclass(frozen=True, kw_only=True)
class WaitingCall:
    """A click that passed every check: the message it came from, and the runtime's record of the call."""

    row: ToolCallMessageRow
    record: ToolCallRecord
    read: CallRead | None = None
    """The run and call as the click's check read them: the decision does not read them again."""

    @property
    def thread(self) -> SlackThread:
        return thread_of_row(self.row)


def _already(message_kind: str) -> str:
    """What the loser of a race is told: an approval was decided, a question answered."""
    return ALREADY_DECIDED if message_kind == "approval" else ALREADY_ANSWERED


def thread_of_row(row: ToolCallMessageRow) -> SlackThread:
    return SlackThread(team_id=row.team_id, channel=row.channel, thread_ts=row.thread_ts)


async def check_click(
    services: SlackServices,
    *,
    ref: str | None,
    kind: str,
    action: str,
    user_id: str,
    channel: str | None = None,
    message_ts: str | None = None,
    thread_ts: str | None = None,
    carried: bool = True,
    via: str = "button",
    fingerprint: str | None = None,
) -> WaitingCall:
    """The waiting call a click that opens a form may act on (`find_waiting_call`), if the runtime's rule lets
    `user_id` `action` it (`check_decider`); raises `ClickRefused` otherwise. `via` (`button`, `home`) is
    where the click came from: a click the rule refuses is audited as `refused`."""
    call = await find_waiting_call(
        services, ref=ref, kind=kind, channel=channel, message_ts=message_ts, thread_ts=thread_ts,
        carried=carried, fingerprint=fingerprint,
    )  # fmt: skip
    await check_decider(services, call, action=action, user_id=user_id, via=via)
    return call


async def find_waiting_call(
    services: SlackServices,
    *,
    ref: str | None,
    kind: str,
    channel: str | None = None,
    message_ts: str | None = None,
    thread_ts: str | None = None,
    carried: bool = True,
    fingerprint: str | None = None,
) -> WaitingCall:
    """The call of the message `ref` names, if it still waits in the very wait the message shows; raises
    `ClickRefused` otherwise. Reads of the database only, no Slack call: a modal submission does this
    before its ack (its form is validated against the call's schema), the decision rule after.

    `channel`/`message_ts`/`thread_ts` are those of the clicked message, `carried` whether its buttons
    carry `ref`; a modal submission has none and relies on the reference checked when the modal was
    opened, checked again here. `fingerprint`: the one the clicker was shown (a bulk selection in the
    App Home carries it); another one decides nothing.
    """
    row = await services.stores.messages.get(ref or "")
    if row is None or row.kind != kind:
        raise ClickRefused(UNKNOWN, RefusalReason.UNKNOWN)
    elsewhere = channel is not None and row.channel != channel
    copy = elsewhere and channel is not None and message_ts is not None
    if elsewhere and not (
        copy and await services.stores.messages.is_copy_elsewhere(row.id, channel or "", message_ts or "")
    ):
        raise ClickRefused(UNKNOWN, RefusalReason.UNKNOWN)  # only an escalation's recorded copy is elsewhere
    if message_ts is not None and message_ts != row.ts and not elsewhere:
        # Only the bot posts messages with its buttons, so another message in the row's thread carrying
        # the reference is a copy (a retried post, the recovery): it decides the call like the first,
        # and is remembered so that it is updated with the decision.
        if thread_ts not in (None, row.thread_ts) or not carried:
            raise ClickRefused(UNKNOWN, RefusalReason.UNKNOWN)
        await services.stores.messages.set_ts(row.id, message_ts)
        row = await services.stores.messages.get(row.id) or row
    read = await services.agent.read_call(row.run_id, row.tool_call_id)
    record = read.record if read is not None else None
    if record is None or not still_waits(row, record):
        if record is not None and record.state == ToolCallState.EXPIRED:
            raise ClickRefused(EXPIRED, RefusalReason.EXPIRED, row=row, read=read)
        raise ClickRefused(_already(kind), RefusalReason.ALREADY_DECIDED, row=row, read=read)
    if fingerprint is not None and fingerprint != (record.fingerprint or ""):
        raise ClickRefused(NOT_AS_SHOWN, RefusalReason.NOT_AS_SHOWN, about=row)
    return WaitingCall(row=row, record=record, read=read)


async def check_decider(
    services: SlackServices, call: WaitingCall, *, action: str, user_id: str, via: str = "button"
) -> None:
    """Ask the runtime's rule whether `user_id` may `action` the call before a form about it opens; a
    refusal (audited by the runtime) is raised as `ClickRefused`. The rule may ask Slack (`users.info`, a
    user group's members), so a modal submission asks it after its ack."""
    refused = await services.agent.check(
        call.row.run_id, call.row.tool_call_id, Action(action), actor=user_id, via=via, read=call.read
    )
    if refused is not None:
        tr = await services.languages.of_person(user_id)
        raise ClickRefused(refusal_text(refused.refusal, tr), RefusalReason.NOT_ALLOWED, about=call.row)


async def decide(
    services: SlackServices,
    client: AsyncWebClient,
    call: WaitingCall,
    decision: Decision,
    *,
    user_id: str,
    via: str = "button",
    click_id: str | None = None,
) -> None:
    """Make `decision` (`Approve`, `Decline`, `Resume`; `DeclineQuestion`, `CancelQuestion` on a live
    question) about a found call through `Agent.decide_as`, where the rule is asked and exactly one actor
    wins; show it in its message, then relay the run as it goes on. `via` (`button` or `home`) is where the
    click came from, for the audit trail.

    Raises `ClickRefused` when nothing was decided (refused, or another click won), `DataUnfit` when the
    data does not fit (the call still waits)."""
    stream = await decide_and_show(services, client, call, decision, user_id=user_id, via=via, click_id=click_id)
    if stream is not None:
        await go_on(services, client, call, stream, ran=isinstance(decision, Approve))


async def decide_and_show(
    services: SlackServices,
    client: AsyncWebClient,
    call: WaitingCall,
    decision: Decision,
    *,
    user_id: str,
    via: str = "button",
    click_id: str | None = None,
) -> AgentStream | None:
    """The first half of `decide`: the runtime decides for `user_id` (`Agent.decide_as`, which asks the rule
    of who may); the result shown in its message; the run's stream to relay (`go_on`), or None when the call
    still waits (four eyes: this approval counted, more are needed). Raises `ClickRefused` when nothing was
    decided, `DataUnfit` when the runtime found the form's data unfit. `click_id`: the recorded click that
    decided it, marked done with its message's close (what is left, the run going on, is the runtime's to
    recover; a click carried out again would only find the call decided)."""
    result = await services.agent.decide_as(
        call.row.run_id, call.row.tool_call_id, decision, actor=user_id, via=via, read=call.read
    )
    match result:
        case Refused():
            reason = (
                RefusalReason.HELD_ELSEWHERE
                if result.reason == RuleReason.HELD_ELSEWHERE
                else RefusalReason.NOT_ALLOWED
            )
            tr = await services.languages.of_person(user_id)
            raise ClickRefused(refusal_text(result.refusal, tr), reason, about=call.row)
        case AlreadyDecided() if result.record.state == ToolCallState.EXPIRED:
            raise ClickRefused(EXPIRED, RefusalReason.EXPIRED, row=call.row, audited=True)
        case AlreadyDecided() | Gone():
            raise ClickRefused(_already(call.row.kind), RefusalReason.ALREADY_DECIDED, row=call.row, audited=True)
        case Invalid():
            raise DataUnfit(result.message)
    outcome = decision.kind.outcome
    context = {"run_id": call.row.run_id, "thread_id": call.row.thread_id, "tool": call.row.tool_name}
    services.logger.info("%s %s by %s", outcome, call.row.tool_name, user_id, extra={**context, "decision": outcome})
    answered = isinstance(decision, Resume)
    try:
        await refresh_message(
            services,
            client,
            call.row,
            answered_by=user_id if answered else None,
            resume_data=decision.data if isinstance(decision, Resume) else None,
            record=result.record,
            click_id=click_id,
        )
    except (SlackApiError, DatabaseAwayError) as exc:
        # the decision stands and the run goes on (its answer must still be relayed); the message is fixed by
        # the next refresh (the recovery pass closes it)
        services.logger.warning(
            "could not update the message of %s/%s: %s", call.row.run_id, call.row.tool_call_id, exc
        )
    if isinstance(result, Counted):
        return None  # four eyes: this approval counted, more are needed; the message shows who approved so far
    assert isinstance(result, Decided)
    return result.stream


async def go_on(
    services: SlackServices, client: AsyncWebClient, call: WaitingCall, stream: AgentStream, *, ran: bool = True
) -> None:
    """The second half of `decide`: relay the run as it goes on after the decision, in its thread; then offer
    Undo on the message of a call that ran, if it may be undone. `ran`: whether the decision may have run the
    call (an approval; a declined call or an answered question offers no Undo, so it is not looked up)."""
    key = (call.row.run_id, call.row.tool_call_id)
    undoable = ran and call.row.kind == "approval"
    # the call's messages are read with the thread's open ones after the run (one statement)
    shown = await continue_run(
        services, client, stream, thread=call.thread, requester=call.row.requester, with_call=key if undoable else None
    )
    if undoable:
        await offer_undo(services, client, *key, messages=shown)


async def tell(client: AsyncWebClient, *, channel: str, user: str, text: str, thread_ts: str | None = None) -> None:
    """An ephemeral message only `user` sees."""
    await client.chat_postEphemeral(channel=channel, user=user, text=text, thread_ts=thread_ts)


async def refuse(
    services: SlackServices,
    client: AsyncWebClient,
    refused: ClickRefused,
    *,
    user: str,
    channel: str | None,
    thread_ts: str | None = None,
    home: bool = False,
) -> None:
    """Explain a refused click to the user alone, in their language (an explanation the catalogs have; the
    decision rule's own words as written), where they clicked (`home`: at the top of their App Home; else an
    ephemeral message in the thread), and bring the message up to date if its call is settled."""
    metrics.refused(refused.reason)
    stale = refused.reason in (RefusalReason.ALREADY_DECIDED, RefusalReason.EXPIRED)
    if stale and refused.row is not None and not refused.audited:  # a stale screen: one audit line, its reason
        await refuse_stale(
            services.agent, refused.row.run_id, refused.row.tool_call_id, actor=user, via="home" if home else "button",
            read=refused.read,
        )  # fmt: skip
    target_channel = channel or (refused.about.channel if refused.about else None)
    if home and services.home is not None:
        await services.home.show_note(user, (await services.languages.of_person(user)).gettext(refused.explanation))
    elif target_channel:
        await tell(
            client,
            channel=target_channel,
            user=user,
            text=(await services.languages.of_person(user)).gettext(refused.explanation),
            thread_ts=thread_ts or (refused.about.thread_ts if refused.about else None),
        )
    if refused.row is not None:
        # An approval is shown again from the runtime's record (the clicker's client may be stale); an
        # answered question keeps who answered it, which only the first update knew.
        fresh = await services.stores.messages.get(refused.row.id)
        if fresh is not None and (fresh.kind == "approval" or fresh.closed_at is None):
            # the call as the click's check found it, settled (read again when the check did not read it)
            await refresh_message(services, client, fresh, record=refused.read.record if refused.read else None)
            if fresh.kind == "approval":  # a call that ran keeps its Undo while it may be undone
                await offer_undo(services, client, fresh.run_id, fresh.tool_call_id)
