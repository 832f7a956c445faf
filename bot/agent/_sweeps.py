"""The sweeps over calls that wait for approval too long: expiry (declined as expired, the run goes on) and
escalation (brought to the policy's `escalate_to` through the front end's `on_escalation` hook). `Agent`
delegates `expire_waiting_approvals` and `escalate_waiting_approvals` here."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any, Protocol

from memory import Storage, ToolPolicy, UnreadablePolicy

from ._background import in_background
from ._stream import AgentStream
from .exceptions import ToolCallNotSuspendedError
from .types import Decision, Escalation, EscalationOutcome, EscalationResult, Expire, ToolCallRecord

log = logging.getLogger(__name__)


class SweepingAgent(Protocol):
    """What the sweeps need of `Agent` (a protocol, so this module does not import `_agent`)."""

    @property
    def id(self) -> str: ...

    @property
    def storage(self) -> Storage: ...

    @property
    def hooks(self) -> Mapping[str, Any]: ...

    async def decide(
        self,
        run_id: str,
        tool_call_id: str | None,
        decision: Decision,
        *,
        decided_by: str | None = None,
        via: str = "runtime",
        user_messages: Sequence[dict[str, Any]] = (),
    ) -> AgentStream: ...

    async def get_tool_call(self, run_id: str, tool_call_id: str) -> ToolCallRecord | None: ...


class Sweeps:
    """One agent's expiry and escalation sweeps; each stored policy the sweeps cannot read is logged once."""

    def __init__(self, agent: SweepingAgent) -> None:
        self._agent = agent
        self._unswept: set[tuple[str, int, str]] = set()
        """The stored policies a sweep skipped and logged (each is logged once)."""

    async def expire_waiting_approvals(self) -> list[tuple[str, str]]:
        """Settle as expired every call of this agent that waited for approval, or for the answer to its
        question, longer than its tool policy's expiry; returns the (run id, tool call id) of the calls this
        process expired."""
        storage = self._agent.storage
        expired: list[tuple[str, str]] = []
        now = storage.clock.now()
        for policy in await storage.policies.with_expiry():
            if isinstance(policy, UnreadablePolicy):
                self._skip_in_sweep(policy.tool_name, policy.version, policy.problem)
                continue
            try:
                expired += await self._expire_calls_of(policy, now)
            except Exception as exc:  # noqa: BLE001 - one policy the sweep cannot handle never stops the others
                self._skip_in_sweep(policy.tool_name, policy.version, f"{type(exc).__name__}: {exc}")
        return expired

    async def _expire_calls_of(self, policy: ToolPolicy, now: datetime) -> list[tuple[str, str]]:
        expired: list[tuple[str, str]] = []
        before = now - timedelta(seconds=policy.expires_after or 0)
        for run_id, call_id in await self._agent.storage.runs.approvals_waiting_since(
            self._agent.id, policy.tool_name, before=before
        ):
            decision = Expire(reason=f"nobody decided within {policy.expires_after} s")
            if await self._expire(run_id, call_id, decision, policy):
                expired.append((run_id, call_id))
        for run_id, call_id in await self._agent.storage.runs.questions_waiting_since(
            self._agent.id, policy.tool_name, before=before
        ):
            decision = Expire(reason=f"nobody answered within {policy.expires_after} s")
            if await self._expire(run_id, call_id, decision, policy):
                expired.append((run_id, call_id))
        return expired

    async def _expire(self, run_id: str, call_id: str, decision: Expire, policy: ToolPolicy) -> bool:
        try:
            stream = await self._agent.decide(run_id, call_id, decision, via="expiry")
        except ToolCallNotSuspendedError:
            return False  # decided meanwhile, or another replica expired it
        log.info("expired %s/%s (%s, after %ss)", run_id, call_id, policy.tool_name, policy.expires_after)
        in_background(self._agent.hooks, stream)
        return True

    async def escalate_waiting_approvals(self) -> list[tuple[str, str]]:
        """Bring every call of this agent still waiting for approval longer than its policy's
        `escalate_after` (and not yet escalated in this wait) to the policy's `escalate_to`, through the
        front end's `on_escalation` hook; returns the (run id, tool call id) of the calls it escalated."""
        hook = self._agent.hooks.get("on_escalation")
        if hook is None:
            return []
        storage = self._agent.storage
        escalated: list[tuple[str, str]] = []
        now = storage.clock.now()
        for policy in await storage.policies.with_escalation():
            if isinstance(policy, UnreadablePolicy):
                self._skip_in_sweep(policy.tool_name, policy.version, policy.problem, sweep="escalation")
                continue
            try:
                escalated += await self._escalate_calls_of(policy, now, hook)
            except Exception as exc:  # noqa: BLE001 - one policy the sweep cannot handle never stops the others
                self._skip_in_sweep(
                    policy.tool_name, policy.version, f"{type(exc).__name__}: {exc}", sweep="escalation"
                )
        return escalated

    async def _escalate_calls_of(
        self, policy: ToolPolicy, now: datetime, hook: Callable[[Escalation], Awaitable[EscalationOutcome]]
    ) -> list[tuple[str, str]]:
        escalated: list[tuple[str, str]] = []
        storage = self._agent.storage
        runs = storage.runs
        before = now - timedelta(seconds=policy.escalate_after or 0)
        for run_id, call_id, since in await runs.approvals_to_escalate(self._agent.id, policy.tool_name, before=before):
            if not await runs.claim_escalation(run_id, call_id, waiting_since=since, at=now):
                continue  # decided meanwhile, or another replica escalates it
            record = await self._agent.get_tool_call(run_id, call_id)
            if record is None:
                continue
            escalation = Escalation(
                call=record, target=policy.escalate_to or "", after=policy.escalate_after or 0,
                policy_version=policy.version,
            )  # fmt: skip
            try:
                outcome = await hook(escalation)
            except Exception as exc:  # noqa: BLE001 - a front end's failure is retried on a later sweep
                log.warning("escalating %s/%s failed; a later sweep tries again", run_id, call_id, exc_info=True)
                outcome = EscalationOutcome(result=EscalationResult.RETRY, detail=f"{type(exc).__name__}: {exc}")
            if outcome.result == EscalationResult.RETRY:
                await runs.release_escalation(run_id, call_id, claimed_at=now)
                continue
            delivered = outcome.result == EscalationResult.DELIVERED
            await storage.audit_log.record(
                run_id=run_id,
                tool_call_id=call_id,
                tool_name=record.tool_name,
                action="escalated" if delivered else "escalation_failed",
                actor=None,
                via="escalation",
                args_fingerprint=record.fingerprint,
                policy_version=policy.version,
                detail=outcome.detail,
            )
            log.info("escalation of %s/%s (%s): %s", run_id, call_id, policy.tool_name, outcome.detail)
            if delivered:
                escalated.append((run_id, call_id))
        return escalated

    def _skip_in_sweep(self, tool_name: str, version: int, problem: str, *, sweep: str = "expiry") -> None:
        key = (tool_name, version, f"{sweep}: {problem}")
        if key not in self._unswept:
            self._unswept.add(key)
            log.error(
                "the %s sweep skips the policy of %r (version %s): %s; fix it with `python -m bot policy set`",
                sweep, tool_name, version, problem,
            )  # fmt: skip
