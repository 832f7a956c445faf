"""The App Home tab: what each user sees there, and publishing it when it changes.

A user's Home is published when they open it, and again whenever something in it changes (an approval
posted or settled, a policy changed), but only for users who have opened it, and only when their
view's content differs from what was last published. Who opened it and a digest of what they were
last shown are kept in the database (`HomeViewRow`), so any replica refreshes any user's Home.
A refresh costs about the same whatever the number of Homes: what every Home shows alike (the open
approvals and each call's view, the live grants, the policies) is read once for all of them, each Home is
built from it in memory, and the digests of those published are written in one statement. Refreshes are
coalesced: a change waits `REFRESH_AFTER` for others, and while one runs, further changes schedule one more.
Publishes are paced to Slack's `views.publish` limit (Tier 4: 100+ a minute, bursts allowed), and one
answering 429 is retried after its Retry-After by the web client's rate-limit handler.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bot.admin import agent_tools, code_rule, trial_counts_per_rule
from bot.agent import Action, DatabaseAwayError, WaitingCallView, refusal_for
from memory import Delegation, Grant, ToolPolicy

from .delegation_builder import HomeDelegation
from .directory import DirectoryError
from .home_builder import HomeApproval, HomeGrant, HomePolicy, HomeView, build_home_view
from .permissions import refusal_text
from .stores import HomeRead
from .stores.answer_feedback import ToolFeedback
from .tables import ToolCallMessageRow
from .threads import channel_of_thread
from .waiting_messages import preview_view_of, still_waits, who_may_decide

if TYPE_CHECKING:
    from .services import SlackServices

log = logging.getLogger("bot.slack.home")

REFRESH_AFTER = 0.2
"""Seconds a change waits for others before the Homes are refreshed (an approval's post and its record, a
decision and its message's update, come together)."""
PUBLISHES_PER_MINUTE = 100
"""Slack's `views.publish` limit per workspace (Tier 4: 100+ a minute), which refreshes are paced to."""
PUBLISH_BURST = 50
"""Publishes sent at once before the pace applies (Tier 4 allows generous bursts)."""
NOT_READ = "\x00not read"
"""The digest a caller of `HomePublisher.publish` has not read (None: read, and nothing was published yet)."""


class _DelegationsNow:
    """The delegations in force, read once for a refresh: who holds whose approvals, answered from memory
    (the rule's `DelegationReader`)."""

    def __init__(self, delegations: list[Delegation]):
        self.in_force = delegations
        """As `DelegationStore.in_force` lists them (soonest to end first)."""
        self._delegations = sorted(delegations, key=lambda d: (d.starts_at, d.id))

    async def delegators_of(self, delegate: str) -> tuple[str, ...]:
        return tuple(dict.fromkeys(d.delegator for d in self._delegations if d.delegate == delegate))


@dataclass
class _Shared:
    """What every Home of one refresh shows alike, read once for all of them."""

    approvals: list[tuple[ToolCallMessageRow, WaitingCallView]]
    """The open approvals whose call still waits, each with the one view of its call."""
    grants: list[Grant]
    """Every live standing grant of the agent (an admin sees all, anyone else their own)."""
    admin_parts: tuple[list[HomePolicy], list[ToolFeedback]] | None = None
    """The policies and the feedback an admin's Home shows, read for the first admin."""
    delegations: _DelegationsNow = field(default_factory=lambda: _DelegationsNow([]))
    """The delegations in force, for the rule of who may act on whose behalf."""
    in_conversation: dict[str, bool] = field(default_factory=dict)
    """Per channel, whether its approvals are shown to anyone who may decide them (a public channel)."""


class _Pace:
    """A token bucket: `burst` at once, then `per_minute`."""

    def __init__(self, per_minute: float, burst: int):
        self.rate = per_minute / 60
        self.burst = burst
        self.tokens = float(burst)
        self.at = time.monotonic()

    async def take(self) -> None:
        while True:
            now = time.monotonic()
            self.tokens = min(self.burst, self.tokens + (now - self.at) * self.rate)
            self.at = now
            if self.tokens >= 1:
                self.tokens -= 1
                return
            await asyncio.sleep((1 - self.tokens) / self.rate)


class HomePublisher:
    def __init__(self, services: SlackServices, client: AsyncWebClient):
        self.services = services
        self.client = client
        self._refresh: asyncio.Task | None = None
        self._again = False
        self._pace = _Pace(PUBLISHES_PER_MINUTE, PUBLISH_BURST)
        self._bulk_results: dict[str, str] = {}
        """Per user, what their last bulk decision did (shown at the top of their Home by this process)."""

    async def opened(self, user_id: str) -> None:
        """The user opened their Home tab: publish it (if it changed since they last saw it)."""
        await self.publish(user_id, shown=await self.services.stores.home_views.opened(user_id))

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
        await asyncio.sleep(REFRESH_AFTER)
        while True:
            self._again = False
            try:
                read = await self.services.stores.home_read(self.services.agent.id, homes=True)
                shown = read.homes
                shared = await self._shared(read) if shown else None
            except DatabaseAwayError as exc:  # a restart: the next change refreshes the Homes again
                log.warning("could not read the App Homes to refresh: %s", exc)
                return
            except Exception:
                log.exception("could not read the App Homes to refresh")
                return
            published: dict[str, str] = {}
            for user_id, digest in shown.items():
                if self._again:
                    break  # something changed meanwhile: build every Home again from a new read
                if (new := await self._published(user_id, shown=digest, shared=shared)) is not None:
                    published[user_id] = new
            if published:
                try:
                    await self.services.stores.home_views.published_many(published)
                except Exception:
                    log.exception("could not record the App Homes published")
            if not self._again:
                return

    async def publish(self, user_id: str, *, shown: str | None = NOT_READ) -> bool:
        """Publish the user's Home if its content changed since `shown` (the digest last published, None:
        never; read from the database when not given); True if it was published."""
        digest = await self._published(user_id, shown=shown)
        if digest is None:
            return False
        try:
            await self.services.stores.home_views.published_many({user_id: digest})
        except Exception:
            log.exception("could not record the App Home published for %s", user_id)
        return True

    async def _published(self, user_id: str, *, shown: str | None, shared: _Shared | None = None) -> str | None:
        """Publish the user's Home if its content's digest is not `shown` (`NOT_READ`: read now): the digest
        published, or None."""
        try:
            view = await self.view_for(user_id, shared=shared)
            digest = hashlib.sha256(json.dumps(view, sort_keys=True).encode()).hexdigest()
            if shown == NOT_READ:
                shown = await self.services.stores.home_views.digest(user_id)
            if shown == digest:
                return None
            await self._pace.take()
            await self.client.views_publish(user_id=user_id, view=view)
        except SlackApiError as exc:
            log.warning("could not publish the App Home of %s: %s", user_id, exc.response.get("error"))
            return None
        except Exception:
            log.exception("could not build the App Home of %s", user_id)
            return None
        return digest

    async def _shared(self, read: HomeRead | None = None) -> _Shared:
        """What every Home shows alike; `read`: as the caller read it (read here when not given)."""
        services = self.services
        if read is None:
            read = await services.stores.home_read(services.agent.id, homes=False)
        approvals = []
        for row in read.approvals:
            shown = await services.agent.waiting_call_view(row.run_id, row.tool_call_id)
            if shown is not None and still_waits(row, shown.record):
                approvals.append((row, shown))
        return _Shared(approvals=approvals, grants=read.grants, delegations=_DelegationsNow(read.delegations))

    async def view_for(self, user_id: str, *, shared: _Shared | None = None) -> dict[str, Any]:
        """The user's Home; `shared`: what the Homes of one refresh show alike (read now when not given)."""
        services = self.services
        shared = shared or await self._shared()
        tr = await services.languages.of_person(user_id)
        waiting_for_you: list[HomeApproval] = []
        your_requests: list[HomeApproval] = []
        for row, shown in shared.approvals:
            record, policy = shown.record, shown.policy
            # the one view of the call and the one rule: the card offers only what the viewer may do
            actions = await services.agent.actions_for(shown, user_id, delegations=shared.delegations)
            refused = None
            if Action.APPROVE not in actions:
                refused = await refusal_for(
                    shown, user_id, Action.APPROVE, services.agent.directory, shared.delegations
                )
            approval = HomeApproval(
                ref=row.id,
                tool_name=row.tool_name,
                args=record.args,
                requester=row.requester,
                channel=row.channel,
                waiting_since=record.suspended_at,
                may_decide=refused is None,
                note="" if refused is None else refusal_text(refused, tr),
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
                record.rule_approvers or policy.approvers or await self._in_conversation(row.channel, shared)
            ):
                waiting_for_you.append(approval)
        admin = await self._is_admin(user_id)
        if admin and shared.admin_parts is None:
            shared.admin_parts = (await self._policies(), await services.stores.feedback.counts_per_tool())
        policies_shown, feedback = shared.admin_parts if admin and shared.admin_parts else (None, None)
        return build_home_view(
            HomeView(
                user_id=user_id,
                waiting_for_you=waiting_for_you,
                your_requests=your_requests,
                grants=self._grants(shared.grants, user_id, admin=admin),
                delegations=self._delegations(shared, person=user_id),
                every_delegation=self._delegations(shared) if admin else None,
                policies=policies_shown,  # an admin's: they see the feedback too
                feedback=feedback,
                bulk_result=self._bulk_results.get(user_id),
            ),
            tr,
        )

    def _grants(self, live: list[Grant], user_id: str, *, admin: bool) -> list[HomeGrant]:
        """The live standing grants of this agent: every one for an admin, their own for anyone else."""
        return [
            HomeGrant(
                id=grant.id,
                tool_name=grant.tool_name,
                granted_by=grant.granted_by,
                same_arguments=grant.same_arguments,
                expires_at=grant.expires_at,
                channel=channel_of_thread(grant.thread_id),
            )
            for grant in live
            if admin or grant.granted_by == user_id
        ]

    def _delegations(self, shared: _Shared, *, person: str | None = None) -> list[HomeDelegation]:
        """The delegations in force: those `person` gave or holds; every one without `person`."""
        return [
            HomeDelegation(id=d.id, delegator=d.delegator, delegate=d.delegate, ends_at=d.ends_at)
            for d in shared.delegations.in_force
            if person is None or person in (d.delegator, d.delegate)
        ]

    async def _in_conversation(self, channel: str, shared: _Shared) -> bool:
        """Whether an approval anyone in the conversation may decide is shown in a Home: when its channel is
        public (anyone may read it). A private channel's or a DM's approval stays in its thread, so its
        arguments never reach someone outside it."""
        if channel not in shared.in_conversation:
            directory = self.services.directory
            shared.in_conversation[channel] = directory is not None and await directory.is_public_channel(channel)
        return shared.in_conversation[channel]

    async def _is_admin(self, user_id: str) -> bool:
        directory = self.services.directory
        try:
            return directory is not None and await directory.is_admin(user_id)
        except DirectoryError as exc:
            log.warning("%s", exc)
            return False

    async def _policies(self) -> list[HomePolicy]:
        """Every tool with its policy, and each trial rule's counts (for an admin)."""
        tools = agent_tools(self.services.agent)
        stored = {p.tool_name: p for p in await self.services.agent.storage.policies.all()}
        shown = []
        for name in sorted(set(tools) | set(stored)):
            policy = stored.get(name) or ToolPolicy(tool_name=name)
            trials = await trial_counts_per_rule(self.services.agent.storage, policy) if policy.rules else {}
            shown.append(HomePolicy(policy=policy, code=code_rule(tools.get(name)), trials=trials))
        return shown
