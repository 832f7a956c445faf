"""Who may decide a waiting tool call: the one rule, kept in one place, for every front end.

A click on an approval, a button in the App Home and a call to the HTTP API all ask `PolicyRule`.
It reads the tool's policy live (an admin's change holds for the next click):

- the requester (whose message led to the call) may always decline their own request;
- a disabled tool's call cannot be approved or edited (declining it is allowed: it never runs);
- with self-approval refused, the requester cannot approve it;
- with several approvals required (four eyes), the requester's approval never counts and the arguments
  cannot be edited (the runtime refuses both too, and a second approval by the same person);
- with approvers named, only they may decide: the named users, and the members of the named user
  groups (a group's own ID is never a person who decides);
- otherwise anyone in the conversation may: seeing the message already means being in it.

A refusal is said twice: in Slack's mrkdwn for an ephemeral message, and in plain text for the HTTP API.

Answering a question a tool asked is not a decision a policy governs: anyone in the conversation may.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from memory import PolicyStore, ToolPolicy

from .directory import Directory, DirectoryError


@dataclass(frozen=True, kw_only=True)
class DecisionCheck:
    """A user wants to decide (approve, decline, edit, answer) a waiting tool call."""

    user_id: str
    """Who clicked (or whom the HTTP API names as the approver)."""
    action: str
    """`approve`, `decline`, `edit_args` or `answer`."""
    requester: str
    """Whose request led to the call."""
    tool_name: str
    args: Any
    team_id: str
    channel: str
    thread_id: str
    rule_approvers: tuple[str, ...] = ()
    """The approvers named by the admin's rule that made the call wait (instead of the policy's); empty:
    the policy's."""


@dataclass(frozen=True)
class Verdict:
    """Whether the user may decide, and if not, the explanation they see."""

    allowed: bool
    explanation: str = ""
    """Slack mrkdwn (mentions, code spans), for a message in Slack."""
    plain: str = ""
    """The same in plain text, for the HTTP API's error body."""
    policy_version: int | None = None
    """The version of the tool's policy the verdict read (None: no policy was read)."""

    @property
    def text(self) -> str:
        """The plain explanation (or the mrkdwn one when no plain text was given)."""
        return self.plain or self.explanation


DecisionRule = Callable[[DecisionCheck], Awaitable[Verdict]]

APPROVING = frozenset({"approve", "edit_args"})
DECIDING = frozenset({"approve", "edit_args", "decline"})


async def anyone_in_conversation(check: DecisionCheck) -> Verdict:
    """Anyone who can see the message in the conversation may decide (the rule when no policy says more)."""
    return Verdict(True)


class PolicyRule:
    """The decision rule that applies each tool's policy (see the module docstring)."""

    def __init__(self, policies: PolicyStore, directory: Directory):
        self.policies = policies
        self.directory = directory

    async def __call__(self, check: DecisionCheck) -> Verdict:
        if check.action not in DECIDING:
            return Verdict(True)
        policy = await self.policies.get(check.tool_name)
        if check.rule_approvers:  # the rule that made the call wait names who decides it
            policy = dataclasses.replace(policy, approvers=check.rule_approvers)
        return verdict_of(policy, check, await self._is_approver(check.user_id, policy))

    async def _is_approver(self, user_id: str, policy: ToolPolicy) -> bool | str:
        if not policy.approvers:
            return True
        try:
            return await self.directory.is_among(user_id, policy.approvers)
        except DirectoryError as exc:
            return f"I could not check whether you may decide this: {exc}. Nothing was changed; try again."


def verdict_of(policy: ToolPolicy, check: DecisionCheck, is_approver: bool | str) -> Verdict:
    """The policy's answer for `check`; `is_approver` is True/False, or why it could not be told."""
    version = policy.version

    def refused(template: str, approvers: tuple[str, ...] = ()) -> Verdict:
        mrkdwn = template.format(tool=f"`{check.tool_name}`", who=who_may_decide(approvers))
        plain = template.format(tool=check.tool_name, who=who_may_decide(approvers, plain=True))
        return Verdict(False, mrkdwn, plain, policy_version=version)

    if check.action == "decline" and check.user_id == check.requester:
        return Verdict(True, policy_version=version)  # one's own request may always be withdrawn
    if policy.disabled and check.action in APPROVING:
        return refused("An admin disabled {tool}, so this request cannot be approved. You may decline it.")
    if check.action in APPROVING and not policy.self_approval and check.user_id == check.requester:
        return refused("The policy for {tool} does not let you approve your own request: ask someone else.")
    if check.action in APPROVING and policy.approvals_required > 1 and check.user_id == check.requester:
        return refused(
            f"{{tool}} needs {policy.approvals_required} approvals from people other than who asked: "
            "your own approval does not count, ask someone else."
        )
    if check.action == "edit_args" and policy.approvals_required > 1:
        return refused("{tool} needs several approvers, who all approve the same arguments: they cannot be edited.")
    if isinstance(is_approver, str):
        return Verdict(False, is_approver, is_approver, policy_version=version)
    if not is_approver:
        return refused("Only {who} may decide {tool} requests.", policy.approvers)
    return Verdict(True, policy_version=version)


def who_may_decide(approvers: tuple[str, ...], *, plain: bool = False) -> str:
    """The approvers in words: Slack mentions (`<@U1> or <!subteam^S1>`), or plain (`U1 or the members
    of user group S1`); none named: anyone in the conversation."""
    if not approvers:
        return "anyone in the conversation"
    if plain:
        names = [f"the members of user group {a}" if a.startswith("S") else a for a in approvers]
    else:
        names = [f"<!subteam^{a}>" if a.startswith("S") else f"<@{a}>" for a in approvers]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " or " + names[-1]
