"""One view of a waiting call (`types.WaitingCallView`), built once in the runtime, that every surface renders
(the thread's message, its copies, the App Home's card, the HTTP API's JSON), and the actions the one rule
allows a viewer."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from typing import Protocol

from memory import DelegationReader, StoredRun, StoredToolCall, ToolPolicy

from ._authorize import (
    Action,
    Directory,
    Refusal,
    answerers,
    authorize,
    deciders,
    other_args_approved,
    policy_for,
    requester_of,
)
from .types import ToolCallRecord, WaitingCallView


class RecordMaker(Protocol):
    """What a view needs of `Agent` (a protocol, so this module does not import `_agent`)."""

    def _record_of(self, row: StoredToolCall) -> ToolCallRecord: ...


APPROVAL_ACTIONS = (Action.APPROVE, Action.DECLINE, Action.EDIT, Action.GRANT, Action.CANCEL)
QUESTION_ACTIONS = (Action.ANSWER, Action.CANCEL)


def view_of(agent: RecordMaker, run: StoredRun, call: StoredToolCall, policy: ToolPolicy) -> WaitingCallView:
    policy = policy_for(policy, call)  # the approvers an admin's rule names decide instead of the policy's
    record = agent._record_of(call)
    requester = requester_of(run)
    since = record.suspended_at
    expires = since + timedelta(seconds=policy.expires_after) if since and policy.expires_after else None
    offered = policy.grant_seconds if policy.allows_grants and run.thread_id and call.child_run_id is None else None
    return WaitingCallView(
        record=record,
        requester=requester,
        approvals=record.approvals,
        approvals_required=policy.approvals_required,
        deciders=deciders(policy),
        answerers=answerers(policy, requester),
        self_approval=policy.self_approval,
        disabled=policy.disabled,
        expires_at=expires if record.requires_approval else None,
        grant_seconds=offered or None,
        policy=policy,
        thread_id=run.thread_id,
        approvals_for_other_args=other_args_approved(call),
    )


def _possible(view: WaitingCallView) -> list[Action]:
    """The actions the call itself has (before anyone is weighed): no edit of arguments without a schema or
    of an interrupted call (what may have run is what runs again), no grant unless one is on offer."""
    possible = []
    for action in QUESTION_ACTIONS if view.is_question else APPROVAL_ACTIONS:
        if action == Action.EDIT and (view.record.input_schema is None or view.record.interrupted):
            continue
        if action == Action.GRANT and (view.grant_seconds is None or view.record.interrupted):
            continue
        possible.append(action)
    return possible


async def actions_for(
    view: WaitingCallView, viewer: str | None, directory: Directory, delegations: DelegationReader | None = None
) -> frozenset[Action]:
    """The actions the rule allows `viewer` on the call of `view` (those a surface offers them), on their own
    right or for someone whose approvals they hold (`delegations`)."""
    allowed = set()
    for action in _possible(view):
        if await authorize(view.asked(viewer, action), view.policy, directory, delegations) is None:
            allowed.add(action)
    return frozenset(allowed)


async def refusal_for(
    view: WaitingCallView,
    viewer: str | None,
    action: Action,
    directory: Directory,
    delegations: DelegationReader | None = None,
) -> Refusal | None:
    """Why the rule does not let `viewer` do `action` to the call of `view` (None: it does), from the view alone:
    what `Agent.check` answers without reading the call again (a surface showing many people one call)."""
    return await authorize(view.asked(viewer, action), view.policy, directory, delegations)


SOMEONE = "\x00someone"
"""The stand-in viewer of a message many people read: not the requester, not an approver so far."""


class _AnyoneEligible:
    """A directory in which the stand-in is whoever the rule asks for (an approver, in the conversation)."""

    async def is_among(self, person: str, approvers: Sequence[str]) -> bool:
        return True

    async def is_admin(self, person: str) -> bool:
        return False

    async def in_conversation(self, person: str, thread_id: str) -> bool:
        return True


async def offered_actions(view: WaitingCallView) -> frozenset[Action]:
    """The actions the rule allows someone on the call of `view`: what a message many people read offers
    (the thread's message, a channel's copy). What holds for everyone holds here (a four-eyes call's
    arguments cannot be edited, a disabled tool's call can only be declined); who the clicker is, the rule
    weighs when they click (the requester counts as someone: they may answer their own question)."""
    anyone = _AnyoneEligible()
    offered = await actions_for(view, SOMEONE, anyone)
    if view.requester:
        offered |= await actions_for(view, view.requester, anyone)
    return offered


__all__ = ["WaitingCallView", "actions_for", "offered_actions", "view_of"]
