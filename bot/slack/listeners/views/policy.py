"""Submitting the policy modal: only an admin may; bad input stays in the modal and changes nothing.

The same rule as `python -m bot policy set` (`bot.admin.change_policy`): a tool the agent does not have
(and that has no stored policy) is refused, the expiry is 1 second to 365 days or none, and the change
is audited as `policy_changed` through `home`."""

from __future__ import annotations

from typing import Any

from slack_bolt.context.ack.async_ack import AsyncAck
from slack_bolt.context.async_context import AsyncBoltContext

from bot.admin import AdminInputError, change_policy, rules_from_words
from memory import (
    UNDO_DEFAULT,
    PolicyChange,
    PolicyError,
    approvals_count,
    escalation_seconds,
    escalation_target,
    expiry_seconds,
    grant_seconds_of,
    undo_seconds_of,
)

from ...directory import DirectoryError
from ...home_builder import (
    APPROVALS_BLOCK,
    APPROVERS_BLOCK,
    ESCALATE_AFTER_BLOCK,
    ESCALATE_TO_BLOCK,
    EXPIRY_BLOCK,
    GRANTS_BLOCK,
    MODE_BLOCK,
    RULES_BLOCK,
    UNDO_BLOCK,
    read_policy_modal,
)
from ...services import home_changed, services_of


async def handle_policy_submission(
    ack: AsyncAck, body: dict[str, Any], view: dict[str, Any], context: AsyncBoltContext
) -> None:
    services = services_of(context)
    user_id = body["user"]["id"]
    tr = await services.languages.of_person(user_id, within=0.5)  # before the ack: cached, or Slack is quick
    try:
        admin = services.directory is not None and await services.directory.is_admin(user_id)
    except DirectoryError as exc:
        error = tr.gettext("Could not check that you are an admin: {error}", error=str(exc))
        await ack(response_action="errors", errors={MODE_BLOCK: error})
        return
    if not admin:
        await ack(response_action="errors", errors={MODE_BLOCK: tr.gettext("Only admins can change tool policies.")})
        return
    fields = read_policy_modal((view.get("state") or {}).get("values") or {})
    try:
        expiry = expiry_seconds(fields["expiry"] or "0")
    except PolicyError as exc:
        await ack(response_action="errors", errors={EXPIRY_BLOCK: tr.said(exc)[:150]})
        return
    try:
        approvals = approvals_count(fields["approvals_required"] or "1")
    except PolicyError as exc:
        await ack(response_action="errors", errors={APPROVALS_BLOCK: tr.said(exc)[:150]})
        return
    try:
        grants = grant_seconds_of(fields["grant_seconds"] or "0")
    except PolicyError as exc:
        await ack(response_action="errors", errors={GRANTS_BLOCK: tr.said(exc)[:150]})
        return
    try:
        undo = undo_seconds_of(fields["undo_seconds"] or str(UNDO_DEFAULT))
    except PolicyError as exc:
        await ack(response_action="errors", errors={UNDO_BLOCK: tr.said(exc)[:150]})
        return
    try:
        escalate_to = escalation_target(fields["escalate_to"]) or ""
    except PolicyError as exc:
        await ack(response_action="errors", errors={ESCALATE_TO_BLOCK: tr.said(exc)[:150]})
        return
    try:
        escalate_after = escalation_seconds(fields["escalate_after"] or "0")
    except PolicyError as exc:
        await ack(response_action="errors", errors={ESCALATE_AFTER_BLOCK: tr.said(exc)[:150]})
        return
    try:
        rules = rules_from_words(fields["rules"])
    except PolicyError as exc:
        await ack(response_action="errors", errors={RULES_BLOCK: tr.said(exc)[:150]})
        return
    change = PolicyChange(
        mode=fields["mode"],
        approvers=fields["approvers"],
        self_approval=fields["self_approval"],
        expires_after=expiry,
        approvals_required=approvals,
        grant_seconds=grants,
        undo_seconds=undo,
        escalate_to=escalate_to,
        escalate_after=escalate_after,
        rules=rules,
    )
    tool_name = view.get("private_metadata") or ""
    try:
        await change_policy(services.agent.storage, services.agent, tool_name, change, actor=user_id, via="home")
    except AdminInputError as exc:
        block = (
            RULES_BLOCK
            if str(exc).startswith("rule ")
            else APPROVERS_BLOCK
            if "Slack user" in str(exc)
            else ESCALATE_AFTER_BLOCK
            if "escalation delay" in str(exc)
            else MODE_BLOCK
        )
        await ack(response_action="errors", errors={block: tr.said(exc)[:150]})
        return
    await ack()
    home_changed(services)
