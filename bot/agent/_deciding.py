"""One attempt by one person to act on a waiting call: authorize it (`_authorize`), decide it (`Agent._decide`),
and say what happened as one `DecisionResult`. The runtime's exceptions end here; front ends render the
result."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from memory import DelegationReader, Grant, Storage, StoredRun, StoredToolCall, ToolCallState, ToolPolicy
from memory.states import can_decide

from ._authorize import (
    Action,
    Asked,
    Directory,
    Refusal,
    RefusalReason,
    approvers_so_far,
    other_args_approved,
    permit,
    policy_for,
    requester_of,
)
from ._cancelling import as_decided
from ._results import AlreadyDecided, Counted, Decided, DecisionResult, Gone, Invalid, Refused
from ._stream import AgentStream
from .exceptions import (
    ApprovalNotCountedError,
    GrantNotAllowedError,
    QuestionHeldElsewhereError,
    ResumeDataInvalidError,
    SnapshotNotFoundError,
    ToolArgsInvalidError,
    ToolCallNotSuspendedError,
)
from .types import Approve, Cancel, CancelQuestion, Decision, Decline, DeclineQuestion, Resume, ToolCallRecord

log = logging.getLogger(__name__)


@dataclass(frozen=True, kw_only=True)
class Landed:
    """What `Agent._decide` stored: the run's stream, the call as stored, whether it was only counted (four
    eyes, more approvals needed), and the standing grant's row it stored (if any)."""

    stream: AgentStream
    call: StoredToolCall
    counted: bool = False
    grant: dict[str, Any] | None = None


@dataclass(frozen=True, kw_only=True)
class CallRead:
    """A run, one of its calls and its tool's policy as a caller just read them (`Agent.read_call`), with the
    call's record: given back to `decide_as` or `check`, they are not read again (each decision stays one
    conditional write, so a call decided since is found out there)."""

    run: StoredRun
    call: StoredToolCall
    policy: ToolPolicy
    record: ToolCallRecord


class DecidingAgent(Protocol):
    """What deciding needs of `Agent` (a protocol, so this module does not import `_agent`)."""

    @property
    def id(self) -> str: ...

    @property
    def storage(self) -> Storage: ...

    @property
    def directory(self) -> Directory: ...

    def _record_of(self, row: StoredToolCall) -> ToolCallRecord: ...

    async def _decide(
        self,
        run_id: str,
        tool_call_id: str | None,
        decision: Decision,
        *,
        decided_by: str | None = None,
        decided_for: str | None = None,
        via: str = "runtime",
        user_messages: Sequence[dict[str, Any]] = (),
        read: tuple[StoredRun, StoredToolCall, ToolPolicy] | None = None,
    ) -> Landed: ...


def action_of(decision: Decision) -> Action:
    """The rule's action for a decision value."""
    if isinstance(decision, Approve):
        if decision.grant is not None:
            return Action.GRANT
        return Action.EDIT if decision.args is not None else Action.APPROVE
    if isinstance(decision, Resume):
        return Action.ANSWER
    if isinstance(decision, DeclineQuestion | CancelQuestion | Cancel):
        return Action.CANCEL
    if isinstance(decision, Decline):
        return Action.DECLINE
    raise TypeError(f"{type(decision).__name__} is the runtime's own decision, not a person's")


def _action_or_none(decision: Decision) -> Action | None:
    """The rule's action for a decision value, None for the runtime's own (an expiry)."""
    try:
        return action_of(decision)
    except TypeError:
        return None


def asked_of(run: StoredRun, call: StoredToolCall, actor: str | None, action: Action) -> Asked:
    return Asked(
        actor=actor,
        action=action,
        tool_name=call.displayed_tool_name,
        requester=requester_of(run),
        thread_id=run.thread_id,
        approvals=approvers_so_far(call),
        approvals_for_other_args=other_args_approved(call),
        waits_for_approval=call.state == ToolCallState.AWAITING_APPROVAL,
    )


async def decide_as(
    agent: DecidingAgent,
    run_id: str,
    tool_call_id: str | None,
    decision: Decision,
    *,
    actor: str | None,
    via: str,
    user_messages: Sequence[dict[str, Any]] = (),
    read: CallRead | None = None,
) -> DecisionResult:
    """See `Agent.decide_as`."""
    run, call, stored_policy = await _read(agent, run_id, tool_call_id, read)
    if run is None or run.agent_id != agent.id or call is None or stored_policy is None:
        return Gone(run_id=run_id, tool_call_id=tool_call_id)
    if not can_decide(call.state, decision.kind):
        return await _stale(agent, call, actor=actor, action=_action_or_none(decision), via=via)
    decision = as_decided(call, decision)
    if isinstance(decision, DeclineQuestion | CancelQuestion) and not call.held_by:
        return AlreadyDecided(record=agent._record_of(call))  # only a live question can be dismissed
    action = action_of(decision)
    policy = policy_for(stored_policy, call)
    verdict = await permit(asked_of(run, call, actor, action), policy, agent.directory, delegations_of(agent))
    if isinstance(verdict, Refusal):
        return await _refused(agent, call, verdict, actor=actor, action=action, via=via)
    try:
        landed = await agent._decide(
            run.id, call.tool_call_id, decision, decided_by=actor, decided_for=verdict.on_behalf_of, via=via,
            user_messages=user_messages, read=(run, call, stored_policy),
        )  # fmt: skip
    except SnapshotNotFoundError:
        return Gone(run_id=run_id, tool_call_id=tool_call_id)
    except ToolCallNotSuspendedError:
        latest = await agent.storage.runs.get_tool_call(run.id, call.tool_call_id)
        if latest is None:
            return Gone(run_id=run_id, tool_call_id=tool_call_id)
        return await _stale(agent, latest, actor=actor, action=action, via=via)
    except (ResumeDataInvalidError, ToolArgsInvalidError) as exc:
        return Invalid(message=str(exc), errors=tuple(exc.errors))
    except QuestionHeldElsewhereError:
        refusal = Refusal(reason=RefusalReason.HELD_ELSEWHERE, tool_name=call.displayed_tool_name)
        return await _refused(agent, call, refusal, actor=actor, action=action, via=via)
    except ApprovalNotCountedError as exc:  # four eyes: a race the rule's first look could not see
        refusal = Refusal(
            reason=exc.reason or RefusalReason.ALREADY_APPROVED_BY_YOU, tool_name=call.displayed_tool_name,
            needed=exc.needed, policy_version=policy.version, actor=actor,
        )  # fmt: skip
        return await _refused(agent, call, refusal, actor=actor, action=action, via=via)
    except GrantNotAllowedError as exc:
        refusal = Refusal(
            reason=RefusalReason.GRANT_NOT_ALLOWED, tool_name=call.displayed_tool_name, detail=exc.why,
            policy_version=policy.version,
        )  # fmt: skip
        return await _refused(agent, call, refusal, actor=actor, action=action, via=via)
    record = agent._record_of(landed.call)
    if landed.counted:
        return Counted(record=record, approvals=record.approvals, needed=policy.approvals_required)
    grant = Grant(**landed.grant) if landed.grant is not None else None
    approvals = record.approvals or ((actor,) if actor else ())
    return Decided(record=record, stream=landed.stream, grant=grant, approvals=approvals)


async def check_action(
    agent: DecidingAgent,
    run_id: str,
    tool_call_id: str,
    action: Action,
    *,
    actor: str | None,
    via: str,
    audit: bool,
    read: CallRead | None = None,
) -> Refused | None:
    """See `Agent.check`."""
    run, call, stored_policy = await _read(agent, run_id, tool_call_id, read)
    if run is None or call is None or stored_policy is None or run.agent_id != agent.id:
        return None  # nothing to refuse: the decision itself finds it gone
    policy = policy_for(stored_policy, call)
    refusal = await permit(asked_of(run, call, actor, action), policy, agent.directory, delegations_of(agent))
    if not isinstance(refusal, Refusal):
        return None
    if not audit:
        return Refused(refusal=refusal, record=agent._record_of(call))
    return await _refused(agent, call, refusal, actor=actor, action=action, via=via)


async def read_call(agent: DecidingAgent, run_id: str, tool_call_id: str) -> CallRead | None:
    """See `Agent.read_call`."""
    run, call, policy = await agent.storage.runs.run_call_and_policy(run_id, tool_call_id)
    if run is None or call is None or policy is None or run.agent_id != agent.id:
        return None
    return CallRead(run=run, call=call, policy=policy, record=agent._record_of(call))


async def _read(
    agent: DecidingAgent, run_id: str, tool_call_id: str | None, read: CallRead | None
) -> tuple[StoredRun | None, StoredToolCall | None, ToolPolicy | None]:
    """The run, call and policy `read` holds (the caller read them), else read now, in one statement."""
    if read is None:
        return await agent.storage.runs.run_call_and_policy(run_id, tool_call_id)
    if read.run.id != run_id or tool_call_id not in (None, read.call.tool_call_id):
        raise ValueError(f"the call read is {read.run.id}/{read.call.tool_call_id}, not {run_id}/{tool_call_id}")
    return read.run, read.call, read.policy


def delegations_of(agent: DecidingAgent) -> DelegationReader:
    """Where the rule reads who holds whose approvals: the agent's storage."""
    return agent.storage.delegations


async def refuse_stale(
    agent: DecidingAgent,
    run_id: str,
    tool_call_id: str,
    *,
    actor: str | None,
    via: str,
    action: Action | None = None,
    read: CallRead | None = None,
) -> None:
    """A person acted on a screen that still showed a call that no longer waits (a front end found it decided
    before asking `decide_as`): audited as `decide_as` audits it, one `refused` line saying how it stands.
    `read`: the call as the front end found it (`Agent.read_call`), not read again."""
    run, call, _policy = await _read(agent, run_id, tool_call_id, read)
    if run is not None and call is not None and run.agent_id == agent.id:
        await _stale(agent, call, actor=actor, action=action, via=via)


async def _stale(
    agent: DecidingAgent, call: StoredToolCall, *, actor: str | None, action: Action | None, via: str
) -> AlreadyDecided:
    """The call no longer waits for this decision: when a person acted (a stale screen, a lost race), one
    `refused` line saying how it stands."""
    record = agent._record_of(call)
    if actor:
        how = f"already {record.outcome}" if record.outcome else f"it is {record.state}"
        try:
            await agent.storage.audit_log.record(
                run_id=call.run_id, tool_call_id=call.tool_call_id, tool_name=call.displayed_tool_name,
                action="refused", actor=actor, via=via, args_fingerprint=call.fingerprint,
                detail=f"{action or 'decide'}: it no longer waits ({how})"[:500],
            )  # fmt: skip
        except Exception:  # noqa: BLE001 - nothing was decided whether or not its line could be written
            log.exception("could not audit the stale %s of %s/%s", action, call.run_id, call.tool_call_id)
    return AlreadyDecided(record=record)


async def _refused(
    agent: DecidingAgent, call: StoredToolCall, refusal: Refusal, *, actor: str | None, action: Action, via: str
) -> Refused:
    """The refusal as a result, audited as one `refused` line: who, through what, why."""
    try:
        await agent.storage.audit_log.record(
            run_id=call.run_id, tool_call_id=call.tool_call_id, tool_name=call.displayed_tool_name,
            action="refused", actor=actor, via=via, args_fingerprint=call.fingerprint,
            policy_version=refusal.policy_version, detail=f"{action}: {refusal.text()}"[:500],
        )  # fmt: skip
    except Exception:  # noqa: BLE001 - the refusal stands whether or not its line could be written
        log.exception("could not audit the refused %s of %s/%s", action, call.run_id, call.tool_call_id)
    return Refused(refusal=refusal, record=agent._record_of(call))


__all__ = ["CallRead", "Landed", "action_of", "check_action", "decide_as", "delegations_of", "read_call"]
