"""The App Home's delegation buttons: "Hand over my approvals" opens the form; End ends a delegation in force
(for its delegator, its delegate or an admin)."""

from __future__ import annotations

from typing import Any

from slack_bolt.context.ack.async_ack import AsyncAck
from slack_bolt.context.async_context import AsyncBoltContext
from slack_sdk.web.async_client import AsyncWebClient

from bot.delegations import end_delegation
from memory import DelegationError

from ...delegation_builder import build_delegation_modal
from ...directory import DirectoryError
from ...services import home_changed, services_of
from ._click import NOT_OPENED, open_modal


async def handle_hand_over_button(
    ack: AsyncAck, body: dict[str, Any], client: AsyncWebClient, context: AsyncBoltContext
) -> None:
    await ack()
    services = services_of(context)
    user_id = body["user"]["id"]
    tr = await services.languages.of_person(user_id)
    opened = await open_modal(services, client, body.get("trigger_id"), build_delegation_modal(tr))
    if not opened and services.home is not None:
        await services.home.show_bulk_result(user_id, tr.gettext(NOT_OPENED))


async def handle_end_delegation_button(ack: AsyncAck, body: dict[str, Any], context: AsyncBoltContext) -> None:
    await ack()
    services = services_of(context)
    user_id = body["user"]["id"]
    delegation_id = ((body.get("actions") or [{}])[0].get("value") or "").strip()
    try:
        admin = services.directory is not None and await services.directory.is_admin(user_id)
    except DirectoryError:
        admin = False
    tr = await services.languages.of_person(user_id)
    try:
        await end_delegation(services.agent.storage, delegation_id, by=user_id, via="home", admin=admin)
    except DelegationError as exc:
        services.logger.warning("%s could not end the delegation %r: %s", user_id, delegation_id, exc)
        if services.home is not None:
            note = (
                tr.gettext("That delegation had already ended. Nothing was changed.")
                if exc.kind == "conflict"
                else tr.gettext("Only its two people or an admin may end a delegation. Nothing was changed.")
            )
            await services.home.show_note(user_id, note)
        return
    home_changed(services)
    if services.home is not None:
        await services.home.publish(user_id)
