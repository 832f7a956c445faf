"""What came of an attempt to act on a waiting call (`Agent.decide_as`): one typed value a front end
renders, so that none maps the runtime's exceptions or reads the call again to learn what happened."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ._authorize import PLAIN, Naming, Refusal, RefusalReason

if TYPE_CHECKING:
    from memory import Grant

    from ._stream import AgentStream
    from .types import ToolCallRecord


@dataclass(frozen=True, kw_only=True)
class Decided:
    """The decision landed: `record` is the call as decided, `stream` the run going on (to relay),
    `grant` the standing grant it gave (if one was asked for), `approvals` everyone who approved it
    (four eyes: all of them, in order; else the one who decided)."""

    record: ToolCallRecord
    stream: AgentStream
    grant: Grant | None = None
    approvals: tuple[str, ...] = ()


@dataclass(frozen=True, kw_only=True)
class Counted:
    """Four eyes: the approval counted, and the call waits for more (`approvals` so far, of `needed`)."""

    record: ToolCallRecord
    approvals: tuple[str, ...]
    needed: int


@dataclass(frozen=True, kw_only=True)
class Refused:
    """Nothing happened: the rule refused the actor (or the call cannot be reached from here); audited
    `refused` with its reason."""

    refusal: Refusal
    record: ToolCallRecord | None = None

    @property
    def reason(self) -> RefusalReason:
        return self.refusal.reason

    @property
    def may_instead(self) -> tuple[str, ...]:
        """Who may do it instead (people and groups; empty: anyone in the conversation)."""
        return self.refusal.may_instead

    def text(self, naming: Naming = PLAIN) -> str:
        return self.refusal.text(naming)


@dataclass(frozen=True, kw_only=True)
class AlreadyDecided:
    """The call no longer waits for this kind of decision (another decision won, it expired, or it waits
    for the other kind): `record` says how it stands."""

    record: ToolCallRecord


@dataclass(frozen=True, kw_only=True)
class Gone:
    """No such run or call of this agent."""

    run_id: str
    tool_call_id: str | None


@dataclass(frozen=True, kw_only=True)
class Invalid:
    """The decision's data does not fit (resume data against `resume_schema`, edited arguments against the
    input schema): nothing was decided, the call still waits. `message` says what is wrong."""

    message: str
    errors: tuple[object, ...] = ()


DecisionResult = Decided | Counted | Refused | AlreadyDecided | Gone | Invalid

__all__ = ["AlreadyDecided", "Counted", "Decided", "DecisionResult", "Gone", "Invalid", "Refused"]
