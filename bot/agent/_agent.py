"""`Agent`: the public face of the runtime. It starts runs, takes decisions about waiting calls, and
finds suspended runs; the loop itself lives in `_run`."""

from __future__ import annotations

import logging
import os
import socket
import uuid
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from bot.defaults import DEFAULT_MODEL
from bot.redaction import NO_KNOWN_SECRETS, Redactor
from memory import (
    DelegationReader,
    Memory,
    Storage,
    StoredRun,
    StoredToolCall,
    ToolPolicy,
)
from memory.states import (
    WAITING_STATES,
)
from tools import (
    Tool,
    create_tool,
)

from ._authorize import (
    Action,
    Directory,
    OpenDirectory,
)
from ._deciding import CallRead, Landed, check_action, decide_as, read_call
from ._decisions import Decisions
from ._driving import RunDeps, SubAgent
from ._forms import DecisionForms
from ._live_questions import LiveQuestions
from ._lookups import Lookups
from ._model import shared_client, whole_replies
from ._recovery import Recovery
from ._results import DecisionResult, Refused
from ._run import RunDriver
from ._starts import RunStarts
from ._stream import AgentStream
from ._sweeps import Sweeps
from ._undoing import UndoResult, undo_as, undo_offer
from ._view import WaitingCallView, actions_for, view_of
from .types import (
    AgentOutput,
    Decision,
    RunRecord,
    SuspendedRunsPage,
    ToolCallRecord,
)

if TYPE_CHECKING:
    import openai

log = logging.getLogger(__name__)

SUB_AGENT_PREFIX = "agent-"
_PROMPT_SCHEMA = {
    "type": "object",
    "properties": {"prompt": {"type": "string", "description": "What to ask the agent"}},
    "required": ["prompt"],
    "additionalProperties": False,
}


class Agent(DecisionForms):
    """An LLM agent with tools, some of which wait for a human before they run."""

    def __init__(
        self,
        *,
        id: str,
        name: str | None = None,
        instructions: str = "",
        model: str = DEFAULT_MODEL,
        tools: Mapping[str, Tool] | Sequence[Tool] | None = None,
        agents: Mapping[str, Agent] | Sequence[Agent] | None = None,
        memory: Memory | None = None,
        storage: Storage | None = None,
        default_options: Mapping[str, Any] | None = None,
        hooks: Mapping[str, Callable[..., Any | Awaitable[Any]]] | None = None,
        description: str = "",
        model_client: openai.AsyncOpenAI | None = None,
    ):
        self.id = id
        self.name = name or id
        self.instructions = instructions
        self.model = model
        self.description = description
        self.tools: dict[str, Tool] = {t.id: t for t in (tools.values() if isinstance(tools, Mapping) else tools or [])}
        self.agents: dict[str, Agent] = {
            a.id: a for a in (agents.values() if isinstance(agents, Mapping) else agents or [])
        }
        self._sub_agent_tools: dict[str, Tool] = {
            SUB_AGENT_PREFIX + a.id: create_tool(
                id=SUB_AGENT_PREFIX + a.id,
                description=a.description or f"Ask the agent {a.name!r} to do something; it answers in text.",
                input_schema=_PROMPT_SCHEMA,
                execute=_run_by_the_loop,
            )
            for a in self.agents.values()
        }
        self.hooks = dict(hooks or {})
        self.default_options = {
            "auto_resume_suspended_tools": False,
            "max_steps": 10,
            "auto_resume_timeout": 30.0,
            "model_timeout": 60.0,
            "heartbeat_interval": 5.0,
            **(default_options or {}),
        }
        self._given_options = frozenset(default_options or {})
        self._model_client = model_client
        self._owns_client = model_client is None  # then it uses the process's shared client
        self.memory: Memory | None = None
        self._storage: Storage | None = None
        self._storage_configured = False
        self._temporary_storage: Storage | None = None
        """The database this agent made itself, given no storage (`storage`); `aclose` closes it."""
        self.owner = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self._at_work: Counter[str] = Counter()
        """Run id -> drivers of this process working on it now (`RunDeps.at_work`)."""
        self._redact: Callable[[str], str] = NO_KNOWN_SECRETS
        self.directory: Directory = OpenDirectory()
        """Who people are, as the front end knows them (`attach(directory=...)`), for the rule of who may act."""
        self._lookups = Lookups(self)
        self._starts = RunStarts(self)
        self._sweeps = Sweeps(self)
        self._live = LiveQuestions(self)
        self._recovery = Recovery(self)
        self._decisions = Decisions(self, self._live)
        self.attach(storage=storage, memory=memory)

    def __repr__(self) -> str:
        return f"Agent(id={self.id!r})"

    # --- dependencies -----------------------------------------------------------------------
    def attach(
        self,
        *,
        storage: Storage | None = None,
        memory: Memory | None = None,
        model_client: openai.AsyncOpenAI | None = None,
        secrets: Iterable[str] | None = None,
        directory: Directory | None = None,
    ) -> Agent:
        """Give the agent what the bot builds from settings: storage (and optionally memory), a model
        client, the secrets a failing tool's words are shown without (`bot.redaction`: the settings'
        tokens and keys), and the front end's directory of people; sub-agents without their own get the
        same."""
        if secrets is not None:
            self._redact = Redactor(secrets)
            for sub_agent in self.agents.values():
                sub_agent.attach(secrets=secrets)
        if directory is not None:
            self.directory = directory
            for sub_agent in self.agents.values():
                sub_agent.attach(directory=directory)
        if model_client is not None:
            self._model_client, self._owns_client = model_client, False
            for sub_agent in self.agents.values():
                if sub_agent._owns_client:
                    sub_agent.attach(model_client=model_client)
        if memory is not None:
            self.memory = memory
            storage = storage or memory.storage
        if storage is not None:
            self._storage = storage
            self._storage_configured = True
            for sub_agent in self.agents.values():
                if not sub_agent._storage_configured:
                    sub_agent.attach(storage=storage)
        return self

    def set_default_option(self, name: str, value: Any, *, unless_given: bool = False) -> None:
        """Set one of `default_options` here and in sub-agents; with `unless_given`, an agent built with
        its own value keeps it (the bot's settings give defaults, the code that built the agent wins)."""
        if not (unless_given and name in self._given_options):
            self.default_options[name] = value
        for sub_agent in self.agents.values():
            sub_agent.set_default_option(name, value, unless_given=unless_given)

    @property
    def storage(self) -> Storage:
        """The configured storage; with none, made on first use: a temporary database of this agent's own
        (`Storage.temporary`, removed when the process exits), which `aclose` closes."""
        if self._storage is None:
            self._storage = self._temporary_storage = Storage.temporary()
            for sub_agent in self.agents.values():
                if sub_agent._storage is None:
                    sub_agent._storage = self._storage
        return self._storage

    @property
    def model_client(self) -> openai.AsyncOpenAI:
        """The client given to the agent, else the process's shared one (reads OPENAI_API_KEY and
        OPENAI_BASE_URL); a shared one is not this agent's to close."""
        if self._model_client is None:
            return shared_client()
        return self._model_client

    async def aclose(self) -> None:
        """Close what the agent made itself: the temporary database it made when it was given no storage.
        A model client given to it is the giver's, the shared one the process's, storage given to it the
        caller's: those stay open."""
        if self._temporary_storage is not None:
            await self._temporary_storage.close()

    # --- what the loop works with ----------------------------------------------------------
    def _deps(self) -> RunDeps:
        """The narrow parts of this agent a `RunDriver` works with."""
        return RunDeps(
            agent_id=self.id,
            owner=self.owner,
            model=self.model,
            instructions=self.instructions,
            model_client=self.model_client,
            runs=self.storage.runs,
            policies=self.storage.policies,
            grants=self.storage.grants,
            memory=self.memory,
            find_tool=self._find_tool,
            tool_names=self._tool_names,
            tool_specs=self._tool_specs,
            sub_agent_for=self._sub_agent_for,
            hooks=self.hooks,
            forget_request_rule=self._starts.forget_request_rule,
            hold=self._live.hold,
            at_work=self._at_work,
            redact=self._redact,
            view_of=lambda run, call, policy: view_of(self, run, call, policy),
        )

    def _find_tool(self, name: str) -> Tool | None:
        return self.tools.get(name) or self._sub_agent_tools.get(name)

    def _tool_names(self) -> list[str]:
        return [*self.tools, *self._sub_agent_tools]

    def _tool_specs(self) -> list[dict[str, Any]]:
        return [
            {"type": "function", "function": {"name": t.id, "description": t.description, "parameters": t.parameters()}}
            for t in [*self.tools.values(), *self._sub_agent_tools.values()]
        ]

    def _sub_agent_for(self, tool_name: str) -> SubAgent | None:
        if tool_name not in self._sub_agent_tools:
            return None
        agent = self.agents[tool_name.removeprefix(SUB_AGENT_PREFIX)]
        return SubAgent(
            id=agent.id, start=agent._starts.start_child_run, decide=agent.decide, recover=agent._recovery.recover_run
        )

    # --- starting runs ----------------------------------------------------------------------
    async def stream(self, message: str | list[dict[str, Any]], **options: Any) -> AgentStream:
        """Start a run on `message` and return its stream.

        `message_id` (optional): the front end's id of the message in the thread (a Slack message's ts). The
        run it starts, or the waiting call it answers, takes it once: a second taker (a replica that stalled
        past its lease while another answered the message) gets `MessageTakenError` and nothing is stored."""
        return await self._starts.stream(message, **options)

    async def generate(self, message: str | list[dict[str, Any]], **options: Any) -> AgentOutput:
        with whole_replies():
            stream = await self.stream(message, **options)
        return await stream.result()

    # --- decisions --------------------------------------------------------------------------
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
        """Decide one waiting call (`Approve`, `Decline`, `Resume`) and go on with the run, asking no rule
        of who may (the caller is trusted; a front end asks `decide_as`). Exactly one caller wins a call;
        the others get `ToolCallNotSuspendedError`.

        `tool_call_id` None: the run's most recently suspended call. `decided_by`: who (a user id, as the
        front end names them). `via`: through what (`button`, `home`, `api`, `thread`...), for the audit
        trail. `user_messages`: the user's message that gave this answer in the thread (auto-resume),
        stored with the decision so the run goes on with it in its history (a lost decision stores nothing).
        """
        landed = await self._decide(
            run_id, tool_call_id, decision, decided_by=decided_by, via=via, user_messages=user_messages
        )
        return landed.stream

    async def decide_as(
        self,
        run_id: str,
        tool_call_id: str | None,
        decision: Decision,
        *,
        actor: str | None,
        via: str = "runtime",
        user_messages: Sequence[dict[str, Any]] = (),
        read: CallRead | None = None,
    ) -> DecisionResult:
        """Decide one waiting call for `actor`, if the rule lets them (`_authorize.authorize`): what
        happened, as one `DecisionResult` (decided, counted, refused, already decided, gone, invalid).
        Every front end decides through this; a refusal is audited `refused` with its reason. `read`: the
        run, call and policy as the caller just read them (`read_call`), not read again."""
        return await decide_as(
            self, run_id, tool_call_id, decision, actor=actor, via=via, user_messages=user_messages, read=read
        )

    async def read_call(self, run_id: str, tool_call_id: str) -> CallRead | None:
        """This agent's run, one of its calls and its tool's policy, read in one statement, with the call's
        record (None: no such call), for a front end that looks at a call before it decides it (`read=`)."""
        return await read_call(self, run_id, tool_call_id)

    async def undo_as(self, run_id: str, tool_call_id: str, *, actor: str | None, via: str = "runtime") -> UndoResult:
        """Undo a call that ran, for `actor`, if its tool declares how (`undo=`), its policy's window is open
        and the rule lets them (whoever approved it, and admins): `Undone`, `UndoFailed`, or why not
        (`CannotUndo`, `Refused`, `Gone`). Exactly one caller, on any replica, undoes a call, once."""
        return await undo_as(self, run_id, tool_call_id, actor=actor, via=via)

    async def undo_offer(self, run_id: str, tool_call_id: str) -> tuple[ToolCallRecord, datetime] | None:
        """The call's record and until when it may be undone, if an Undo may be offered now (it ran, nobody
        undid it, its tool declares how, its policy's window is open); None otherwise."""
        return await undo_offer(self, run_id, tool_call_id)

    async def check(
        self,
        run_id: str,
        tool_call_id: str,
        action: Action,
        *,
        actor: str | None,
        via: str = "runtime",
        audit: bool = True,
        read: CallRead | None = None,
    ) -> Refused | None:
        """Whether `actor` may `action` the waiting call, before anything is decided (a form about to open, a
        view offering the action): None if so, else the refusal, audited unless `audit` is False. `read`: the
        run, call and policy as the caller just read them (`read_call`)."""
        return await check_action(self, run_id, tool_call_id, action, actor=actor, via=via, audit=audit, read=read)

    async def waiting_call_view(self, run_id: str, tool_call_id: str) -> WaitingCallView | None:
        """The one view of a call that waits for a person (approval or answer), that every surface renders;
        None when no such call of this agent waits."""
        run, call, policy = await self.storage.runs.run_call_and_policy(run_id, tool_call_id)
        if run is None or call is None or policy is None or run.agent_id != self.id or call.state not in WAITING_STATES:
            return None
        return view_of(self, run, call, policy)

    async def actions_for(
        self, view: WaitingCallView, viewer: str | None, *, delegations: DelegationReader | None = None
    ) -> frozenset[Action]:
        """What the rule lets `viewer` do to the call of `view`: the actions a surface offers them
        (`delegations`: where to look up who holds whose approvals, when not the storage)."""
        return await actions_for(view, viewer, self.directory, delegations or self.storage.delegations)

    async def _decide(
        self,
        run_id: str,
        tool_call_id: str | None,
        decision: Decision,
        *,
        decided_by: str | None = None,
        decided_for: str | None = None,
        via: str = "runtime",
        user_messages: Sequence[dict[str, Any]] = (),
        read: tuple[StoredRun, StoredToolCall, ToolPolicy] | None = None,
    ) -> Landed:
        """`decide`, saying what landed (`_decisions.Decisions`); `read`: the run, the call and its tool's
        policy as the caller just read them."""
        return await self._decisions.decide(
            run_id,
            tool_call_id,
            decision,
            decided_by=decided_by,
            decided_for=decided_for,
            via=via,
            user_messages=user_messages,
            read=read,
        )

    # --- live questions ---------------------------------------------------------------------
    # --- expiry -----------------------------------------------------------------------------
    async def expire_waiting_approvals(self) -> list[tuple[str, str]]:
        """Decline as expired every call of this agent that waited for approval longer than its tool
        policy's expiry; returns the (run id, tool call id) of the calls this process expired
        (`_sweeps.Sweeps`).

        Safe to call from several processes at once: each call is expired once (the decision's
        conditional UPDATE picks the winner). The model is told, and each run goes on in a stream
        handed to the `on_background_stream` hook.
        """
        return await self._sweeps.expire_waiting_approvals()

    async def escalate_waiting_approvals(self) -> list[tuple[str, str]]:
        """Bring every call of this agent still waiting for approval longer than its policy's
        `escalate_after` (and not yet escalated in this wait) to the policy's `escalate_to`, through the
        front end's `on_escalation` hook; returns the (run id, tool call id) of the calls it escalated
        (`_sweeps.Sweeps`).

        Safe to call from several processes at once: one conditional UPDATE (`tool_calls.escalated_at`)
        lets exactly one escalate each wait. A delivery that fails for now is given back (a later sweep
        tries again); one that cannot be delivered is audited `escalation_failed`. Without the hook
        nothing is claimed. Who may approve does not change, and the expiry still applies."""
        return await self._sweeps.escalate_waiting_approvals()

    # --- recovery ---------------------------------------------------------------------------
    def beat_within(self, stale_after: float) -> None:
        """Refresh leases often enough that no replica calling a run stale after `stale_after` seconds
        takes over one this process still works on (three beats within that time), sub-agents too."""
        interval = float(self.default_options["heartbeat_interval"])
        self.default_options["heartbeat_interval"] = min(interval, stale_after / 3)
        for agent in self.agents.values():
            agent.beat_within(stale_after)

    async def recover_stale_runs(self, stale_after: float = 30.0) -> list[str]:
        """Take over this agent's runs whose process stopped (their lease is older than `stale_after`
        seconds) and go on with them; returns the ids of the runs taken over (`_recovery.Recovery`).

        Calls decided but not started are carried out once; calls whose tool started but stored no
        result become interrupted approvals (never re-run without a human); runs stopped between
        steps continue. Safe to call from several processes at once: each run is taken over once.
        The work goes on after this returns, in streams handed to the `on_background_stream` hook.
        """
        return await self._recovery.recover_stale_runs(stale_after)

    def _works_on(self, run_id: str) -> bool:
        """Whether this process works on the run now: a driver of it runs here, or it holds its live question."""
        return self._at_work[run_id] > 0 or self._live.holds_run(run_id)

    def _driver_for(self, run: StoredRun) -> RunDriver:
        """A driver that goes on with a stored run, with the options storage holds for it."""
        return RunDriver(self._deps(), run, self._starts.stored_options(run))

    # --- discovery --------------------------------------------------------------------------
    async def get_tool_call(self, run_id: str, tool_call_id: str) -> ToolCallRecord | None:
        """The record of one call of this agent's run (state, what a human decides about, the decision),
        or None when there is no such call (`_lookups.Lookups`)."""
        return await self._lookups.get_tool_call(run_id, tool_call_id)

    async def list_tool_calls(self, run_id: str) -> list[ToolCallRecord]:
        """The records of every call of one of this agent's runs, in the order the model made them ([] when
        there is no such run)."""
        return await self._lookups.list_tool_calls(run_id)

    async def get_run(self, run_id: str) -> RunRecord | None:
        """The record of one of this agent's runs, or None when there is no such run."""
        return await self._lookups.get_run(run_id)

    async def stored_answer(self, run_id: str) -> str:
        """The final answer run `run_id` stored (its last assistant text; empty if none)."""
        return await self._lookups.stored_answer(run_id)

    def _record_of(self, row: StoredToolCall) -> ToolCallRecord:
        return self._lookups.record_of(row)

    async def list_suspended_runs(
        self, *, thread_id: str | None = None, resource_id: str | None = None, page: int = 0, per_page: int = 50
    ) -> SuspendedRunsPage:
        """This agent's runs that wait for a decision or for data, newest first."""
        return await self._lookups.list_suspended_runs(
            thread_id=thread_id, resource_id=resource_id, page=page, per_page=per_page
        )


async def _run_by_the_loop(_input: Any, _ctx: Any) -> Any:
    raise RuntimeError("sub-agent tools are run by the loop itself")


__all__ = ["Agent"]
