"""The Revoke button next to a standing grant in the App Home: the granter or an admin ends it now."""

from __future__ import annotations

from typing import Any

from slack_bolt.context.ack.async_ack import AsyncAck
from slack_bolt.context.async_context import AsyncBoltContext
from slack_sdk.web.async_client import AsyncWebClient

from ...directory import DirectoryError
from ...services import home_changed, services_of


async def handle_grant_revoke_button(
    ack: AsyncAck, body: dict[str, Any], client: AsyncWebClient, context: AsyncBoltContext
) -> None:
    await ack()
    services = services_of(context)
    user_id = body["user"]["id"]
    grant_id = ((body.get("actions") or [{}])[0].get("value") or "").strip()
    grants = services.agent.storage.grants
    grant = await grants.get(grant_id) if grant_id else None
    try:
        admin = services.directory is not None and await services.directory.is_admin(user_id)
    except DirectoryError:
        admin = False
    if grant is None or grant.agent_id != services.agent.id or not (admin or grant.granted_by == user_id):
        services.logger.warning("%s may not revoke the standing grant %r", user_id, grant_id)
        tr = await services.languages.of_person(user_id)
        text = tr.gettext(
            "You may revoke only the standing grants you gave (an admin may revoke any). Nothing was changed."
        )
        await client.chat_postMessage(channel=user_id, text=text)
        return
    revoked = await grants.revoke(grant.id, by=user_id, via="home")
    if revoked is None:
        tr = await services.languages.of_person(user_id)
        text = tr.gettext("That standing grant had already ended. Nothing was changed.")
        await client.chat_postMessage(channel=user_id, text=text)
    else:
        services.logger.info("standing grant %s of %s revoked by %s", grant.id, grant.tool_name, user_id)
    home_changed(services)
    if services.home is not None:
        await services.home.publish(user_id)
