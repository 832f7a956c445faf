"""The agent runtime: a tool-calling loop whose sensitive calls wait for a human.

Knows nothing of Slack: it imports `tools` and `memory` only. Every front end (Slack, the HTTP API,
the playground) drives it through the names exported here; every decision about a waiting call goes
through `Agent.decide(run_id, tool_call_id, Approve(...) | Decline(...) | Resume(...))`.
"""

from memory.states import DecisionKind, RunStatus, ToolCallState, is_interrupted, waits_instead

from ._agent import Agent
from ._fingerprint import fingerprint
from ._model import limit_model_requests
from ._stream import AgentStream, wait_for_running_runs
from .exceptions import (
    AgentError,
    AmbiguousSuspendedRunsError,
    ModelError,
    NoSuspendedRunError,
    PolicyError,
    ResumeDataInvalidError,
    SnapshotNotFoundError,
    SubAgentNotFoundError,
    ThreadOwnerError,
    ToolArgsInvalidError,
    ToolCallNotSuspendedError,
)
from .types import (
    AgentOutput,
    Approve,
    Chunk,
    ChunkPayload,
    Decision,
    Decline,
    DeniedPayload,
    ErrorPayload,
    Expire,
    FinishPayload,
    Resume,
    RunRecord,
    SuspendedRun,
    SuspendedRunsPage,
    SuspendedToolCall,
    SuspendPayload,
    TextDeltaPayload,
    ToolCallCheck,
    ToolCallPayload,
    ToolCallRecord,
    ToolPreview,
    ToolResultPayload,
    WaitingCallPayload,
)

__all__ = [
    "is_interrupted",
    "Agent",
    "AgentError",
    "AgentOutput",
    "AgentStream",
    "AmbiguousSuspendedRunsError",
    "Approve",
    "Chunk",
    "ChunkPayload",
    "Decision",
    "Decline",
    "DeniedPayload",
    "ErrorPayload",
    "Expire",
    "FinishPayload",
    "DecisionKind",
    "ModelError",
    "NoSuspendedRunError",
    "PolicyError",
    "Resume",
    "ResumeDataInvalidError",
    "RunRecord",
    "RunStatus",
    "SnapshotNotFoundError",
    "SuspendPayload",
    "SuspendedRun",
    "SuspendedRunsPage",
    "SubAgentNotFoundError",
    "SuspendedToolCall",
    "TextDeltaPayload",
    "ThreadOwnerError",
    "ToolArgsInvalidError",
    "ToolCallCheck",
    "ToolCallNotSuspendedError",
    "ToolCallPayload",
    "ToolCallRecord",
    "ToolCallState",
    "ToolPreview",
    "ToolResultPayload",
    "WaitingCallPayload",
    "fingerprint",
    "limit_model_requests",
    "wait_for_running_runs",
    "waits_instead",
]
