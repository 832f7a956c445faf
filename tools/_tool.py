"""The tool contract: what a tool declares (`Tool`, built by `create_tool`) and what it gets when it runs (`ToolContext`)."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Union

from ._progress import report_progress
from ._schema import Schema, SchemaValidationError, to_jsonable


@dataclass(frozen=True, kw_only=True)
class ApprovalCheck:
    """What an approval rule sees when it decides whether a call must wait for a human."""

    tool_name: str
    """The tool's id."""
    args: dict[str, Any]
    """The arguments the model proposed (already validated)."""
    request_context: dict[str, Any] = field(default_factory=dict)
    """The `request_context` given to `generate`/`stream`."""
    workspace: str | None = None
    """The workspace the request came from (the Slack team id), when known."""


PREVIEW_TIMEOUT = 5.0
"""Seconds a tool's preview may take by default before the approval is posted without it."""
UNDO_TIMEOUT = 30.0
"""Seconds a tool's undo may take by default before it is recorded as failed."""

ApprovalRule = Union[bool, Callable[[ApprovalCheck], bool | Awaitable[bool]]]  # noqa: UP007 - a runtime alias


class AgentToolContext:
    """The agent-facing part of a tool's context: suspending, and what a resumed call gets back."""

    def __init__(
        self,
        suspend_schema: Schema | None,
        resume_data: Any = None,
        suspend_payload: Any = None,
        answer_action: str | None = None,
    ):
        self.resume_data = resume_data
        """The data the call was resumed with (validated against `resume_schema`), or None on the first run."""
        self.answer_action = answer_action
        """How a live question was answered: `accept` (with `resume_data`), `decline` or `cancel`; None on
        the first run."""
        self.suspend_payload = suspend_payload
        """What the call suspended with before it was resumed, or None on the first run."""
        self._suspend_schema = suspend_schema
        self.suspended_with: Any = None
        self.suspend_error: SchemaValidationError | None = None
        self.suspended = False
        self.resume_schema: dict[str, Any] | None = None
        """The schema of the answer this suspension waits for, when it is not the tool's `resume_schema`."""
        self.live = False
        """The suspension keeps state in this process (see `suspend(live=True)`)."""

    async def suspend(
        self, payload: Any = None, *, resume_schema: dict[str, Any] | None = None, live: bool = False
    ) -> None:
        """Park this call until someone resumes it; `payload` says what the tool waits for.

        `resume_schema` (a JSON Schema dict) is what this one suspension takes as an answer, when it is not
        the tool's own `resume_schema` (an MCP server's question says what it needs each time).

        `live=True`: the tool keeps what it is doing open in this process (an MCP call whose server asked
        a question). Only this process can go on with the answer: one given through any other process is
        stored and handed here; if this process stops first, the call is interrupted (it may or may not
        have taken effect) and waits for a human, never re-run on its own. Such a question may also be
        declined or cancelled (`answer_action`).

        Does not raise: a payload that fails `suspend_schema` turns the call's result into an error instead.
        """
        self.resume_schema = resume_schema
        self.live = live
        if self._suspend_schema is not None:
            try:
                payload = to_jsonable(self._suspend_schema.validate(payload))
            except SchemaValidationError as exc:
                self.suspend_error = exc
                return
        self.suspended = True
        self.suspended_with = to_jsonable(payload)
        return


@dataclass(kw_only=True)
class ToolContext:
    """Everything a tool's `execute` gets besides its input."""

    run_id: str
    tool_call_id: str
    thread_id: str | None
    resource_id: str | None
    request_context: dict[str, Any]
    agent: AgentToolContext
    idempotency_key: str = ""
    """The same every time this one call executes (after a resume, a recovery, an interrupted call approved
    again): pass it to an external API (an `Idempotency-Key` header) so an effect is never applied twice."""
    tool_name: str = ""
    """The name of the tool this call runs."""

    def progress(self, message: str) -> None:
        """Say how far the call has come ("copied 30 of 120 rows"): a `tool-progress` chunk of the run's
        stream, shown live as the call's step (its task card in Slack and the playground) until the next line
        or its result. Cheap and never raises; call it as often as you like (a front end shows at most about
        one line a second). A line is one line of at most 300 characters."""
        report_progress(self.tool_call_id, self.tool_name, message)


@dataclass(kw_only=True)
class Tool:
    """A tool the model may call. Build one with `create_tool`."""

    id: str
    """The name the model sees, and `tool_name` everywhere else."""
    description: str
    input_schema: Schema | None
    output_schema: Schema | None
    suspend_schema: Schema | None
    resume_schema: Schema | None
    require_approval: ApprovalRule
    execute: Callable[[Any, ToolContext], Awaitable[Any]]
    title: str | None = None
    """A name for people (an approval shows it beside the id); None: the id is the name."""
    source: str | None = None
    """Where the tool comes from when it is not the deployer's code, e.g. "MCP server `tickets`"."""
    hints: tuple[str, ...] = ()
    """What the tool says of itself, unchecked (an MCP server's annotations: "destructive", "open world")."""
    preview: Callable[[Any, ToolContext], Awaitable[Any]] | None = None
    """A dry run: what the call would do, shown to the approver before they decide ("will delete 3 rows: ...").
    Same arguments as `execute`; it must change nothing. None: no preview."""
    preview_timeout: float = PREVIEW_TIMEOUT
    """Seconds a preview may take; a slower one is shown as not answering, and the approval is posted anyway."""
    undo: Callable[[Any, Any], Awaitable[Any]] | None = None
    """How to undo a call that ran: `async def undo(input, result)`, given the call's validated arguments and
    the result it returned; what it returns is shown and told to the model. None: the tool offers no undo."""
    undo_timeout: float = UNDO_TIMEOUT
    """Seconds an undo may take; a slower one is recorded as failed (`undo_failed`)."""

    def parameters(self) -> dict[str, Any]:
        """The JSON Schema offered to the model for the arguments."""
        if self.input_schema is None:
            return {"type": "object", "properties": {}}
        return self.input_schema.json_schema

    def parse_args(self, args: Any) -> Any:
        """Validated input for `execute`; raises SchemaValidationError."""
        if self.input_schema is None:
            return args
        return self.input_schema.validate(args)

    async def approval_required(self, check: ApprovalCheck) -> bool | None:
        """The tool's own answer (None when the tool leaves it to the request); a rule that raises means yes."""
        if not callable(self.require_approval):
            return True if self.require_approval else None
        return await rule_says_yes(self.require_approval, check)


async def rule_says_yes(rule: ApprovalRule | None, check: ApprovalCheck) -> bool:
    """Evaluate an approval rule (a bool, or a sync or async callable); a rule that raises asks for a human."""
    if not callable(rule):
        return bool(rule)
    try:
        answer = rule(check)
        if inspect.isawaitable(answer):
            answer = await answer
        return bool(answer)
    except Exception:
        return True


def create_tool(
    *,
    id: str,
    description: str,
    execute: Callable[[Any, ToolContext], Awaitable[Any]],
    input_schema: Any = None,
    output_schema: Any = None,
    suspend_schema: Any = None,
    resume_schema: Any = None,
    require_approval: ApprovalRule = False,
    title: str | None = None,
    source: str | None = None,
    hints: tuple[str, ...] = (),
    preview: Callable[[Any, ToolContext], Awaitable[Any]] | None = None,
    preview_timeout: float = PREVIEW_TIMEOUT,
    undo: Callable[[Any, Any], Awaitable[Any]] | None = None,
    undo_timeout: float = UNDO_TIMEOUT,
) -> Tool:
    """Declare a tool. Each schema is a pydantic model class or a JSON Schema dict (Draft 2020-12).

    `preview` (optional) is a dry run with `execute`'s arguments, run before an approval is posted; what it
    returns (text, or any JSON value) is shown to the approver. It must change nothing; one that raises or
    takes longer than `preview_timeout` seconds is shown as failed, and the decision goes on without it.

    `undo` (optional) undoes a call that ran, given its arguments and its result (`async def undo(input,
    result)`); a person may use it within the tool policy's undo window (`undo_seconds`, 5 minutes by
    default), once. One that raises or takes longer than `undo_timeout` seconds is recorded as failed."""
    if not inspect.iscoroutinefunction(execute):
        raise TypeError(f"tool {id!r}: execute must be an async function (async def execute(input, ctx))")
    if preview is not None and not inspect.iscoroutinefunction(preview):
        raise TypeError(f"tool {id!r}: preview must be an async function (async def preview(input, ctx))")
    if undo is not None and not inspect.iscoroutinefunction(undo):
        raise TypeError(f"tool {id!r}: undo must be an async function (async def undo(input, result))")
    if not 0 < undo_timeout <= 300:
        raise ValueError(f"tool {id!r}: undo_timeout must be more than 0 and at most 300 seconds")
    if not 0 < preview_timeout <= 300:
        raise ValueError(f"tool {id!r}: preview_timeout must be more than 0 and at most 300 seconds")
    return Tool(
        id=id,
        description=description,
        input_schema=Schema.of(input_schema),
        output_schema=Schema.of(output_schema),
        suspend_schema=Schema.of(suspend_schema),
        resume_schema=Schema.of(resume_schema),
        require_approval=require_approval,
        execute=execute,
        title=title,
        source=source,
        hints=tuple(hints),
        preview=preview,
        preview_timeout=float(preview_timeout),
        undo=undo,
        undo_timeout=float(undo_timeout),
    )
