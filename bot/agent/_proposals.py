"""What becomes of the calls a model proposes in one step, before any of them runs: checked (arguments,
the tool's policy, the admins' rules, the code's approval rule), covered by a standing grant or made to wait
for approval, given their dry runs (`preview=`), and the audit lines of the step. `RunDriver` hands each
step's proposed calls to its `Proposals`."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from bot import telemetry
from memory import Audit, Grant, RuleEffect, StoredRun, StoredToolCall, ToolCallState, ToolPolicy
from memory.tables import utcnow
from tools import (
    AgentToolContext,
    ApprovalCheck,
    JsonValueError,
    SchemaValidationError,
    Tool,
    ToolContext,
    clean_text,
    read_json,
    rule_says_yes,
)

from ._conditions import EVALUATION_TIMEOUT, RuleOutcome, joined, refused_error, rule_line, rule_outcome, timed_out
from ._driving import RequestOptions, RunDeps, disabled_error, failed_call
from ._fingerprint import fingerprint
from ._previews import STOPPED, preview_line, run_preview

log = logging.getLogger(__name__)


class Proposals:
    """The proposed calls of one run's steps, and what was noted about each for the audit trail."""

    def __init__(self, deps: RunDeps, run: StoredRun, options: RequestOptions) -> None:
        self.deps = deps
        self.run = run
        self.options = options
        self.runs = deps.runs
        self.policies: dict[str, ToolPolicy] = {}
        """Tool call id -> its tool's policy when it was proposed: its version for the audit trail, and what
        the call runs under in the same step (not read again)."""
        self._blocked_ids: set[str] = set()
        """Tool call ids of the calls the model made to a disabled tool (audited as `blocked`)."""
        self.granted: dict[str, Grant] = {}
        """Tool call id -> the standing grant that lets it run without asking (audited as `grant_used`)."""
        self._trials: dict[str, tuple[str, dict[str, Any]]] = {}
        """Tool call id -> what a trial rule would have done to it (`would_require`...) and that rule."""

    async def record(self, position: int, tool_call: dict[str, Any]) -> StoredToolCall:
        """A row for one proposed call: pending, awaiting approval, or failed with the reason."""
        name = tool_call["function"]["name"]
        row = StoredToolCall(
            run_id=self.run.id,
            tool_call_id=tool_call["id"],
            agent_id=self.deps.agent_id,
            thread_id=self.run.thread_id,
            resource_id=self.run.resource_id,
            step=self.run.step,
            position=position,
            tool_name=name,
            args=None,
            state=str(ToolCallState.PENDING),
            requires_approval=False,
            is_error=False,
            approval_count=0,
        )
        try:  # finite numbers only, text the databases store (tools._json_values)
            row.args = read_json(tool_call["function"]["arguments"] or "{}")
        except JsonValueError as exc:
            row.args = clean_text(tool_call["function"]["arguments"])
            return failed_call(row, f"the arguments are not valid JSON ({exc}); send a JSON object")
        tool = self.deps.find_tool(name)
        if tool is None:
            return failed_call(row, f"there is no tool {name!r}; available: {', '.join(self.deps.tool_names())}")
        try:
            tool.parse_args(row.args)
        except SchemaValidationError as exc:
            return failed_call(row, f"invalid arguments for {name!r}: {exc}")
        row.fingerprint = fingerprint(name, row.args)
        policy = self.policies[row.tool_call_id] = await self.deps.policies.get(name)
        if policy.disabled:
            self._blocked_ids.add(row.tool_call_id)
            return failed_call(row, disabled_error(name))
        outcome = await self._rules(tool, row, policy)
        if outcome.effect == RuleEffect.REFUSE:
            self._blocked_ids.add(row.tool_call_id)
            return failed_call(row, refused_error(name, row.rule))
        code_requires = await self._approval_required(tool, row.args)
        # a policy (or its rule) adds an approval; it never removes one the code asks for
        if outcome.effect == RuleEffect.ALLOW:
            needs = code_requires
            if needs:
                row.rule = None  # the code asks for approval, and a rule never removes that: it changed nothing
        else:
            needs = policy.adds_approval or code_requires or outcome.effect == RuleEffect.REQUIRE_APPROVAL
        self._note_trial(row, outcome.trial, needs=needs, code_requires=code_requires)
        if needs:
            grant = await self._live_grant(row, policy)
            if grant is not None:  # an approver allowed this tool in this thread for a while: it runs now
                self.granted[row.tool_call_id] = grant
                return row
            row.state = str(ToolCallState.AWAITING_APPROVAL)
            row.requires_approval = True
            row.suspended_at = utcnow()
            telemetry.waits_for_approval(row, policy)
        return row

    async def _rules(self, tool: Tool, row: StoredToolCall, policy: ToolPolicy) -> RuleOutcome:
        """What the policy's rules say about the call; the deciding rule is kept on the row (fixed with it).
        Evaluated in a worker thread, bounded by `EVALUATION_TIMEOUT`: a slow rule never holds the event loop."""
        if not policy.rules or self.deps.sub_agent_for(tool.id) is not None:
            return RuleOutcome()
        context = self.options.request_context
        evaluation = asyncio.to_thread(
            rule_outcome,
            policy.rules,
            args=row.args,
            schema=tool.parameters(),
            requester=context.get("requester") or self.run.resource_id or "",
            channel=context.get("channel") or "",
            tool=tool.id,
            now=utcnow(),
        )
        try:
            async with asyncio.timeout(EVALUATION_TIMEOUT):
                outcome = await evaluation
        except TimeoutError:  # the thread runs on to its end (bounded by the size limits); the call asks
            log.warning("the rules of %s took longer than %s s in run %s", tool.id, EVALUATION_TIMEOUT, self.run.id)
            outcome = timed_out()
        row.rule = outcome.stored
        return outcome

    def _note_trial(
        self, row: StoredToolCall, trial: dict[str, Any] | None, *, needs: bool, code_requires: bool
    ) -> None:
        """Remember what a trial rule would have changed about this call (audited with the step)."""
        if trial is None:
            return
        effect = trial["effect"]
        if effect == RuleEffect.REFUSE:
            self._trials[row.tool_call_id] = ("would_refuse", trial)
        elif effect == RuleEffect.REQUIRE_APPROVAL and not needs:
            self._trials[row.tool_call_id] = ("would_require", trial)
        elif effect == RuleEffect.ALLOW and needs and not code_requires:
            self._trials[row.tool_call_id] = ("would_allow", trial)

    async def _live_grant(self, row: StoredToolCall, policy: ToolPolicy) -> Grant | None:
        """The live standing grant that covers this call, read now with the policy as it is now: none when
        the policy no longer allows grants (or needs several approvals), in a run without a thread, or when
        the only grant was given by the requester while the policy refuses self-approval."""
        if self.deps.grants is None or not policy.allows_grants or not self.run.thread_id:
            return None
        requester = self.options.request_context.get("requester") or self.run.resource_id
        return await self.deps.grants.matching(
            agent_id=self.deps.agent_id,
            tool_name=row.tool_name,
            thread_id=self.run.thread_id,
            fingerprint=row.fingerprint,
            longest=policy.grant_seconds or 0,
            not_granted_by=None if policy.self_approval else requester,
        )

    async def previews(self, rows: list[StoredToolCall]) -> None:
        """Run the dry runs (`preview=`) of a step's calls that will wait for approval, concurrently; what each
        said, or that it failed, is kept on its row. Never `execute`, never the started mark: a preview changes
        nothing the runtime knows of, and its failure blocks nothing.

        Which previews start is stored first: one met again at this step after a crash (the process died
        while it ran, before the step was stored) is not run a second time (see `bot.agent._previews`)."""
        rows = [row for row in rows if self._preview_of(row) is not None]
        if not rows:
            return
        marks = self.run.previews_started or {}
        started_before = set(marks.get("calls") or ()) if marks.get("step") == self.run.step else set()
        await self.runs.mark_previews_started(self.run, [row.fingerprint for row in rows if row.fingerprint])
        for row in rows:
            if row.fingerprint in started_before:
                log.warning(
                    "run %s: the preview of %s started before a stop; not run again", self.run.id, row.tool_call_id
                )
                row.preview = {"ok": False, "error": STOPPED}
        await asyncio.gather(*(self._preview(row) for row in rows if row.preview is None))

    def _preview_of(self, row: StoredToolCall) -> Tool | None:
        tool = self.deps.find_tool(row.tool_name)
        return tool if tool is not None and tool.preview is not None else None

    async def _preview(self, row: StoredToolCall) -> None:
        tool = self._preview_of(row)
        assert tool is not None
        context = ToolContext(
            run_id=self.run.id,
            tool_call_id=row.tool_call_id,
            thread_id=self.run.thread_id,
            resource_id=self.run.resource_id,
            request_context=self.options.request_context,
            agent=AgentToolContext(tool.suspend_schema),
            idempotency_key=f"{self.run.id}:{row.tool_call_id}",
        )
        row.preview = await run_preview(tool, row, context, redact=self.deps.redact)

    def requested(self, rows: list[StoredToolCall]) -> list[tuple[StoredToolCall, Audit]]:
        """The audit lines of a step's calls: requested by the speaker (those that wait for approval, and
        those a standing grant lets run, with `grant_used`), or blocked (those the model made to a disabled tool)."""
        context = self.options.request_context
        requester = context.get("requester") or self.run.resource_id
        audits = []
        for row in rows:
            policy = self.policies.get(row.tool_call_id)
            version = policy.version if policy is not None else None
            if row.tool_call_id in self._trials:
                action, trial = self._trials[row.tool_call_id]
                audits.append(
                    (
                        row,
                        Audit(
                            action=action, actor=requester, policy_version=version, detail=f"trial {rule_line(trial)}"
                        ),
                    )
                )
            if row.state == ToolCallState.AWAITING_APPROVAL:
                detail = joined(rule_line(row.rule), preview_line(row.preview))
                audits.append((row, Audit(action="requested", actor=requester, policy_version=version, detail=detail)))
            elif row.rule and row.tool_call_id not in self._blocked_ids and row.tool_call_id not in self.granted:
                detail = f"runs without asking: {rule_line(row.rule)}"
                audits.append((row, Audit(action="requested", actor=requester, policy_version=version, detail=detail)))
            elif row.tool_call_id in self.granted:
                grant = self.granted[row.tool_call_id]
                detail = "runs without asking: " + grant.describe()
                audits.append((row, Audit(action="requested", actor=requester, policy_version=version, detail=detail)))
                audits.append(
                    (row, Audit(action="grant_used", actor=grant.granted_by, policy_version=version, detail=detail))
                )
            elif row.tool_call_id in self._blocked_ids and row.rule:
                detail = f"an admin's rule refused the call, so it was not run: {rule_line(row.rule)}"
                audits.append((row, Audit(action="blocked", actor=requester, policy_version=version, detail=detail)))
            elif row.tool_call_id in self._blocked_ids:
                detail = "an admin's policy disabled the tool, so the call was not run"
                audits.append((row, Audit(action="blocked", actor=requester, policy_version=version, detail=detail)))
        return audits

    async def _approval_required(self, tool: Tool, args: Any) -> bool:
        """The contract's rule: the tool's callable decides alone; else the tool's flag OR the request's rule."""
        if self.deps.sub_agent_for(tool.id) is not None:
            return False  # the sub-agent's own tools are what need approval; the request's rule goes down to them
        check = ApprovalCheck(
            tool_name=tool.id,
            args=args,
            request_context=self.options.request_context,
            workspace=self.options.request_context.get("workspace"),
        )
        required = await tool.approval_required(check)  # None: the tool leaves it to the request
        if required is not None:
            return required
        return await rule_says_yes(self.options.require_tool_approval, check)
