"""The Edit button next to a tool in an admin's App Home: open the policy modal."""

from __future__ import annotations

from typing import Any

from slack_bolt.context.ack.async_ack import AsyncAck
from slack_bolt.context.async_context import AsyncBoltContext
from slack_sdk.web.async_client import AsyncWebClient

from ...directory import DirectoryError
from ...home_builder import build_policy_modal
from ...services import services_of
from ._click import NOT_OPENED, open_modal


async def handle_policy_edit_button(
    ack: AsyncAck, body: dict[str, Any], client: AsyncWebClient, context: AsyncBoltContext
) -> None:
    await ack()
    services = services_of(context)
    user_id = body["user"]["id"]
    tool_name = ((body.get("actions") or [{}])[0].get("value") or "").strip()
    try:
        admin = services.directory is not None and await services.directory.is_admin(user_id)
    except DirectoryError:
        admin = False
    if not admin or not tool_name:
        services.logger.warning("%s, who is not an admin, tried to edit the policy of %r", user_id, tool_name)
        if services.home is not None:
            await services.home.publish(user_id)  # a stale Home: show them what they may do now
        return
    policy = await services.agent.storage.policies.get(tool_name)
    tr = await services.languages.of_person(user_id)
    opened = await open_modal(services, client, body.get("trigger_id"), build_policy_modal(policy, tr))
    if not opened and services.home is not None:
        await services.home.show_bulk_result(user_id, tr.gettext(NOT_OPENED))
