"""Escalation before expiry, the Slack side: the runtime's escalation sweep hands over a call still
waiting after its policy's `escalate_after` (`bot.agent.Escalation`), and this posts the same approval
(the same buttons, the same reference) to the policy's `escalate_to`: a DM to each member of a user
group (`S…`, read with usergroups.users.list) or one post in a channel (`C…`). Each post is recorded as
a copy of the approval message, so a decision on any copy (or in the thread, the Home, the API) decides
the call once and updates every copy; the thread gets a short note.

A post Slack refused for now (429 after the client's retries, 5xx, no answer) gives the escalation back
to a later sweep, which posts only to whom it has not reached (the copies say whom); a group with no
members or an unknown channel cannot be reached and is reported as failed (audited, logged once).

Each post is recorded before it is made (`note_escalation_post`): one whose answer was lost (the connection
dropped after Slack posted it, the process died) is looked for in its DM or channel, right away and before
any later try, and adopted as a copy instead of being posted twice; when the call is settled, a post still
unaccounted for is looked for again (`posting.adopt_escalation_copies`), so no copy keeps live buttons.
"""

from __future__ import annotations

import dataclasses

from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bot.agent import Escalation, EscalationOutcome, EscalationResult

from .approval_builder import approval_text, build_approval_blocks, duration_words
from .directory import is_user_id
from .posting import UNCLEAR, adopt_escalated_copy, careful_client
from .services import SlackServices
from .waiting_messages import reader_of, refresh_message, waiting_approval_view

FOR_GOOD = frozenset(
    {"channel_not_found", "not_in_channel", "is_archived", "user_not_found", "cannot_dm_bot", "user_disabled"}
)
"""Slack errors after which posting to that target again would fail again."""


def escalation_hook(services: SlackServices, client: AsyncWebClient):
    """The runtime's `on_escalation` hook for this Slack app."""

    async def on_escalation(escalation: Escalation) -> EscalationOutcome:
        return await escalate(services, client, escalation)

    return on_escalation


def target_mention(target: str) -> str:
    return f"<!subteam^{target}>" if target.startswith("S") else f"<#{target}>"


async def escalate(services: SlackServices, client: AsyncWebClient, escalation: Escalation) -> EscalationOutcome:
    call, target = escalation.call, escalation.target
    messages = services.stores.messages
    row = await messages.of_wait(call.run_id, call.tool_call_id, call.suspended_at)
    if row is None or row.ts is None:  # the approval itself is not in Slack yet: the recovery posts it first
        return EscalationOutcome(result=EscalationResult.RETRY, detail="the approval message is not posted yet")
    if target.startswith("S"):
        try:
            answer = await client.usergroups_users_list(usergroup=target)
        except SlackApiError as exc:
            error = exc.response.get("error")
            if getattr(exc.response, "status_code", 200) >= 429 or error == "ratelimited":
                return EscalationOutcome(result=EscalationResult.RETRY, detail=f"usergroups.users.list: {error}")
            return _failed(services, escalation, f"could not read the members of user group {target}: {error}")
        except UNCLEAR as exc:
            return EscalationOutcome(result=EscalationResult.RETRY, detail=f"usergroups.users.list: {exc!r}")
        # The requester asked in the thread and already sees the approval there: not DMed about it again.
        recipients = [str(user) for user in answer.get("users") or () if str(user) != row.requester]
        if not recipients:
            return _failed(services, escalation, f"user group {target} has no members (other than who asked)")
    else:
        recipients = [target]
    thread_tr = await services.languages.of_thread(row.thread_id, row.requester)
    poster = careful_client(client)  # retries a 429 only: a retried 5xx could post twice
    reached = await messages.escalated_to(row.id)
    shown = await services.agent.waiting_call_view(row.run_id, row.tool_call_id)  # once, for every recipient
    unreachable: list[str] = []
    for recipient in recipients:
        if recipient in reached:
            continue
        # a DM copy is read by its one person, in their language; a channel's post in the thread's
        tr = await services.languages.of_person(recipient) if is_user_id(recipient) else thread_tr
        escalated = tr.gettext(
            "*Escalated*: no decision after {time} in {channel}, so it is brought to {target}.",
            time=duration_words(escalation.after, tr),
            channel=f"<#{row.channel}>",
            target=target_mention(target),
        )
        policy_view = await waiting_approval_view(services, row, call, tr, viewer=reader_of(recipient), shown=shown)
        view = dataclasses.replace(policy_view, escalated=f":rotating_light: {escalated}")
        text, blocks = approval_text(view, tr), build_approval_blocks(view, tr)
        tried_before = not await messages.note_escalation_post(row.id, recipient)
        if tried_before and await adopt_escalated_copy(services, client, row.id, recipient):
            reached.add(recipient)  # an earlier try's post landed: it is the copy
            continue
        try:
            response = await poster.chat_postMessage(channel=recipient, text=text, blocks=blocks)
        except SlackApiError as exc:
            error = str(exc.response.get("error"))
            if error in FOR_GOOD:
                unreachable.append(f"{recipient} ({error})")
                continue
            services.logger.warning(
                "escalating %s/%s to %s: Slack answered %s", row.run_id, row.tool_call_id, recipient, error
            )
            return EscalationOutcome(result=EscalationResult.RETRY, detail=f"chat.postMessage to {recipient}: {error}")
        except UNCLEAR as exc:
            services.logger.warning(
                "escalating %s/%s to %s ended without an answer", row.run_id, row.tool_call_id, recipient
            )
            if await adopt_escalated_copy(
                services, client, row.id, recipient
            ):  # Slack posted it before the answer was lost
                reached.add(recipient)
                continue
            return EscalationOutcome(result=EscalationResult.RETRY, detail=f"chat.postMessage to {recipient}: {exc!r}")
        await messages.add_copy(
            row.id, str(response["ts"]), channel=str(response.get("channel") or recipient), escalated_to=recipient,
            row=row,
        )  # fmt: skip
        reached.add(recipient)
    if not reached & set(recipients):
        return _failed(services, escalation, f"{target} could not be reached: {', '.join(unreachable)}")
    told = thread_tr.gettext(
        "No decision after {time}: brought to {target}.",
        time=duration_words(escalation.after, thread_tr),
        target=target_mention(target),
    )
    await _tell_thread(services, client, row, f":rotating_light: {told}")
    await refresh_message(services, client, row)  # decided meanwhile: every copy, the new ones too, shows it
    detail = f"brought to {target}"
    if target.startswith("S"):
        detail += f" ({len(reached & set(recipients))} of {len(recipients)} members: {', '.join(sorted(reached & set(recipients)))})"
    if unreachable:
        detail += f"; not reached: {', '.join(unreachable)}"
    return EscalationOutcome(result=EscalationResult.DELIVERED, detail=detail)


def _failed(services: SlackServices, escalation: Escalation, detail: str) -> EscalationOutcome:
    """An escalation that cannot be delivered: logged here once (the runtime audits it; the claim stays,
    so this wait is not tried again)."""
    call = escalation.call
    services.logger.error("cannot escalate %s/%s (%s): %s", call.run_id, call.tool_call_id, call.tool_name, detail)
    return EscalationOutcome(result=EscalationResult.FAILED, detail=detail)


async def _tell_thread(services: SlackServices, client: AsyncWebClient, row, text: str) -> None:
    try:
        await client.chat_postMessage(channel=row.channel, thread_ts=row.thread_ts, text=text)
    except (SlackApiError, *UNCLEAR):
        services.logger.warning("could not tell %s that its approval was escalated", row.thread_id)
