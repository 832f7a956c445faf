"""The storage the runtime depends on, as protocols of domain methods (in the manner of LangGraph's
checkpoint savers): the agent runtime (`bot.agent`) is typed against these, `RunStore` and `PolicyStore`
(SQLAlchemy, on SQLite or PostgreSQL) are the implementation behind them, and
`tests/memory/test_protocols.py` checks that the implementation offers every method as declared here.

Every method that moves a run or a call is a conditional write whose WHERE names the states it may
leave (see `memory.states`): an implementation keeps that promise, so the database decides who won.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol, Unpack

if TYPE_CHECKING:
    from ._grants import Grant
    from ._policies import ToolPolicy, UnreadablePolicy
    from ._runs import Audit
    from .records import CallColumns, RunColumns, StartColumns, StoredRun, StoredToolCall
    from .states import NextMove, RunStatus, ToolCallState


class RunStorage(Protocol):
    """Runs, their messages and their tool calls: what the runtime reads and every move it makes."""

    # --- runs
    async def create_run(
        self, run: StoredRun, messages: Iterable[dict[str, Any]] = (), *, new_thread: bool = False
    ) -> None:
        """Store a new run with its first messages; with `new_thread`, its thread too (see `open_thread`)."""
        ...

    async def get_run(self, run_id: str) -> StoredRun | None: ...

    async def run_and_call(
        self, run_id: str, tool_call_id: str | None
    ) -> tuple[StoredRun | None, StoredToolCall | None]:
        """A run and one of its calls (no `tool_call_id`: the call that waits latest), read together."""
        ...

    async def run_call_and_policy(
        self, run_id: str, tool_call_id: str | None
    ) -> tuple[StoredRun | None, StoredToolCall | None, ToolPolicy | None]:
        """A run, one of its calls and the policy of the tool a human decides about, in one read (what a
        decision or a view of a waiting call reads)."""
        ...

    async def move_run(
        self,
        run: StoredRun,
        to: RunStatus,
        *,
        only_from: Iterable[RunStatus] | None = None,
        from_step: int | None = None,
        messages: Iterable[dict[str, Any]] = (),
        **fields: Unpack[RunColumns],
    ) -> bool:
        """Move a run to `to` if its status may go there (and, with `from_step`, its step is that); True if
        this caller won."""
        ...

    async def after_work(
        self, run: StoredRun, owner: str, *, holds_run: bool, settled_in_turn: bool = False
    ) -> NextMove:
        """What follows a worker's calls of the current step (go on, park, or leave it to another);
        `settled_in_turn`: this process, not holding the run, just settled a call with `in_turn`."""
        ...

    async def held_calls(self, owner: str, keys: Iterable[tuple[str, str]]) -> dict[tuple[str, str], StoredToolCall]:
        """The calls among `keys` (run id, tool call id) that `owner` still holds live (`held_by`), by key."""
        ...

    async def heartbeat(self, run_id: str, owner: str) -> None:
        """Refresh the run's lease: a process is still working on it."""
        ...

    async def mark_previews_started(self, run: StoredRun, fingerprints: Iterable[str]) -> None:
        """Record which calls' previews start at the step `run` is making, before they run."""
        ...

    async def stale_runs(self, agent_id: str, *, stale_before: datetime, limit: int = 100) -> list[str]:
        """Top-level runs of one agent whose lease is older than `stale_before` and that have work in hand."""
        ...

    async def take_over(self, run_id: str, *, stale_before: datetime, owner: str) -> StoredRun | None:
        """Take a run whose lease went stale; exactly one of several recovering processes wins it."""
        ...

    async def suspended_runs(
        self, agent_id: str, *, thread_id: str | None, resource_id: str | None, page: int, per_page: int
    ) -> tuple[list[tuple[StoredRun, list[StoredToolCall]]], int, bool]:
        """Top-level runs of one agent with a call that waits for a human, newest first, their total, and
        whether the total is exact (it is counted only so far past the page)."""
        ...

    # --- messages and threads
    async def run_messages(self, run_id: str) -> list[dict[str, Any]]: ...

    async def open_thread(self, thread_id: str, resource_id: str | None) -> bool:
        """Whether the thread exists, once `resource_id` may use it (a thread belongs to its first resource:
        `ThreadOwnerError` for any other). A new thread is stored with its first run (`create_run`)."""
        ...

    async def open_thread_with_waits(
        self, thread_id: str, resource_id: str | None
    ) -> tuple[bool, list[tuple[StoredRun, StoredToolCall, ToolPolicy]]]:
        """`open_thread`, and in the same read the calls that wait in the thread (oldest first), each with its
        run and its tool's policy."""
        ...

    # --- steps and tool calls
    async def record_step(
        self,
        run: StoredRun,
        reply: dict[str, Any],
        calls: list[StoredToolCall],
        *,
        results: Iterable[dict[str, Any]] = (),
        audits: Iterable[tuple[StoredToolCall, Audit]] = (),
        suspend: bool = False,
    ) -> None:
        """Store one step at once: the model's reply, its calls and any immediate results, over the step
        before `run.step` only (else `RunTakenOverError`: another process recorded it)."""
        ...

    async def get_tool_call(self, run_id: str, tool_call_id: str) -> StoredToolCall | None: ...

    async def latest_waiting_call(self, run_id: str) -> StoredToolCall | None: ...

    async def call_ids(self, run_id: str) -> set[str]: ...

    async def step_calls(self, run_id: str, step: int) -> list[StoredToolCall]: ...

    async def waiting_calls_in_thread(self, thread_id: str) -> list[StoredToolCall]:
        """Every call of the thread still waiting, oldest first (one indexed query)."""
        ...

    async def approvals_waiting_since(
        self, agent_id: str, tool_name: str, *, before: datetime, limit: int = 100
    ) -> list[tuple[str, str]]:
        """(run id, tool call id) of one agent's top-level calls of `tool_name` waiting for approval since `before`."""
        ...

    async def questions_waiting_since(
        self, agent_id: str, tool_name: str, *, before: datetime, limit: int = 100
    ) -> list[tuple[str, str]]:
        """(run id, tool call id) of one agent's top-level calls of `tool_name` whose question (not a live one)
        waits for an answer since `before`."""
        ...

    async def transition(
        self,
        call: StoredToolCall,
        to: ToolCallState,
        *,
        allowed_from: Iterable[ToolCallState] | None = None,
        messages: Iterable[dict[str, Any]] = (),
        run: StoredRun | None = None,
        audit: Audit | Iterable[Audit] | None = None,
        lease: str | None = None,
        approvals_seen: int | None = None,
        grant: dict[str, Any] | None = None,
        since: datetime | None = None,
        in_turn: bool = False,
        **fields: Unpack[CallColumns],
    ) -> bool:
        """Move `call` to `to` if it is still in a state that may go there; True if this caller won. With
        `approvals_seen` (four eyes, the last approval): only while exactly that many approvals are counted
        and the arguments are still those of `call.fingerprint`. With `grant`: a standing grant's row,
        stored in the same transaction only if this caller won. With `since`: only while the call was not
        moved since then (its `updated_at`, as this caller's own start of it left it). With `in_turn`: the move
        holds the run's row lock when it commits, so a claim that follows (`after_work(..., settled_in_turn=True)`)
        sees it."""
        ...

    async def count_approval(
        self, call: StoredToolCall, approval: dict[str, Any], *, audit: Audit, lease: str | None = None
    ) -> bool:
        """Four eyes: count one more approval of a call that still waits for approval with the approvals
        and the arguments its approver read (the call stays waiting); True if it counted."""
        ...

    async def start(self, call: StoredToolCall, **fields: Unpack[StartColumns]) -> tuple[bool, int | None]:
        """Mark `call` running (the durable "the tool started" mark) unless its tool was disabled."""
        ...

    async def store_result_and_next_move(
        self,
        call: StoredToolCall,
        to: ToolCallState,
        *,
        run: StoredRun,
        messages: Iterable[dict[str, Any]],
        audit: Audit,
        owner: str,
        holds_run: bool,
        since: datetime | None = None,
        **fields: Unpack[CallColumns],
    ) -> tuple[bool, NextMove | None]:
        """Store a call's result and decide what follows (as `after_work`): (True, the move), (False, None) when
        it was settled elsewhere, (True, None) when stored but the move is left to `after_work`; `since` as in
        `transition`."""
        ...


class PolicyReader(Protocol):
    """The admins' tool policies, as the runtime reads them (the adapters and the command line change them)."""

    async def get(self, tool_name: str) -> ToolPolicy:
        """The policy of `tool_name`, or the defaults when none is stored."""
        ...

    async def with_expiry(self) -> list[ToolPolicy | UnreadablePolicy]:
        """The stored policies that set an expiry (what the expiry sweep looks at)."""
        ...


class GrantReader(Protocol):
    """Standing grants, as the runtime looks them up when a call is proposed."""

    async def matching(
        self,
        *,
        agent_id: str,
        tool_name: str,
        thread_id: str,
        fingerprint: str | None,
        longest: int,
        not_granted_by: str | None = None,
    ) -> Grant | None:
        """A live grant covering a call of `tool_name` in `thread_id` with these arguments, or None."""
        ...


class DelegationReader(Protocol):
    """Delegations, as the runtime's rule looks them up when someone acts on a waiting call."""

    async def delegators_of(self, delegate: str) -> tuple[str, ...]:
        """Whose approvals `delegate` holds now (delegations in force), oldest first."""
        ...
