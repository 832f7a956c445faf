"""Submitting the delegation form: the clicker hands their approvals to someone until a time. Bad input stays
in the form, next to its field, in the clicker's language, and changes nothing; the delegation is audited
`delegated` through `home`."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from slack_bolt.context.ack.async_ack import AsyncAck
from slack_bolt.context.async_context import AsyncBoltContext

from bot.delegations import make_delegation, read_until
from memory import DELEGATION_LIMIT, DelegationError

from ...delegation_builder import DELEGATE_BLOCK, UNTIL_BLOCK, read_delegation_modal
from ...directory import DirectoryError
from ...services import home_changed, services_of


async def handle_delegation_submission(
    ack: AsyncAck, body: dict[str, Any], view: dict[str, Any], context: AsyncBoltContext
) -> None:
    services = services_of(context)
    user_id = body["user"]["id"]
    tr = await services.languages.of_person(user_id, within=0.5)  # before the ack: cached, or Slack is quick
    delegate, written = read_delegation_modal((view.get("state") or {}).get("values") or {})
    storage = services.agent.storage
    now = storage.clock.now()
    if not delegate or delegate == user_id:
        await ack(response_action="errors", errors={DELEGATE_BLOCK: tr.gettext("Choose someone other than you.")})
        return
    try:
        if services.directory is not None and not await services.directory.is_person(delegate):
            await ack(response_action="errors", errors={DELEGATE_BLOCK: tr.gettext("Choose a person, not an app.")})
            return
    except DirectoryError as exc:
        error = tr.gettext("Could not check who that is: {error}", error=str(exc))
        await ack(response_action="errors", errors={DELEGATE_BLOCK: error[:150]})
        return
    try:
        until = read_until(written, now)
    except DelegationError:
        error = tr.gettext("Write a date (2026-12-11), a time (2026-12-11T17:00+09:00) or 3d, 8h, 90m.")
        await ack(response_action="errors", errors={UNTIL_BLOCK: error})
        return
    if not now + timedelta(seconds=1) <= until <= now + timedelta(seconds=DELEGATION_LIMIT):
        await ack(response_action="errors", errors={UNTIL_BLOCK: tr.gettext("Choose an end within the next 365 days.")})
        return
    try:
        await make_delegation(storage, delegator=user_id, delegate=delegate, until=until, by=user_id, via="home",
                              admin=False)  # fmt: skip
    except DelegationError:
        error = tr.gettext("You already hand your approvals to someone: end that first, on your Home.")
        await ack(response_action="errors", errors={DELEGATE_BLOCK: error})
        return
    await ack()
    services.logger.info("%s hands their approvals to %s until %s", user_id, delegate, until.isoformat())
    home_changed(services)
    if services.home is not None:
        await services.home.publish(user_id)
