"""Submitting the policy modal: only an admin may; bad input stays in the modal and changes nothing."""

from __future__ import annotations

from typing import Any

from slack_bolt.context.ack.async_ack import AsyncAck
from slack_bolt.context.async_context import AsyncBoltContext

from memory import PolicyChange, PolicyError

from ...directory import DirectoryError
from ...home_builder import APPROVERS_BLOCK, EXPIRY_BLOCK, MODE_BLOCK, read_policy_modal
from ...services import home_changed, services_of


async def handle_policy_submission(
    ack: AsyncAck, body: dict[str, Any], view: dict[str, Any], context: AsyncBoltContext
) -> None:
    services = services_of(context)
    user_id = body["user"]["id"]
    try:
        admin = services.directory is not None and await services.directory.is_admin(user_id)
    except DirectoryError as exc:
        await ack(response_action="errors", errors={MODE_BLOCK: f"Could not check that you are an admin: {exc}"})
        return
    if not admin:
        await ack(response_action="errors", errors={MODE_BLOCK: "Only admins can change tool policies."})
        return
    fields = read_policy_modal(view["state"]["values"])
    expiry = fields["expiry"]
    if expiry and not expiry.isdigit():
        await ack(response_action="errors", errors={EXPIRY_BLOCK: "A whole number of seconds, or empty for never."})
        return
    change = PolicyChange(
        mode=fields["mode"],
        approvers=fields["approvers"],
        self_approval=fields["self_approval"],
        expires_after=int(expiry or 0),
    )
    try:
        await services.agent.storage.policies.set(view.get("private_metadata") or "", change, actor=user_id)
    except PolicyError as exc:
        block = APPROVERS_BLOCK if "Slack user" in str(exc) else MODE_BLOCK
        await ack(response_action="errors", errors={block: str(exc)})
        return
    await ack()
    home_changed(services)
