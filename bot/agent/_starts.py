"""Starting runs: a turn's run (after a "never mind" or an answer in the thread has had its say), a
sub-agent's run for its supervisor's call, and the options a run is driven with (the request's, or those
storage holds for a stored run). `Agent.stream` delegates here."""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from memory import Memory, StoredRun, StoredToolCall, ToolPolicy, with_source_id
from memory.states import RUN_STARTS_IN

from ._authorize import Action, authorize, policy_for
from ._autoresume import find_answer, waiting_note
from ._deciding import DecidingAgent, asked_of
from ._driving import RequestOptions, RunDeps
from ._results import Decided, DecisionResult
from ._run import RunDriver
from ._stream import AgentStream
from ._thread_cancel import cancel_in_thread
from .types import Decision, Resume

if TYPE_CHECKING:
    import openai


class StartingAgent(DecidingAgent, Protocol):
    """What starting runs needs of `Agent` (a protocol, so this module does not import `_agent`)."""

    @property
    def owner(self) -> str: ...

    @property
    def model(self) -> str: ...

    @property
    def memory(self) -> Memory | None: ...

    @property
    def model_client(self) -> openai.AsyncOpenAI: ...

    @property
    def default_options(self) -> Mapping[str, Any]: ...

    async def decide_as(
        self,
        run_id: str,
        tool_call_id: str | None,
        decision: Decision,
        *,
        actor: str | None,
        via: str = "runtime",
        user_messages: Sequence[dict[str, Any]] = (),
    ) -> DecisionResult: ...

    def _deps(self) -> RunDeps: ...


class RunStarts:
    """Starts one agent's runs; keeps the request's approval callables of the runs this process started."""

    def __init__(self, agent: StartingAgent) -> None:
        self._agent = agent
        self._request_rules: dict[str, Any] = {}
        """Run id -> the request's approval callable (it cannot be stored; see `_new_run`)."""

    async def stream(self, message: str | list[dict[str, Any]], **options: Any) -> AgentStream:
        """Start a run on `message` and return its stream.

        `message_id` (optional): the front end's id of the message in the thread (a Slack message's ts). The
        run it starts, or the waiting call it answers, takes it once: a second taker (a replica that stalled
        past its lease while another answered the message) gets `MessageTakenError` and nothing is stored."""
        request = self._request_options(options)
        thread_id, resource_id = options.get("thread_id"), options.get("resource_id")
        message_id = options.get("message_id")  # a thread message is taken once: MessageTakenError
        uses_memory = self._agent.memory is not None and thread_id is not None
        notes: list[str] = []
        new_thread = False
        if uses_memory and thread_id is not None:
            # a new thread (a top-level mention: most turns) has no waiting calls, and is stored with its run;
            # an existing one is read with its waiting calls, their runs and policies, in one statement
            found, waits = await self._agent.storage.runs.open_thread_with_waits(thread_id, resource_id)
            new_thread = not found
            waiting = [call for _run, call, _policy in waits]
            # a live question that takes no data (a page to visit, MCP URL mode) is not answered in the thread
            parked = [
                c
                for c in waiting
                if not c.requires_approval
                and c.agent_id == self._agent.id
                and c.resource_id in (None, resource_id)
                and not (c.held_by is not None and c.resume_schema is None)
            ]
            unclear: list[str] = []
            speaker = request.request_context.get("requester") or resource_id
            mine = [c for c in waiting if c.agent_id == self._agent.id and c.resource_id in (None, resource_id)]
            if mine and isinstance(message, str):  # "never mind": withdraw what waits, if the speaker may
                cancelled = await cancel_in_thread(self._agent, mine, message, speaker, user_messages_of(message))
                if cancelled is not None:
                    return cancelled
            if parked and request.auto_resume_suspended_tools:
                parked = await self._answerable_by(speaker, parked, waits)  # anyone else's message: a turn of its own
            if parked and request.auto_resume_suspended_tools:
                resumed, unclear = await self._auto_resume(parked, message, speaker, message_id)
                if resumed is not None:
                    return resumed
            if waiting:
                notes.append(waiting_note(waiting, unclear))
        run = self._new_run(thread_id=thread_id, resource_id=resource_id, uses_memory=uses_memory, options=request)
        messages = user_messages_of(message)
        await self._agent.storage.runs.create_run(run, with_source_id(messages, message_id), new_thread=new_thread)
        # a new thread holds only these messages, so its first step needs no read of the thread
        first_messages = messages if new_thread or not uses_memory else None
        driver = RunDriver(self._agent._deps(), run, request, messages=first_messages)
        return AgentStream(run.id, driver.loop(notes))

    async def _auto_resume(
        self,
        parked: list[StoredToolCall],
        message: str | list[dict[str, Any]],
        speaker: str | None,
        message_id: str | None = None,
    ) -> tuple[AgentStream | None, list[str]]:
        """Resume the parked call the message answers, with the message kept in the thread, decided by its
        `speaker`; else None and what the message left unclear."""
        text = message if isinstance(message, str) else "\n".join(str(m.get("content") or "") for m in message)
        reading = await find_answer(
            self._agent.model_client,
            self._agent.model,
            parked,
            text,
            timeout=float(self._agent.default_options["auto_resume_timeout"]),
        )
        answer = reading.answer
        if answer is None:
            return None, reading.unclear
        result = await self._agent.decide_as(
            answer.call.run_id,
            answer.call.tool_call_id,
            Resume(answer.resume_data),
            actor=speaker,
            via="thread",
            user_messages=with_source_id(user_messages_of(message), message_id),
        )
        if isinstance(result, Decided):
            return result.stream, []
        return None, []  # someone settled it first, the data did not fit, it cannot be reached: a normal turn

    async def _answerable_by(
        self,
        speaker: str | None,
        parked: list[StoredToolCall],
        waits: list[tuple[StoredRun, StoredToolCall, ToolPolicy]],
    ) -> list[StoredToolCall]:
        """The parked calls `speaker` may answer (the rule's `Action.ANSWER`), without auditing the others:
        a message that answers none of them is an ordinary turn, not a refused answer. `waits`: each waiting
        call's run and policy, as read with the thread."""
        read = {(call.run_id, call.tool_call_id): (run, policy) for run, call, policy in waits}
        answerable = []
        for call in parked:
            run, stored = read[(call.run_id, call.tool_call_id)]
            policy = policy_for(stored, call)
            if await authorize(asked_of(run, call, speaker, Action.ANSWER), policy, self._agent.directory) is None:
                answerable.append(call)
        return answerable

    async def start_child_run(
        self, *, prompt: str, parent: StoredRun, run_id: str, options: RequestOptions
    ) -> AgentStream:
        """Run this agent as a supervisor's sub-agent: its own run (`run_id`, already named on the
        supervisor's call), linked to the parent, no thread history."""
        request = RequestOptions(
            require_tool_approval=options.require_tool_approval,
            request_context=options.request_context,
            max_steps=int(self._agent.default_options["max_steps"]),
            model_timeout=float(self._agent.default_options["model_timeout"]),
            heartbeat_interval=float(self._agent.default_options["heartbeat_interval"]),
        )
        run = self._new_run(
            thread_id=None, resource_id=parent.resource_id, uses_memory=False, options=request, run_id=run_id
        )
        run.parent_run_id = parent.id
        messages = user_messages_of(prompt)
        await self._agent.storage.runs.create_run(run, messages)
        return AgentStream(run.id, RunDriver(self._agent._deps(), run, request, messages=messages).loop())

    def _new_run(
        self,
        *,
        thread_id: str | None,
        resource_id: str | None,
        uses_memory: bool,
        options: RequestOptions,
        run_id: str | None = None,
    ) -> StoredRun:
        run_id = run_id or uuid.uuid4().hex
        rule = options.require_tool_approval
        stored_rule = rule if isinstance(rule, bool) else None
        if callable(rule) and rule is not self._agent.default_options.get("require_tool_approval"):
            # A callable cannot be stored: it holds in this process only. Any other process that goes on
            # with the run finds True, so it asks a human wherever the callable would have been asked.
            self._request_rules[run_id] = rule
            stored_rule = True
        return StoredRun(
            id=run_id,
            agent_id=self._agent.id,
            thread_id=thread_id,
            resource_id=resource_id,
            uses_memory=uses_memory,
            status=str(RUN_STARTS_IN),
            owner=self._agent.owner,
            heartbeat_at=self._agent.storage.clock.now(),
            step=0,
            max_steps=options.max_steps,
            require_tool_approval=stored_rule,
            request_context=_jsonable_context(options.request_context),
        )

    def _request_options(self, options: Mapping[str, Any]) -> RequestOptions:
        merged = {**self._agent.default_options, **{k: v for k, v in options.items() if v is not None}}
        return RequestOptions(
            require_tool_approval=merged.get("require_tool_approval"),
            request_context=dict(merged.get("request_context") or {}),
            max_steps=int(merged["max_steps"]),
            auto_resume_suspended_tools=bool(merged.get("auto_resume_suspended_tools")),
            model_timeout=float(merged["model_timeout"]),
            heartbeat_interval=float(merged["heartbeat_interval"]),
        )

    def stored_options(self, run: StoredRun) -> RequestOptions:
        """The options of a stored run, as far as storage holds them (see `_new_run` for the approval rule)."""
        rule = self._request_rules.get(run.id, run.require_tool_approval)
        if rule is None:
            rule = self._agent.default_options.get("require_tool_approval")
        return RequestOptions(
            require_tool_approval=rule,
            request_context=dict(run.request_context or {}),
            max_steps=run.max_steps,
            model_timeout=float(self._agent.default_options["model_timeout"]),
            heartbeat_interval=float(self._agent.default_options["heartbeat_interval"]),
        )

    def forget_request_rule(self, run_id: str) -> None:
        """Drop the callable kept for a run that finished."""
        self._request_rules.pop(run_id, None)


def user_messages_of(message: str | list[dict[str, Any]]) -> list[dict[str, Any]]:
    if isinstance(message, str):
        return [{"role": "user", "content": message}]
    return [{"role": m.get("role", "user"), "content": m.get("content")} for m in message]


def _jsonable_context(context: dict[str, Any]) -> dict[str, Any]:
    jsonable: dict[str, Any] = json.loads(json.dumps(context, default=str))
    return jsonable
