"""The Revoke button next to a standing grant in the App Home: ended through the runtime's rule (its
granter or an admin may, `bot.agent.revoke_grant`); a refused click is answered in the Home."""

from __future__ import annotations

from typing import Any

from slack_bolt.context.ack.async_ack import AsyncAck
from slack_bolt.context.async_context import AsyncBoltContext
from slack_sdk.web.async_client import AsyncWebClient

from bot.agent import GrantEnded, NoGrant, Refused, Revoked, revoke_grant

from ...permissions import refusal_text
from ...services import home_changed, services_of


async def handle_grant_revoke_button(
    ack: AsyncAck, body: dict[str, Any], client: AsyncWebClient, context: AsyncBoltContext
) -> None:
    await ack()
    services = services_of(context)
    user_id = body["user"]["id"]
    grant_id = ((body.get("actions") or [{}])[0].get("value") or "").strip()
    result = await revoke_grant(services.agent, grant_id, actor=user_id, via="home")
    note = None
    match result:
        case Revoked(grant=grant):
            services.logger.info("standing grant %s of %s revoked by %s", grant.id, grant.tool_name, user_id)
        case Refused():
            services.logger.warning("%s may not revoke the standing grant %r", user_id, grant_id)
            note = refusal_text(result.refusal, await services.languages.of_person(user_id))
        case NoGrant() | GrantEnded():
            tr = await services.languages.of_person(user_id)
            note = tr.gettext("That standing grant had already ended. Nothing was changed.")
    home_changed(services)
    if services.home is None:
        if note is not None:  # no Home to say it in: a DM
            await client.chat_postMessage(channel=user_id, text=note)
        return
    if note is not None:
        await services.home.show_note(user_id, note)
    else:
        await services.home.publish(user_id)
