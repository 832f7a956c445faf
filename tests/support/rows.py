"""Runtime records built in memory, for the storage tests that store them directly (no agent in between)."""

from __future__ import annotations

import uuid

from memory import StoredRun, StoredToolCall
from memory.states import RUN_STARTS_IN, ToolCallState
from memory.tables import utcnow


def a_run(
    *, status: str = str(RUN_STARTS_IN), thread_id: str | None = None, resource_id: str | None = "user-1", step: int = 0
) -> StoredRun:
    """A run of agent `agent` for `resource_id`, in a thread (with memory) when `thread_id` is given."""
    return StoredRun(
        id=uuid.uuid4().hex,
        agent_id="agent",
        thread_id=thread_id,
        resource_id=resource_id,
        uses_memory=thread_id is not None,
        status=status,
        step=step,
        max_steps=5,
        request_context={},
        heartbeat_at=utcnow(),
    )


def a_call(run: StoredRun, state: ToolCallState, *, tool_call_id: str = "call-1") -> StoredToolCall:
    """A `delete-record` call of `run`'s current step, in `state` (needing approval when it waits for one)."""
    return StoredToolCall(
        run_id=run.id,
        tool_call_id=tool_call_id,
        agent_id=run.agent_id,
        thread_id=run.thread_id,
        resource_id=run.resource_id,
        step=run.step,
        position=0,
        tool_name="delete-record",
        args={"id": 3, "note": "削除してください"},
        state=str(state),
        requires_approval=state == ToolCallState.AWAITING_APPROVAL,
        is_error=False,
    )
