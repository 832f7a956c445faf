"""The contract's named forms of one decision (`approve_tool_call`, `decline_tool_call`, `resume_stream`,
their `_generate` twins, `decline_question`, `send_tool_approval`): each builds the `Decision` value and
hands it to `Agent.decide`, which asks no rule (the caller is trusted) and keeps raising the contract's
errors. `Agent` has them from `DecisionForms`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ._lookups import Lookups
from ._model import whole_replies
from ._stream import AgentStream
from .types import AgentOutput, Approve, CancelQuestion, Decision, Decline, DeclineQuestion, Resume


class DecisionForms:
    """The contract's named forms of `decide` (a base of `Agent`, which gives `decide` and `_lookups`)."""

    _lookups: Lookups

    async def decide(
        self,
        run_id: str,
        tool_call_id: str | None,
        decision: Decision,
        *,
        decided_by: str | None = None,
        via: str = "runtime",
        user_messages: Sequence[dict[str, Any]] = (),
    ) -> AgentStream:
        """Decide one waiting call, asking no rule: `Agent.decide`."""
        raise NotImplementedError

    async def decide_generate(
        self, run_id: str, tool_call_id: str | None, decision: Decision, **options: Any
    ) -> AgentOutput:
        """`decide`, then wait for the run to finish or park a call: its `AgentOutput`."""
        with whole_replies():
            stream = await self.decide(run_id, tool_call_id, decision, **options)
        return await stream.result()

    async def approve_tool_call(
        self,
        *,
        run_id: str,
        tool_call_id: str | None = None,
        approver: str | None = None,
        args: Any = None,
        via: str = "runtime",
    ) -> AgentStream:
        """`decide` with `Approve(args)`: run a waiting call (optionally with edited `args`)."""
        return await self.decide(run_id, tool_call_id, Approve(args=args), decided_by=approver, via=via)

    async def decline_tool_call(
        self,
        *,
        run_id: str,
        tool_call_id: str | None = None,
        reason: str | None = None,
        approver: str | None = None,
        via: str = "runtime",
    ) -> AgentStream:
        """`decide` with `Decline(reason)`: the call never runs; the model hears it was not approved, and why."""
        return await self.decide(run_id, tool_call_id, Decline(reason=reason), decided_by=approver, via=via)

    async def resume_stream(
        self,
        resume_data: Any,
        *,
        run_id: str,
        tool_call_id: str | None = None,
        actor: str | None = None,
        via: str = "runtime",
    ) -> AgentStream:
        """`decide` with `Resume(resume_data)`: resume a call that suspended itself."""
        return await self.decide(run_id, tool_call_id, Resume(resume_data), decided_by=actor, via=via)

    async def approve_tool_call_generate(
        self,
        *,
        run_id: str,
        tool_call_id: str | None = None,
        approver: str | None = None,
        args: Any = None,
        via: str = "runtime",
    ) -> AgentOutput:
        return await self.decide_generate(run_id, tool_call_id, Approve(args=args), decided_by=approver, via=via)

    async def decline_tool_call_generate(
        self,
        *,
        run_id: str,
        tool_call_id: str | None = None,
        reason: str | None = None,
        approver: str | None = None,
        via: str = "runtime",
    ) -> AgentOutput:
        return await self.decide_generate(run_id, tool_call_id, Decline(reason=reason), decided_by=approver, via=via)

    async def resume_generate(
        self,
        resume_data: Any,
        *,
        run_id: str,
        tool_call_id: str | None = None,
        actor: str | None = None,
        via: str = "runtime",
    ) -> AgentOutput:
        return await self.decide_generate(run_id, tool_call_id, Resume(resume_data), decided_by=actor, via=via)

    async def decline_question(
        self,
        *,
        run_id: str,
        tool_call_id: str | None = None,
        cancel: bool = False,
        actor: str | None = None,
        reason: str | None = None,
        via: str = "runtime",
    ) -> AgentStream:
        """Refuse to answer a live question (an MCP server's `elicitation/create`): its server hears
        `decline` (or `cancel` with `cancel=True`) and its call goes on; not an error to anyone."""
        decision = CancelQuestion(reason=reason) if cancel else DeclineQuestion(reason=reason)
        return await self.decide(run_id, tool_call_id, decision, decided_by=actor, via=via)

    async def send_tool_approval(
        self,
        *,
        thread_id: str,
        resource_id: str,
        approved: bool,
        tool_call_id: str | None = None,
        reason: str | None = None,
        approver: str | None = None,
    ) -> AgentStream:
        """Decide the one approval waiting in a thread without knowing its run id."""
        run_id, call_id = await self._lookups.the_one_approval(
            thread_id=thread_id, resource_id=resource_id, tool_call_id=tool_call_id
        )
        return await self.decide(
            run_id, call_id, Approve() if approved else Decline(reason=reason), decided_by=approver
        )
