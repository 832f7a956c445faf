"""The runtime's public data: chunks of a stream, a run's output, and what waits for a decision."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

ChunkType = Literal[
    "text-delta",
    "tool-call",
    "tool-result",
    "tool-call-approval",
    "tool-call-suspended",
    "tool-output-denied",
    "step-finish",
    "finish",
    "error",
]
FinishReason = Literal["stop", "suspended", "length", "error"]


@dataclass(frozen=True, kw_only=True)
class Chunk:
    """One event of a run's stream."""

    type: ChunkType
    run_id: str
    payload: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True)
class SuspendPayload:
    """The call a run stopped at."""

    tool_call_id: str
    tool_name: str
    args: Any
    requires_approval: bool
    """True when it waits for approve/decline; False when the tool suspended itself for data."""
    payload: Any = None
    """What `suspend()` was given; None for an approval."""


@dataclass(kw_only=True)
class AgentOutput:
    """What a finished (or suspended) `generate` returns."""

    text: str
    finish_reason: FinishReason
    run_id: str
    suspend_payload: SuspendPayload | None = None
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    """Each `tool-call` chunk's payload, in order."""
    tool_results: list[dict[str, Any]] = field(default_factory=list)
    """Each `tool-result` chunk's payload, in order."""
    usage: dict[str, int] = field(default_factory=dict)
    error: str | None = None
    """The message of the `error` chunk when finish_reason is "error"."""


@dataclass(frozen=True, kw_only=True)
class SuspendedToolCall:
    tool_call_id: str
    tool_name: str
    args: Any
    requires_approval: bool
    suspend_payload: Any = None


@dataclass(frozen=True, kw_only=True)
class SuspendedRun:
    run_id: str
    status: str
    thread_id: str | None
    resource_id: str | None
    suspended_at: datetime | None
    tool_calls: list[SuspendedToolCall]


@dataclass(frozen=True, kw_only=True)
class SuspendedRunsPage:
    runs: list[SuspendedRun]
    total: int


@dataclass(frozen=True, kw_only=True)
class ToolCallCheck:
    """What a `before_tool_call` hook gets."""

    tool_name: str
    input: Any
    tool_call_id: str
    run_id: str
    context: Any
