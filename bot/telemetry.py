"""OpenTelemetry traces of the runtime, for operators: a span per turn, per model call, per tool call.

Optional. With the `otel` extra installed (`pip install 'approval-bot[otel]'`) and
OTEL_EXPORTER_OTLP_ENDPOINT set, `setup` exports the spans over OTLP; otherwise nothing is traced and
every hook below is a no-op that never imports `opentelemetry` (the hooks check one module global).

The spans follow OpenTelemetry's GenAI semantic conventions where they name something:
- a turn (one run's stream: a message, a decision carried out, a recovery): `invoke_agent {agent}`,
  with `gen_ai.agent.id`, `gen_ai.conversation.id` (the thread), the run's finish reason and usage;
- a model call: `chat {model}` (kind CLIENT), with `gen_ai.request.model`, `gen_ai.response.model`,
  `gen_ai.usage.input_tokens`/`output_tokens`, `gen_ai.response.finish_reasons`;
- a tool call: `execute_tool {tool}`, with `gen_ai.tool.name`, `gen_ai.tool.call.id`, the tool's policy
  (`bot.policy.*`), and the human side as events: `bot.approval.requested` when the call starts to wait
  (its span ends there: the wait may outlast the process), `bot.approval.decided` (decision, who, via)
  on the turn that carries the decision out, `bot.tool.suspended` when the tool suspends itself;
- the wait for a person: `await_decision {tool}`, from the request to the decision (started at the
  stored request time, ended at the decision's, under the turn that carries the decision out), with
  `bot.approval.decision` (the stored word), `bot.approval.outcome` (approved, declined, expired, answered,
  cancelled), `bot.approval.decided_by`, `bot.approval.via`, `bot.wait.kind` (approval or question) and
  `bot.wait.seconds`.

The turn span is made current inside the run's own task (`AgentStream` runs each run in a task), so the
model calls, the tool calls and a sub-agent's turn nest under it. Spans of a model call are never made
current (they live across `yield`s of an async generator). Imports: nothing of ours but the chunk type.
"""

from __future__ import annotations

import logging
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from collections.abc import Iterator
    from datetime import datetime

    from bot.agent.types import Chunk, FinishPayload
    from memory import StoredRun, StoredToolCall, ToolPolicy

log = logging.getLogger(__name__)

TRACER_NAME = "approval-bot"
_tracer: Any = None
"""The tracer the hooks use; None: tracing is off (the default)."""


# --- turning it on ------------------------------------------------------------------------------
def installed() -> bool:
    """Whether the `otel` extra (the OpenTelemetry SDK) is installed."""
    try:
        import opentelemetry.sdk.trace  # noqa: F401
    except ImportError:
        return False
    return True


def setup(endpoint: str | None, *, protocol: str = "http/protobuf", service_name: str = "approval-bot") -> Any:
    """Export spans over OTLP to `endpoint` (OTEL_EXPORTER_OTLP_ENDPOINT); the bot's tracer provider (its
    own, not the global one), or None
    when `endpoint` is unset or the extra is not installed (then tracing stays off, said once in the log).

    The exporter reads the rest of the standard OTEL_EXPORTER_OTLP_* variables (headers, timeout) itself.
    Call `shutdown(provider)` on the way out: it sends what is still buffered."""
    if not endpoint:
        return None
    if not installed():
        log.warning(
            "OTEL_EXPORTER_OTLP_ENDPOINT is set but the otel extra is not installed, so no traces are sent: "
            "pip install 'approval-bot[otel]'"
        )
        return None
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter

    if protocol == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcExporter

        exporter: SpanExporter = GrpcExporter(endpoint=endpoint)
    else:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpExporter

        # the variable names the collector; the traces go to its /v1/traces (as the SDK's own reading does)
        exporter = HttpExporter(endpoint=endpoint.rstrip("/") + "/v1/traces")
    provider = TracerProvider(resource=Resource.create({"service.name": service_name}))
    provider.add_span_processor(BatchSpanProcessor(exporter))
    enable(provider)
    log.info("traces are exported over OTLP (%s) to %s", protocol, endpoint)
    return provider


def shutdown(provider: Any) -> None:
    """Send the spans still buffered, then stop tracing."""
    disable()
    if provider is not None:
        provider.shutdown()


def enable(provider: Any = None) -> None:
    """Trace through `provider` (a `TracerProvider`; None: the global one). Tests pass their own, with
    the SDK's in-memory exporter."""
    global _tracer
    from opentelemetry import trace

    _tracer = (provider or trace.get_tracer_provider()).get_tracer(TRACER_NAME)


def disable() -> None:
    global _tracer
    _tracer = None


# --- the hooks ----------------------------------------------------------------------------------
class _Off:
    """What every hook gives while tracing is off: does nothing, as cheaply as Python allows."""

    __slots__ = ()

    def __enter__(self) -> _Off:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def saw(self, chunk: Chunk) -> None:
        pass

    def replied(self, **reply: Any) -> None:
        pass


OFF = _Off()


def turn(run_id: str) -> Any:
    """The span of one run's stream, current while the run's task works (`with turn(id) as t: t.saw(chunk)`)."""
    if _tracer is None:
        return OFF
    return _turn(run_id)


@contextmanager
def _turn(run_id: str) -> Iterator[_Turn]:
    attributes = {"gen_ai.operation.name": "invoke_agent", "bot.run.id": run_id}
    with _tracer.start_as_current_span("invoke_agent", attributes=attributes) as span:
        yield _Turn(span)


class _Turn:
    __slots__ = ("span",)

    def __init__(self, span: Any):
        self.span = span

    def saw(self, chunk: Chunk) -> None:
        if chunk.type == "finish":
            payload = cast("FinishPayload", chunk.payload)
            self.span.set_attribute("bot.run.finish_reason", payload.get("finish_reason") or "")
            usage = payload.get("usage") or {}
            if usage:
                self.span.set_attribute("gen_ai.usage.input_tokens", usage.get("prompt_tokens", 0))
                self.span.set_attribute("gen_ai.usage.output_tokens", usage.get("completion_tokens", 0))
        elif chunk.type == "error":
            from opentelemetry.trace import Status, StatusCode

            self.span.set_attribute("error.type", "run_failed")
            self.span.set_status(Status(StatusCode.ERROR, str(chunk.payload.get("message", ""))))


def describe_turn(agent_id: str, run: StoredRun) -> None:
    """Name the current turn's span after its agent and thread (the driver knows them, the stream does not)."""
    if _tracer is None:
        return
    from opentelemetry import trace

    span = trace.get_current_span()
    if not span.is_recording():
        return
    span.update_name(f"invoke_agent {agent_id}")
    span.set_attribute("gen_ai.agent.id", agent_id)
    span.set_attribute("gen_ai.agent.name", agent_id)
    if run.thread_id:
        span.set_attribute("gen_ai.conversation.id", run.thread_id)
    if run.resource_id:
        span.set_attribute("bot.resource.id", run.resource_id)
    if run.parent_run_id:
        span.set_attribute("bot.run.parent_id", run.parent_run_id)


def model_call(model: str, client: Any = None, *, kind: str = "step") -> Any:
    """The span of one model request (`with model_call(m) as c: ...; c.replied(...)`); never made current."""
    if _tracer is None:
        return OFF
    return _ModelCall(model, client, kind)


class _ModelCall:
    __slots__ = ("span",)

    def __init__(self, model: str, client: Any, kind: str):
        from opentelemetry.trace import SpanKind

        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": "openai",
            "gen_ai.request.model": model,
            "bot.model_call.kind": kind,
        }
        url = getattr(client, "base_url", None)
        if url is not None and getattr(url, "host", None):
            attributes["server.address"] = url.host
            if url.port:
                attributes["server.port"] = url.port
        self.span = _tracer.start_span(f"chat {model}", kind=SpanKind.CLIENT, attributes=attributes)

    def __enter__(self) -> _ModelCall:
        return self

    def __exit__(self, kind: Any, exc: BaseException | None, tb: Any) -> None:
        if exc is not None:
            from opentelemetry.trace import Status, StatusCode

            cause = exc.__cause__ or exc  # the client's error, not the runtime's ModelError around it
            self.span.set_attribute("error.type", type(cause).__name__)
            self.span.set_status(Status(StatusCode.ERROR, str(exc)))
        self.span.end()

    def replied(
        self,
        *,
        finish_reason: str | None = None,
        usage: dict[str, int] | None = None,
        response_model: str | None = None,
        response_id: str | None = None,
    ) -> None:
        span = self.span
        if finish_reason:
            span.set_attribute("gen_ai.response.finish_reasons", [finish_reason])
        if usage:
            span.set_attribute("gen_ai.usage.input_tokens", usage.get("prompt_tokens", 0))
            span.set_attribute("gen_ai.usage.output_tokens", usage.get("completion_tokens", 0))
        if response_model:
            span.set_attribute("gen_ai.response.model", response_model)
        if response_id:
            span.set_attribute("gen_ai.response.id", response_id)


def _tool_attributes(row: StoredToolCall, policy: ToolPolicy | None) -> dict[str, Any]:
    attributes: dict[str, Any] = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": row.tool_name,
        "gen_ai.tool.call.id": row.tool_call_id,
        "gen_ai.tool.type": "function",
        "bot.run.id": row.run_id,
        "bot.tool_call.requires_approval": bool(row.requires_approval),
    }
    if policy is not None:
        attributes["bot.policy.mode"] = str(policy.mode)
        attributes["bot.policy.version"] = policy.version
        attributes["bot.policy.approvers"] = list(policy.approvers)
        attributes["bot.policy.self_approval"] = policy.self_approval
        if policy.expires_after is not None:
            attributes["bot.policy.expires_after"] = policy.expires_after
    if row.decision:
        attributes["bot.approval.decision"] = row.decision
    if row.decided_by:
        attributes["bot.approval.decided_by"] = row.decided_by
    return attributes


def waits_for_approval(row: StoredToolCall, policy: ToolPolicy | None) -> None:
    """A proposed call starts to wait for a human: its span, which ends with the event `bot.approval.requested`."""
    if _tracer is None:
        return
    span = _tracer.start_span(f"execute_tool {row.tool_name}", attributes=_tool_attributes(row, policy))
    span.add_event("bot.approval.requested", {"bot.tool_call.state": str(row.state)})
    span.end()


def decided(call: StoredToolCall, *, kind: str, outcome: str, actor: str | None, via: str) -> None:
    """A decision about a waiting call is carried out in the current turn: the event `bot.approval.decided`,
    and the wait for a person as a span of its own (`await_decision {tool}`), from the request to the
    decision, under the turn that carries it out (the wait may have outlasted the process that asked)."""
    if _tracer is None:
        return
    from opentelemetry import trace

    attributes: dict[str, Any] = {
        "gen_ai.tool.name": call.tool_name,
        "gen_ai.tool.call.id": call.tool_call_id,
        "bot.approval.decision": kind,
        "bot.approval.outcome": outcome,
        "bot.approval.via": via,
    }
    if actor:
        attributes["bot.approval.decided_by"] = actor
    trace.get_current_span().add_event("bot.approval.decided", attributes)
    if call.child_run_id is None and call.suspended_at is not None:  # the inner call's wait is the one
        _wait_span(call, attributes)


def _wait_span(call: StoredToolCall, decision: dict[str, Any]) -> None:
    start, end = call.suspended_at, call.decided_at
    assert start is not None
    end = end if end is not None and end >= start else start
    name = call.displayed_tool_name
    attributes = {
        **decision,
        "gen_ai.tool.name": name,
        "bot.run.id": call.run_id,
        "bot.wait.kind": "approval" if call.requires_approval else "question",
        "bot.wait.seconds": (end - start).total_seconds(),
    }
    span = _tracer.start_span(f"await_decision {name}", attributes=attributes, start_time=_nanoseconds(start))
    span.end(end_time=_nanoseconds(end))


def _nanoseconds(moment: datetime) -> int:
    return int(moment.timestamp() * 1_000_000_000)


def tool_call(row: StoredToolCall, policy: ToolPolicy | None, context: Any = None) -> Any:
    """The span of one tool's `execute`, current while it runs (a sub-agent's turn nests under it).
    `context`: the tool's `AgentToolContext`; a suspension it recorded is the event `bot.tool.suspended`."""
    if _tracer is None:
        return OFF
    return _tool_call(row, policy, context)


@contextmanager
def _tool_call(row: StoredToolCall, policy: ToolPolicy | None, context: Any) -> Iterator[Any]:
    with _tracer.start_as_current_span(f"execute_tool {row.tool_name}", attributes=_tool_attributes(row, policy)) as s:
        try:
            yield s
        except Exception as exc:
            s.set_attribute("error.type", type(exc).__name__)
            raise
        if context is not None and getattr(context, "suspended", False):
            s.add_event("bot.tool.suspended", {"bot.tool_call.state": "suspended"})
