"""The HTTP API's decisions, as the Slack adapter sees them: the runtime holds them to the same rule as a
click (asking this adapter's directory), and Slack shows them as a click (the message updated in place,
the run relayed into its thread)."""

from __future__ import annotations

from slack_bolt.async_app import AsyncApp
from slack_sdk.errors import SlackApiError

from bot.agent import AgentStream, DatabaseAwayError
from bot.api import ApiDecision, ApiError, ApiFront

from .conversation import continue_run
from .decisions import thread_of_row
from .directory import DirectoryError, is_user_id
from .services import home_changed, services_of_app
from .undo import offer_undo
from .waiting_messages import refresh_tool_call_messages


def slack_api_front(app: AsyncApp, *, token: str) -> ApiFront:
    """The HTTP API over the agent of `app` (built by `create_slack_app`), with its rule and its messages."""
    services = services_of_app(app)

    async def identify(user_id: str) -> str | None:
        not_a_person = (
            "the name given is not a person of this workspace: name the Slack user ID (U… or W…) of who "
            "decides (a user-group ID is a list of people, not one)"
        )
        if not is_user_id(user_id):
            return not_a_person
        if services.directory is None:
            return None
        try:
            return None if await services.directory.is_person(user_id) else not_a_person
        except DirectoryError as exc:
            raise ApiError(503, f"{exc}; nothing was changed, try again") from None

    async def after_decision(decision: ApiDecision, stream: AgentStream | None) -> None:
        try:
            await refresh_tool_call_messages(services, app.client, decision.run_id, decision.tool_call_id)
        except (SlackApiError, DatabaseAwayError) as exc:  # the run's answer is still relayed below
            services.logger.warning(
                "could not update the message of %s/%s: %s", decision.run_id, decision.tool_call_id, exc
            )
        if stream is None:
            return  # four eyes: the call still waits; its message shows who approved so far
        rows = await services.stores.messages.of_call(decision.run_id, decision.tool_call_id)
        if rows:
            await continue_run(services, app.client, stream, thread=thread_of_row(rows[0]), requester=rows[0].requester)
            await offer_undo(services, app.client, decision.run_id, decision.tool_call_id)
        else:
            await stream.result()  # nothing in Slack shows this call: the run goes on unseen

    async def is_admin(user_id: str) -> bool:
        if services.directory is None:
            return True
        try:
            return await services.directory.is_admin(user_id)
        except DirectoryError as exc:
            raise ApiError(503, f"{exc}; nothing was changed, try again") from None

    return ApiFront(
        agent=services.agent,
        token=token,
        identify=identify,
        after_decision=after_decision,
        is_admin=is_admin,
        grants_changed=lambda: home_changed(services),
    )
