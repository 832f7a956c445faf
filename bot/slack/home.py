"""The App Home tab: what each user sees there, and publishing it when it changes.

A user's Home is published when they open it, and again whenever something in it changes (an approval
posted or settled, a policy changed), but only for users who have opened it, and only when their
view's content differs from what was last published. Who opened it and a digest of what they were
last shown are kept in the database (`HomeViewRow`), so any replica refreshes any user's Home.
Refreshes are coalesced: while one runs, further changes schedule one more. `views.publish`
answering 429 is retried after its Retry-After by the web client's rate-limit handler.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
from typing import TYPE_CHECKING, Any

from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bot.admin import agent_tools, code_rule, trial_counts_per_rule
from bot.agent import Action, DatabaseAwayError
from memory import ToolPolicy

from .delegation_builder import HomeDelegation
from .directory import DirectoryError
from .home_builder import HomeApproval, HomeGrant, HomePolicy, HomeView, build_home_view
from .permissions import refusal_text
from .threads import channel_of_thread
from .waiting_messages import preview_view_of, still_waits, who_may_decide

if TYPE_CHECKING:
    from .services import SlackServices

log = logging.getLogger("bot.slack.home")


class HomePublisher:
    def __init__(self, services: SlackServices, client: AsyncWebClient):
        self.services = services
        self.client = client
        self._refresh: asyncio.Task | None = None
        self._again = False
        self._bulk_results: dict[str, str] = {}
        """Per user, what their last bulk decision did (shown at the top of their Home by this process)."""

    async def opened(self, user_id: str) -> None:
        """The user opened their Home tab: publish it (if it changed since they last saw it)."""
        await self.services.stores.home_views.opened(user_id)
        await self.publish(user_id)

    def changed(self) -> None:
        """Something a Home shows changed: refresh every opened Home, soon, in the background."""
        if self._refresh is not None and not self._refresh.done():
            self._again = True
            return
        self._refresh = asyncio.create_task(self._refresh_all())

    async def show_bulk_result(self, user_id: str, result: str) -> None:
        """Publish the user's Home with `result` (what their "Approve selected" did) at the top."""
        self._bulk_results[user_id] = result
        await self.publish(user_id)

    async def show_note(self, user_id: str, note: str) -> None:
        """Publish the user's Home with `note` at the top (why a click there changed nothing)."""
        await self.show_bulk_result(user_id, f":no_entry_sign: {note}")

    async def settled(self) -> None:
        """Wait for a refresh under way (tests, shutdown)."""
        while self._refresh is not None and not self._refresh.done():
            await asyncio.shield(self._refresh)

    async def _refresh_all(self) -> None:
        while True:
            self._again = False
            try:
                shown = await self.services.stores.home_views.digests()
            except DatabaseAwayError as exc:  # a restart: the next change refreshes the Homes again
                log.warning("could not read who opened the App Home: %s", exc)
                return
            except Exception:
                log.exception("could not read who opened the App Home")
                return
            for user_id, digest in shown.items():
                await self.publish(user_id, shown=digest)
            if not self._again:
                return

    async def publish(self, user_id: str, *, shown: str | None = None) -> bool:
        """Publish the user's Home if its content changed since `shown` (the digest last published; read
        from the database when not given); True if it was published."""
        try:
            view = await self.view_for(user_id)
            digest = hashlib.sha256(json.dumps(view, sort_keys=True).encode()).hexdigest()
            if (shown or await self.services.stores.home_views.digest(user_id)) == digest:
                return False
            await self.client.views_publish(user_id=user_id, view=view)
            await self.services.stores.home_views.published(user_id, digest)
        except SlackApiError as exc:
            log.warning("could not publish the App Home of %s: %s", user_id, exc.response.get("error"))
            return False
        except Exception:
            log.exception("could not build the App Home of %s", user_id)
            return False
        return True

    async def view_for(self, user_id: str) -> dict[str, Any]:
        services = self.services
        tr = await services.languages.of_person(user_id)
        waiting_for_you: list[HomeApproval] = []
        your_requests: list[HomeApproval] = []
        for row in await services.stores.messages.open_approvals():
            shown = await services.agent.waiting_call_view(row.run_id, row.tool_call_id)
            if shown is None or not still_waits(row, shown.record):
                continue
            record, policy = shown.record, shown.policy
            # the one view of the call and the one rule: the card offers only what the viewer may do
            actions = await services.agent.actions_for(shown, user_id)
            refused = None
            if Action.APPROVE not in actions:
                refused = await services.agent.check(
                    row.run_id, row.tool_call_id, Action.APPROVE, actor=user_id, via="home", audit=False
                )
            approval = HomeApproval(
                ref=row.id,
                tool_name=row.tool_name,
                args=record.args,
                requester=row.requester,
                channel=row.channel,
                waiting_since=record.suspended_at,
                may_decide=refused is None,
                note="" if refused is None else refusal_text(refused.refusal, tr),
                fingerprint=record.fingerprint,
                approvals=shown.approvals,
                stood_in_for=record.stood_in_for,
                approvals_required=shown.approvals_required,
                who_may_approve=who_may_decide(shown, row.requester, tr),
                expires_at=shown.expires_at,
                grant_seconds=shown.grant_seconds,
                rule=record.rule,
                rule_fields=record.rule_fields,
                actions=frozenset(str(action) for action in actions),
                preview=preview_view_of(record),
            )
            if row.requester == user_id:
                your_requests.append(approval)
            elif refused is None and (
                record.rule_approvers or policy.approvers or await self._in_conversation(user_id, row.channel)
            ):
                waiting_for_you.append(approval)
        policies_shown = await self._policies(user_id)  # an admin's: they see the feedback too
        return build_home_view(
            HomeView(
                user_id=user_id,
                waiting_for_you=waiting_for_you,
                your_requests=your_requests,
                grants=await self._grants(user_id, admin=policies_shown is not None),
                delegations=await self._delegations(person=user_id),
                every_delegation=await self._delegations() if policies_shown is not None else None,
                policies=policies_shown,
                feedback=await services.stores.feedback.counts_per_tool() if policies_shown is not None else None,
                bulk_result=self._bulk_results.get(user_id),
            ),
            tr,
        )

    async def _grants(self, user_id: str, *, admin: bool) -> list[HomeGrant]:
        """The live standing grants of this agent: every one for an admin, their own for anyone else."""
        agent = self.services.agent
        found = await agent.storage.grants.live(agent_id=agent.id, granted_by=None if admin else user_id)
        return [
            HomeGrant(
                id=grant.id,
                tool_name=grant.tool_name,
                granted_by=grant.granted_by,
                same_arguments=grant.same_arguments,
                expires_at=grant.expires_at,
                channel=channel_of_thread(grant.thread_id),
            )
            for grant in found
        ]

    async def _delegations(self, *, person: str | None = None) -> list[HomeDelegation]:
        """The delegations in force: those `person` gave or holds; every one without `person`."""
        found = await self.services.agent.storage.delegations.in_force(person=person)
        return [HomeDelegation(id=d.id, delegator=d.delegator, delegate=d.delegate, ends_at=d.ends_at) for d in found]

    async def _in_conversation(self, user_id: str, channel: str) -> bool:
        """Whether an approval anyone in the conversation may decide is shown in `user_id`'s Home: when
        its channel is public (anyone may read it). A private channel's or a DM's approval stays in its
        thread, so its arguments never reach someone outside it."""
        directory = self.services.directory
        return directory is not None and await directory.is_public_channel(channel)

    async def _policies(self, user_id: str) -> list[HomePolicy] | None:
        """Every tool with its policy, for an admin; None for anyone else."""
        directory = self.services.directory
        try:
            if directory is None or not await directory.is_admin(user_id):
                return None
        except DirectoryError as exc:
            log.warning("%s", exc)
            return None
        tools = agent_tools(self.services.agent)
        stored = {p.tool_name: p for p in await self.services.agent.storage.policies.all()}
        shown = []
        for name in sorted(set(tools) | set(stored)):
            policy = stored.get(name) or ToolPolicy(tool_name=name)
            trials = await trial_counts_per_rule(self.services.agent.storage, policy) if policy.rules else {}
            shown.append(HomePolicy(policy=policy, code=code_rule(tools.get(name)), trials=trials))
        return shown
