"""Winning a decision about a waiting call in storage: the decision checked (edited arguments, resume data,
a standing grant asked for), four eyes counted, then one conditional UPDATE of the call out of its waiting
state, with its audit lines, and the run going on. `Agent._decide` delegates here; who may decide is
asked before, in `_deciding.decide_as` (through `_authorize`)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import replace
from typing import Any, Protocol

from memory import Audit, Storage, StoredRun, StoredToolCall, ToolCallState, ToolPolicy, new_grant_values
from memory.states import SETTLED_STATES, DecisionKind, can_decide, next_state_after, waiting_states_for
from memory.tables import utcnow
from tools import (
    InvalidSchemaError,
    JsonValueError,
    Schema,
    SchemaError,
    SchemaValidationError,
    Tool,
    plain_json,
    to_jsonable,
)

from ._authorize import four_eyes_refusal, requester_of
from ._cancelling import as_decided, cancelled_message
from ._deciding import Landed
from ._driving import WonDecision, declined_message, expired_message
from ._fingerprint import fingerprint
from ._live_questions import LIVE_QUESTIONS_CHANNEL, LiveQuestions
from ._run import RunDriver
from ._stream import AgentStream
from .exceptions import (
    ApprovalNotCountedError,
    GrantNotAllowedError,
    QuestionHeldElsewhereError,
    ResumeDataInvalidError,
    ResumeSchemaInvalidError,
    SnapshotNotFoundError,
    ToolArgsInvalidError,
    ToolCallNotSuspendedError,
)
from .types import Approve, CancelQuestion, Chunk, Decision, DeclineQuestion, Resume


class Owner(Protocol):
    """An agent as far as who holds a live question goes: its process's name and its sub-agents."""

    @property
    def owner(self) -> str: ...

    @property
    def agents(self) -> Mapping[str, Owner]: ...


class DecidedAgent(Owner, Protocol):
    """What winning a decision needs of `Agent` (a protocol, so this module does not import `_agent`)."""

    @property
    def id(self) -> str: ...

    @property
    def storage(self) -> Storage: ...

    @property
    def tools(self) -> Mapping[str, Tool]: ...

    @property
    def _storage_configured(self) -> bool: ...

    def _driver_for(self, run: StoredRun) -> RunDriver: ...


class Decisions:
    """Wins one agent's decisions in storage; the live questions of this process (`live`) are let go of
    by whoever decides them, and taken back when another caller won."""

    def __init__(self, agent: DecidedAgent, live: LiveQuestions) -> None:
        self._agent = agent
        self._live = live

    async def decide(
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
    ) -> Landed:
        """`decide`, saying what landed; `read`: the run, the call and its tool's policy (the one in force at
        the decision) as the caller just read them, in one statement."""
        run, call, policy = read or await self._waiting_call(run_id, tool_call_id, decision.kind)
        decision = as_decided(call, decision)
        if isinstance(decision, DeclineQuestion | CancelQuestion) and not call.held_by:
            raise ToolCallNotSuspendedError(
                run_id, call.tool_call_id, call.state,
                hint="only a live question (an MCP server's) can be declined or cancelled; resume it with data",
            )  # fmt: skip
        if call.child_run_id is not None and await self._held_elsewhere_below(call):
            # the supervisor's run cannot follow a hand-over to another process yet: decide nothing
            raise QuestionHeldElsewhereError(run.id, call.tool_call_id)
        decision, edit = self._checked_decision(call, decision)
        grant = self._new_grant(run, call, decision, policy, decided_by, edit)  # None unless one is asked for
        won = WonDecision(decision=decision, decided_by=decided_by, decided_for=decided_for, via=via)
        quorum: tuple[int, int] | None = None  # four eyes, the last approval: (approvals counted before it, needed)
        if isinstance(decision, Approve) and policy.approvals_required > 1:
            call, last = await self._count_approval(run, call, won, policy, edited=bool(edit))
            if not last:
                # more approvals are needed: the call still waits
                return Landed(stream=AgentStream(run.id, _still_waiting(run.id)), call=call, counted=True)
            quorum = (call.approval_count or 0, policy.approvals_required)
        # a live question held by another process: the decision is stored here, and that process goes on
        held_elsewhere = call.held_by is not None and call.held_by != self._agent.owner
        key = (run.id, call.tool_call_id)
        held_here = self._live.let_go(key)  # this caller goes on with it, not the keeper
        try:
            in_turn = await self._store_decision(
                run, call, won, edit, policy_version=policy.version, user_messages=user_messages,
                lease=None if held_elsewhere else self._agent.owner, quorum=quorum, grant=grant,
            )  # fmt: skip
        except ToolCallNotSuspendedError as exc:
            if held_here:
                self._live.hold_key(key)  # another process decided it: the keeper goes on with it here
            if quorum is not None and exc.state == ToolCallState.AWAITING_APPROVAL:
                # another approval of the same call counted meanwhile: count this one again from there
                return await self.decide(
                    run_id, call.tool_call_id, decision, decided_by=decided_by, decided_for=decided_for, via=via,
                    user_messages=user_messages,
                )  # fmt: skip
            raise
        except GrantNotAllowedError:  # the policy changed while this was decided: nothing was stored
            if held_here:
                self._live.hold_key(key)
            raise
        if held_elsewhere:
            await self._agent.storage.notify(LIVE_QUESTIONS_CHANNEL, f"{run.id}:{call.tool_call_id}")
            return Landed(stream=AgentStream(run.id, _handed_over(run.id)), call=call, grant=grant)
        won = replace(won, settled_in_turn=in_turn)
        driver = self._agent._driver_for(run)
        # `transition` updated `call` to what was stored
        return Landed(stream=AgentStream(run.id, driver.after_decision(call, won, policy)), call=call, grant=grant)

    async def _waiting_call(
        self, run_id: str, tool_call_id: str | None, kind: DecisionKind
    ) -> tuple[StoredRun, StoredToolCall, ToolPolicy]:
        """This agent's run, its call that waits for a decision of `kind` and the call's policy (one read);
        raises when there is none."""
        run, call, policy = await self._agent.storage.runs.run_call_and_policy(run_id, tool_call_id)
        if run is None or run.agent_id != self._agent.id:
            raise SnapshotNotFoundError(run_id, storage_configured=self._agent._storage_configured)
        if call is None or policy is None or not can_decide(call.state, kind):
            raise ToolCallNotSuspendedError(run_id, tool_call_id, call.state if call else None, wanted=kind)
        return run, call, policy

    def _checked_decision(self, call: StoredToolCall, decision: Decision) -> tuple[Decision, dict[str, Any]]:
        """The decision as it will be stored (resume data cleaned and validated) and the fields of an edit
        of the arguments (none unless `Approve(args=...)`); refused before anything is stored."""
        if isinstance(decision, Resume):
            return replace(decision, data=self._checked_resume_data(call, decision.data)), {}
        if isinstance(decision, Approve) and decision.args is not None:
            return decision, self._checked_edit(call, decision.args)
        return decision, {}

    async def _store_decision(
        self,
        run: StoredRun,
        call: StoredToolCall,
        won: WonDecision,
        edit: dict[str, Any],
        *,
        policy_version: int,
        user_messages: Sequence[dict[str, Any]],
        lease: str | None,
        quorum: tuple[int, int] | None = None,
        grant: dict[str, Any] | None = None,
    ) -> bool:
        """Win the decision in storage: one conditional UPDATE of the call out of its waiting state, with
        its audit lines, the tool message of a refusal (a crash right after loses nothing) and the run's
        lease (`lease`: the deciding process works on the run now, so recovery leaves it alone; None for a
        live question another process holds, whose lease stays with it). Raises
        `ToolCallNotSuspendedError` when another caller won. Whether the decision settled the call in the
        run's turn (`WonDecision.settled_in_turn`): a refusal that this process goes on from.

        `quorum` (the last approval a four-eyes call needs: how many were counted before it, how many are
        needed): the UPDATE also requires exactly that many counted and the same arguments. `grant` (a
        standing grant's row): stored in the same transaction, audited as `granted`, only if this caller won."""
        kind = won.kind
        target = next_state_after(kind, passes_down=call.child_run_id is not None)
        fields: dict[str, Any] = {
            "decision": kind.recorded_as,
            "decided_by": won.decided_by,
            "decided_for": won.decided_for,
            "decided_at": self._agent.storage.clock.now(),
            "reason": won.reason,
            **edit,
        }
        if isinstance(won.decision, Resume):
            fields["resume_data"] = won.decision.data
        by, for_ = won.decided_by, won.decided_for
        audit = [Audit(action=kind.recorded_as, actor=by, on_behalf_of=for_, via=won.via, detail=won.reason,
                       policy_version=policy_version)]  # fmt: skip
        if edit:
            audit.insert(0, Audit(action="edited", actor=by, on_behalf_of=for_, via=won.via,
                                  policy_version=policy_version, before=call.args, after=edit["args"]))  # fmt: skip
        if grant is not None:
            scope = "same arguments only" if grant["args_fingerprint"] else "any arguments"
            audit.append(Audit(action="granted", actor=by, on_behalf_of=for_, via=won.via, policy_version=policy_version,
                               detail=f"grant {grant['id']}: {grant['tool_name']} in this thread, {scope}, "
                               f"until {grant['expires_at'].isoformat(timespec='seconds')}"))  # fmt: skip
        approvals_seen = None
        if quorum is not None:
            approvals_seen, needed = quorum
            fields["approvals"] = [*(call.approvals or []), _approval(won, call)]
            fields["approval_count"] = approvals_seen + 1
            audit[-1] = replace(audit[-1], detail=f"approval {approvals_seen + 1} of {needed}")
        messages = list(user_messages)
        if target == ToolCallState.DECLINED:
            messages = [declined_message(call, won.reason)]
        elif target == ToolCallState.EXPIRED:
            messages = [expired_message(call, won.reason)]
        elif target == ToolCallState.CANCELLED:
            messages = [cancelled_message(call, won.decided_by, won.reason)]
        in_turn = target in SETTLED_STATES and lease is not None
        won_it = await self._agent.storage.runs.transition(
            call,
            target,
            allowed_from=waiting_states_for(kind),
            messages=messages,
            run=run,
            audit=audit,
            lease=lease,
            approvals_seen=approvals_seen,
            grant=grant,
            in_turn=in_turn,
            **fields,
        )
        if not won_it:
            latest = await self._agent.storage.runs.get_tool_call(run.id, call.tool_call_id)
            raise ToolCallNotSuspendedError(run.id, call.tool_call_id, latest.state if latest else None)
        return in_turn

    def _new_grant(
        self,
        run: StoredRun,
        call: StoredToolCall,
        decision: Decision,
        policy: ToolPolicy,
        decided_by: str | None,
        edit: dict[str, Any],
    ) -> dict[str, Any] | None:
        """The row of the standing grant an `Approve(grant=...)` asks for, checked against the tool's policy
        as it is now; None when no grant is asked for. Raises `GrantNotAllowedError` before anything is stored."""
        asked = decision.grant if isinstance(decision, Approve) else None
        if asked is None:
            return None
        name = call.displayed_tool_name
        if not policy.grant_seconds:
            raise GrantNotAllowedError(name, "its policy allows no grants (an admin sets grant_seconds)")
        if policy.approvals_required > 1:
            raise GrantNotAllowedError(name, f"its policy needs {policy.approvals_required} approvals for every call")
        if not decided_by:
            raise GrantNotAllowedError(name, "a grant needs the approver's name")
        if call.child_run_id is not None or call.tool_name != name:
            raise GrantNotAllowedError(name, "a sub-agent's call cannot be granted")
        if not run.thread_id:
            raise GrantNotAllowedError(name, "the run has no thread")
        seconds = policy.grant_seconds if asked.seconds is None else asked.seconds
        if isinstance(seconds, bool) or not isinstance(seconds, int) or not 1 <= seconds <= policy.grant_seconds:
            raise GrantNotAllowedError(name, f"a grant lasts 1 to {policy.grant_seconds} seconds")
        return new_grant_values(
            agent_id=self._agent.id,
            tool_name=name,
            thread_id=run.thread_id,
            resource_id=run.resource_id,
            granted_by=decided_by,
            run_id=run.id,
            tool_call_id=call.tool_call_id,
            args_fingerprint=(edit.get("fingerprint") or call.fingerprint) if asked.same_arguments else None,
            policy_version=policy.version,
            now=self._agent.storage.clock.now(),
            seconds=seconds,
        )

    async def _held_elsewhere_below(self, call: StoredToolCall) -> bool:
        """Whether the inner call a supervisor's call passes decisions down to is a live question held by
        another process (not by this agent or one of its sub-agents here)."""
        owners: set[str] = set()
        agents: list[Owner] = [self._agent]
        while agents:
            current = agents.pop()
            owners.add(current.owner)
            agents.extend(current.agents.values())
        inner: StoredToolCall | None = call
        for _ in range(32):  # a chain of sub-agents is short; a cycle in stored data ends here
            if inner is None or inner.child_run_id is None or inner.child_tool_call_id is None:
                break
            inner = await self._agent.storage.runs.get_tool_call(inner.child_run_id, inner.child_tool_call_id)
        return inner is not None and inner.held_by is not None and inner.held_by not in owners

    async def _count_approval(
        self, run: StoredRun, call: StoredToolCall, won: WonDecision, policy: ToolPolicy, *, edited: bool
    ) -> tuple[StoredToolCall, bool]:
        """Four eyes: count one approval of a call whose policy needs several distinct approvers; the call
        (with this approval when it was counted) and whether this is the last one needed.

        What may not count is the rule's (`_authorize.four_eyes_refusal`): the requester, a second approval
        by the same person, one without a named approver, one with edited arguments, one whose earlier
        approvals were given for other arguments; it raises `ApprovalNotCountedError`. Before the last one
        needed, the approval is counted in storage (`RunStore.count_approval`, one conditional UPDATE);
        for the last one, the call as read last is returned uncounted, so that `decide` approves it in one
        UPDATE only while exactly the approvals it shows are counted."""
        needed = policy.approvals_required
        requester = requester_of(run)
        while True:
            refused = four_eyes_refusal(call, won.decided_by, requester, edited=edited, on_behalf_of=won.decided_for)
            if refused is not None:
                reason, why = refused
                raise ApprovalNotCountedError(call.displayed_tool_name, needed, why, reason=reason)
            seen = call.approval_count or 0
            if seen + 1 >= needed:
                return call, True
            audit = Audit(action="approved", actor=won.decided_by, on_behalf_of=won.decided_for, via=won.via,
                          policy_version=policy.version,
                          detail=f"approval {seen + 1} of {needed}; waits for {needed - seen - 1} more")  # fmt: skip
            if await self._agent.storage.runs.count_approval(call, _approval(won, call), audit=audit):
                return call, False
            latest = await self._agent.storage.runs.get_tool_call(run.id, call.tool_call_id)
            if latest is None or latest.state != ToolCallState.AWAITING_APPROVAL:
                raise ToolCallNotSuspendedError(run.id, call.tool_call_id, latest.state if latest else None)
            call = latest  # another approval counted meanwhile: count this one after it

    def _checked_resume_data(self, call: StoredToolCall, resume_data: Any) -> Any:
        """The data to store, text cleaned (tools.plain_json); refused before anything is stored."""
        try:
            schema = Schema(call.resume_schema) if call.resume_schema else None
        except InvalidSchemaError as exc:
            raise ResumeSchemaInvalidError(call.displayed_tool_name, exc.problem) from None
        try:
            data = plain_json(to_jsonable(resume_data))
            return data if schema is None else to_jsonable(schema.validate(data))
        except JsonValueError as exc:
            raise ResumeDataInvalidError(call.displayed_tool_name, [SchemaError(exc.path, exc.reason)]) from None
        except SchemaValidationError as exc:
            raise ResumeDataInvalidError(call.displayed_tool_name, exc.errors) from None

    def _checked_edit(self, call: StoredToolCall, args: Any) -> dict[str, Any]:
        tool = self._agent.tools.get(call.tool_name)
        if tool is None or call.child_run_id is not None:
            raise ToolArgsInvalidError(call.displayed_tool_name, ["only a direct tool call can be edited"])
        try:
            args = plain_json(to_jsonable(args))
            tool.parse_args(args)
        except JsonValueError as exc:
            raise ToolArgsInvalidError(call.tool_name, [SchemaError(exc.path, exc.reason)]) from None
        except SchemaValidationError as exc:
            raise ToolArgsInvalidError(call.tool_name, exc.errors) from None
        return {"args": args, "fingerprint": fingerprint(call.tool_name, args)}


async def _handed_over(run_id: str) -> AsyncIterator[Chunk]:
    """The stream of a decision about a live question that another process holds: that process goes on with
    the run (its output reaches the `on_background_stream` hook there), so nothing more comes here."""
    yield Chunk.finish(run_id, "stop")


def _approval(won: WonDecision, call: StoredToolCall) -> dict[str, Any]:
    """One approval as a four-eyes call keeps it: who, when, and the arguments it approved."""
    approval = {"by": won.decided_by, "at": utcnow().isoformat(), "fingerprint": call.fingerprint}
    return approval | ({"for": won.decided_for} if won.decided_for else {})


async def _still_waiting(run_id: str) -> AsyncIterator[Chunk]:
    """The stream of an approval that counted but was not the last one needed: the run still waits."""
    yield Chunk.finish(run_id, "suspended")
