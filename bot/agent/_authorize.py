"""Who may do what to a waiting call: the one rule every front end is held to.

The runtime asks it before any decision (`Agent.decide_as`, `Agent.check`); a front end only names the
actor and the action, and renders the answer. It reads the tool's policy live (an admin's change holds
for the next click) and asks the front end's `Directory` about people and groups:

- the requester (whose message led to the call) may always decline their own request, and answer or
  dismiss the questions their request asked; an admin may always cancel a waiting call (approval or question);
- whoever may decline a waiting approval may cancel it (withdraw it: not a decline);
- a disabled tool's call cannot be approved, edited or granted (declining it is allowed: it never runs);
- with self-approval refused, the requester cannot approve it;
- with several approvals required (four eyes): the requester's approval never counts, nor a second one by
  the same person, nor one given for other arguments, and the arguments cannot be edited;
- with approvers named, only they may decide (and answer): the named users, and the members of the named
  user groups (a group's own ID is never a person who decides);
- otherwise anyone in the conversation may decide; answering stays the requester's;
- someone the rule refuses may still decide (approve, edit, grant, decline) for a person whose approvals they
  hold (a delegation in force, `memory._delegations`), weighed as that person, live: never a right the
  delegator lacks, one step only (what they hold for others is not theirs to pass on), never on their own
  request, and under four eyes a person counts once, whoever they stand in for (the delegate and the
  delegator both count as having approved).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol

from memory import DelegationReader, StoredRun, StoredToolCall, ToolPolicy

from ._conditions import rule_approvers
from .exceptions import DirectoryUnavailableError


class Directory(Protocol):
    """Who people are, as the front end knows them (Slack: `users.info`, `usergroups.users.list`,
    `conversations.info`, cached). A lookup that cannot be answered raises `DirectoryUnavailableError`."""

    async def is_among(self, person: str, approvers: Sequence[str]) -> bool:
        """Whether `person` is one of `approvers`' people, or a member of one of its groups."""
        ...

    async def is_admin(self, person: str) -> bool:
        """Whether `person` administers the bot (may change policies, revoke any grant, cancel questions)."""
        ...

    async def in_conversation(self, person: str, thread_id: str) -> bool:
        """Whether `person` can read the conversation of the memory thread `thread_id`."""
        ...


class OpenDirectory:
    """The directory of a runtime without a front end that knows people: approvers are matched by their
    exact ids (no groups), nobody is an admin, and everyone is in every conversation."""

    async def is_among(self, person: str, approvers: Sequence[str]) -> bool:
        return person in approvers

    async def is_admin(self, person: str) -> bool:
        return False

    async def in_conversation(self, person: str, thread_id: str) -> bool:
        return True


class Action(StrEnum):
    """What someone wants to do to a waiting call (the word is the audit trail's)."""

    APPROVE = "approve"
    DECLINE = "decline"
    EDIT = "edit_args"
    GRANT = "grant"
    """Approve, and let later calls of the tool in the thread run without asking (a standing grant)."""
    ANSWER = "answer"
    """Resume a call that asked a question, with the data it asked for."""
    CANCEL = "cancel"
    """Withdraw a waiting call (approval or question); a live question's server hears `decline` or `cancel`."""
    REVOKE = "revoke"
    """End a standing grant."""


APPROVING = frozenset({Action.APPROVE, Action.EDIT, Action.GRANT})
DECIDING = APPROVING | {Action.DECLINE}


class RefusalReason(StrEnum):
    """Why the rule (or the call's state) let nothing happen."""

    NOT_AN_APPROVER = "not_an_approver"
    SELF_APPROVAL = "self_approval"
    TOOL_DISABLED = "tool_disabled"
    NOT_IN_CONVERSATION = "not_in_conversation"
    ALREADY_APPROVED_BY_YOU = "already_approved_by_you"
    REQUESTER_CANNOT_COUNT = "requester_cannot_count"
    EDIT_NOT_ALLOWED = "edit_not_allowed"
    ARGS_CHANGED = "args_changed"
    """Four eyes: the earlier approvals were given for other arguments."""
    NO_ACTOR = "no_actor"
    """Four eyes, or a grant: nobody was named as the approver."""
    NOT_THE_SPEAKER = "not_the_speaker"
    """An answer to a question by someone who may not answer it."""
    NOT_THE_GRANTER = "not_the_granter"
    NOT_THE_UNDOER = "not_the_undoer"
    """An undo by someone who neither approved the call nor administers the bot."""
    GRANT_NOT_ALLOWED = "grant_not_allowed"
    DIRECTORY_UNAVAILABLE = "directory_unavailable"
    HELD_ELSEWHERE = "held_elsewhere"
    """A sub-agent's live question held by another process, which a decision here cannot reach yet."""
    OWN_REQUEST_AS_DELEGATE = "own_request_as_delegate"
    """A delegate may not approve their own request for the person they stand in for."""


_TEMPLATES: dict[RefusalReason, str] = {
    RefusalReason.NOT_AN_APPROVER: "Only {who} may decide {tool} requests.",
    RefusalReason.SELF_APPROVAL: "The policy for {tool} does not let you approve your own request: ask someone else.",
    RefusalReason.TOOL_DISABLED: "An admin disabled {tool}, so this request cannot be approved. You may decline it.",
    RefusalReason.NOT_IN_CONVERSATION: "Only {who} may decide {tool} requests.",
    RefusalReason.ALREADY_APPROVED_BY_YOU: "Your approval does not count: {actor} already approved it; "
    "it waits for someone else.",
    RefusalReason.REQUESTER_CANNOT_COUNT: "{tool} needs {needed} approvals from people other than who asked: "
    "your own approval does not count, ask someone else.",
    RefusalReason.EDIT_NOT_ALLOWED: "{tool} needs several approvers, who all approve the same arguments: "
    "they cannot be edited.",
    RefusalReason.ARGS_CHANGED: "Your approval does not count: its arguments are not those the earlier approvals "
    "were given for; decline it.",
    RefusalReason.NO_ACTOR: "Nothing was decided: name who decides (approver=...).",
    RefusalReason.NOT_THE_SPEAKER: "Only {who} may answer this question from {tool}.",
    RefusalReason.NOT_THE_GRANTER: "Only {who}, who gave it, or an admin may revoke this grant.",
    RefusalReason.NOT_THE_UNDOER: "Only {who}, who approved it, or an admin may undo this {tool} call.",
    RefusalReason.GRANT_NOT_ALLOWED: "No standing grant for {tool}: {detail}. Nothing was changed; "
    "the request still waits.",
    RefusalReason.DIRECTORY_UNAVAILABLE: "I could not check whether you may decide this: {detail}. "
    "Nothing was changed; try again.",
    RefusalReason.HELD_ELSEWHERE: "This question waits inside a sub-agent's MCP call that another bot process "
    "holds, and this answer could not reach it, so nothing was decided. Try again in a moment, or decline it.",
    RefusalReason.OWN_REQUEST_AS_DELEGATE: "You decide for {detail} while they are away, but not on your own "
    "request: ask someone else.",
}


@dataclass(frozen=True)
class Naming:
    """How a text names people, groups and tools: Slack's mrkdwn (`<@U1>`), or plain text for an API."""

    person: Callable[[str], str] = str
    group: Callable[[str], str] = "the members of user group {}".format
    tool: Callable[[str], str] = str
    anyone: str = "anyone in the conversation"
    """The words for "no one in particular is named"."""
    to_actor: bool = False
    """The text is shown to the actor alone (an ephemeral message): "you" names them."""

    def people(self, ids: Sequence[str]) -> str:
        names = [self.group(i) if i.startswith("S") else self.person(i) for i in ids]
        if not names:
            return self.anyone
        return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " or " + names[-1]


PLAIN = Naming()


@dataclass(frozen=True, kw_only=True)
class Refusal:
    """Why an actor may not act, and who may instead (ids of people and groups; empty: anyone in the
    conversation)."""

    reason: RefusalReason
    tool_name: str
    may_instead: tuple[str, ...] = ()
    detail: str = ""
    """What a refusal the rule cannot say in its own words adds (a grant's limit, a directory failure)."""
    needed: int = 1
    policy_version: int | None = None
    actor: str | None = None

    def text(self, naming: Naming = PLAIN) -> str:
        """The refusal in words for its actor, naming people as `naming` does."""
        who = naming.people(self.may_instead)
        if self.reason == RefusalReason.NOT_IN_CONVERSATION:
            who = "people in the conversation"
        actor = "you" if naming.to_actor or not self.actor else naming.person(self.actor)
        return _TEMPLATES[self.reason].format(
            tool=naming.tool(self.tool_name), who=who, detail=self.detail, needed=self.needed, actor=actor
        )


@dataclass(frozen=True, kw_only=True)
class Asked:
    """Someone wants to act on one waiting call: what the rule weighs besides the tool's policy."""

    actor: str | None
    action: Action
    tool_name: str
    requester: str | None
    thread_id: str | None
    approvals: tuple[str, ...] = ()
    """Who counted so far (four eyes): who approved, and whom they stood in for."""
    approvals_for_other_args: bool = False
    """Whether an earlier approval was given for other arguments than those waiting now."""
    waits_for_approval: bool = False
    """The call waits for approval (not for an answer): who may cancel it is who may decline it."""


def policy_for(policy: ToolPolicy, call: StoredToolCall) -> ToolPolicy:
    """The policy as it holds for `call`: the approvers named by the admin's rule that made it wait
    (`_conditions`) decide it instead of the policy's."""
    named = rule_approvers(call.rule)
    return dataclasses.replace(policy, approvers=named) if named else policy


def requester_of(run: StoredRun) -> str | None:
    """Whose request led to the run's calls: the speaker the front end named (`request_context`'s
    `requester`), else the run's resource."""
    return (run.request_context or {}).get("requester") or run.resource_id


@dataclass(frozen=True, kw_only=True)
class Permitted:
    """The rule lets the actor act: on their own right, or standing in for `on_behalf_of` (a delegation)."""

    on_behalf_of: str | None = None


def other_args_approved(call: StoredToolCall) -> bool:
    """Four eyes: whether an earlier approval was given for other arguments than those waiting now."""
    return any(a.get("fingerprint") != call.fingerprint for a in call.approvals or () if isinstance(a, dict))


def approvers_so_far(call: StoredToolCall) -> tuple[str, ...]:
    """Who counted for a four-eyes call so far, in order: who approved, and whom a delegate stood in for."""
    return tuple(
        person
        for a in call.approvals or ()
        if isinstance(a, dict)
        for person in (a.get("by", ""), a.get("for"))
        if person is not None
    )


def stood_in_for(call: StoredToolCall) -> tuple[tuple[str, str], ...]:
    """(delegate, delegator) of each approval or decision of `call` made standing in for someone."""
    pairs = [(a["by"], a["for"]) for a in call.approvals or () if isinstance(a, dict) and a.get("by") and a.get("for")]
    if call.decided_by and call.decided_for:
        pairs.append((call.decided_by, call.decided_for))
    return tuple(dict.fromkeys(pairs))


def four_eyes_refusal(
    call: StoredToolCall, actor: str | None, requester: str | None, *, edited: bool, on_behalf_of: str | None = None
) -> tuple[RefusalReason, str] | None:
    """Why an approval of a four-eyes call cannot count, as the call stands now (read again after a lost
    race), with the words of `ApprovalNotCountedError`; None when it counts."""
    if edited:
        return RefusalReason.EDIT_NOT_ALLOWED, (
            "arguments cannot be edited while several people approve them; decline and ask again"
        )
    if not actor:
        return RefusalReason.NO_ACTOR, "name the approver (approver=...)"
    if actor == requester:
        return RefusalReason.REQUESTER_CANNOT_COUNT, "the requester's own approval does not count; ask someone else"
    if on_behalf_of is not None and on_behalf_of == requester:
        return RefusalReason.REQUESTER_CANNOT_COUNT, "the requester's own approval does not count; ask someone else"
    for person in (actor, on_behalf_of):
        if person is not None and person in approvers_so_far(call):
            return RefusalReason.ALREADY_APPROVED_BY_YOU, f"{person} already approved it; it waits for someone else"
    if other_args_approved(call):
        return RefusalReason.ARGS_CHANGED, (
            "its arguments are not those the earlier approvals were given for; decline it"
        )
    return None


def deciders(policy: ToolPolicy) -> tuple[str, ...]:
    """Who may decide the tool's approvals: its approvers; empty: anyone in the conversation."""
    return tuple(policy.approvers)


def answerers(policy: ToolPolicy, requester: str | None) -> tuple[str, ...]:
    """Who may answer a question the tool asked: the requester, and the tool's approvers."""
    return tuple(dict.fromkeys([*([requester] if requester else []), *policy.approvers]))


async def authorize(
    asked: Asked, policy: ToolPolicy, directory: Directory, delegations: DelegationReader | None = None
) -> Refusal | None:
    """None if `asked.actor` may do `asked.action` under `policy`, else why not (see the module docstring)."""
    verdict = await permit(asked, policy, directory, delegations)
    return verdict if isinstance(verdict, Refusal) else None


async def permit(
    asked: Asked, policy: ToolPolicy, directory: Directory, delegations: DelegationReader | None = None
) -> Permitted | Refusal:
    """Whether `asked.actor` may do `asked.action` under `policy`: on their own right, else for someone whose
    approvals they hold (`delegations`); a `Refusal` says why not (see the module docstring)."""
    refusal = await _own_right(asked, policy, directory)
    actor = asked.actor
    if refusal is None:
        return Permitted()
    if delegations is None or not actor or asked.action not in DECIDING:
        return refusal
    if refusal.reason in (RefusalReason.TOOL_DISABLED, RefusalReason.DIRECTORY_UNAVAILABLE):
        return refusal  # nobody may approve a disabled tool's call; a directory that failed fails for both
    for delegator in await delegations.delegators_of(actor):
        if delegator == actor:
            continue
        if asked.action in APPROVING and actor == asked.requester:
            return dataclasses.replace(refusal, reason=RefusalReason.OWN_REQUEST_AS_DELEGATE, detail=delegator)
        if asked.action in APPROVING and policy.approvals_required > 1 and actor in asked.approvals:
            return dataclasses.replace(refusal, reason=RefusalReason.ALREADY_APPROVED_BY_YOU)
        # weighed as the delegator, without their own delegations: one step only
        if await _own_right(dataclasses.replace(asked, actor=delegator), policy, directory) is None:
            return Permitted(on_behalf_of=delegator)
    return refusal


async def _own_right(asked: Asked, policy: ToolPolicy, directory: Directory) -> Refusal | None:
    """None if `asked.actor` may do `asked.action` under `policy` on their own right, else why not."""
    actor, action = asked.actor, asked.action

    def refused(reason: RefusalReason, may_instead: tuple[str, ...] = (), detail: str = "") -> Refusal:
        return Refusal(
            reason=reason, tool_name=asked.tool_name, may_instead=may_instead, detail=detail,
            needed=policy.approvals_required, policy_version=policy.version, actor=actor,
        )  # fmt: skip

    is_requester = actor is not None and actor == asked.requester
    try:
        if action == Action.CANCEL and asked.waits_for_approval:
            if actor and await directory.is_admin(actor):
                return None
            action = Action.DECLINE  # withdrawing an approval: whoever may decline it
        if action in (Action.ANSWER, Action.CANCEL):
            if is_requester or not actor:
                return None  # no one named: the caller's own (trusted code, an API token holder)
            if actor and action == Action.CANCEL and await directory.is_admin(actor):
                return None
            if actor and policy.approvers and await directory.is_among(actor, policy.approvers):
                return None
            return refused(RefusalReason.NOT_THE_SPEAKER, answerers(policy, asked.requester))
        if action == Action.REVOKE:
            if is_requester or (actor and await directory.is_admin(actor)):
                return None  # the grant's giver is passed as the requester
            return refused(RefusalReason.NOT_THE_GRANTER, (asked.requester,) if asked.requester else ())
        if action == Action.DECLINE and is_requester:
            return None  # one's own request may always be withdrawn
        four_eyes = policy.approvals_required > 1
        if action in APPROVING:
            if policy.disabled:
                return refused(RefusalReason.TOOL_DISABLED)
            if is_requester and not policy.self_approval:
                return refused(RefusalReason.SELF_APPROVAL, deciders(policy))
            if four_eyes and is_requester:
                return refused(RefusalReason.REQUESTER_CANNOT_COUNT, deciders(policy))
            if four_eyes and action == Action.EDIT:
                return refused(RefusalReason.EDIT_NOT_ALLOWED)
        if not actor:
            return refused(RefusalReason.NO_ACTOR) if four_eyes and action in APPROVING else None
        if policy.approvers:
            if not await directory.is_among(actor, policy.approvers):
                return refused(RefusalReason.NOT_AN_APPROVER, deciders(policy))
        elif asked.thread_id and not await directory.in_conversation(actor, asked.thread_id):
            return refused(RefusalReason.NOT_IN_CONVERSATION)
        if four_eyes and action in APPROVING:
            if actor in asked.approvals:
                return refused(RefusalReason.ALREADY_APPROVED_BY_YOU)
            if asked.approvals_for_other_args:
                return refused(RefusalReason.ARGS_CHANGED)
    except DirectoryUnavailableError as exc:
        return refused(RefusalReason.DIRECTORY_UNAVAILABLE, detail=str(exc))
    return None


__all__ = [
    "PLAIN",
    "Action",
    "Asked",
    "Directory",
    "Naming",
    "OpenDirectory",
    "Permitted",
    "Refusal",
    "RefusalReason",
    "answerers",
    "approvers_so_far",
    "four_eyes_refusal",
    "other_args_approved",
    "permit",
    "policy_for",
    "requester_of",
    "stood_in_for",
    "authorize",
    "deciders",
]
