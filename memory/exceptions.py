"""The root of the runtime's errors, and the errors storage itself raises on purpose.

`AgentError` is defined here, in the lowest layer, so that storage-level errors can be ones too:
`memory` imports nothing from `bot`, while `bot.agent` imports `memory`. Every error the runtime
raises on purpose is listed in `bot.agent.exceptions` (which re-exports the ones defined here) and is an
`AgentError`; catch that one name to catch them all.
"""

from __future__ import annotations


class AgentError(Exception):
    """Base class of the agent runtime's own errors (see `bot.agent.exceptions` for all of them)."""


class ThreadOwnerError(AgentError, PermissionError):
    """A thread was used with a resource_id other than the one that owns it."""


class Worded(Exception):
    """An error whose one line a front end may say in its reader's language: `template` is the line in English
    with named placeholders, `values` what fills them (the Slack adapter looks `template` up in its catalogs);
    `str(error)` is the English line."""

    def __init__(self, template: str, /, **values: object) -> None:
        self.template = template
        self.values = values
        super().__init__(template.format(**values) if values else template)


class PolicyError(AgentError, Worded, ValueError):
    """A policy change that cannot be stored; the message says what is wrong in one line."""


class DelegationError(AgentError, ValueError):
    """A delegation that cannot be made or ended (to oneself, an end time out of bounds, one already in
    force, not the delegator's to end); the message says what is wrong in one line, `kind` which way:
    `invalid`, `forbidden` (not this person's to make or end), `unknown` (no such delegation) or
    `conflict` (one already in force, or already ended)."""

    def __init__(self, message: str, *, kind: str = "invalid"):
        super().__init__(message)
        self.kind = kind


class RunTakenOverError(AgentError):
    """This process asked the model for a step of a run that another process took over meanwhile (this one
    stalled past the run's lease: a paused VM, SIGSTOP): nothing of its step was stored; the run goes on there."""


class MessageTakenError(AgentError):
    """A thread's message was already taken by another run or decision: nothing of this try was stored.

    A message (`message_id` on `Agent.stream`) starts one run or answers one waiting call, once. A second
    taker is a process that stalled past its lease while another answered the same message (a paused VM,
    SIGSTOP), or a delivery of the message handled twice: it says and stores nothing, the first taker's
    answer stands."""

    def __init__(self, thread_id: str | None, message_id: str):
        self.thread_id = thread_id
        self.message_id = message_id
        super().__init__(f"message {message_id} of thread {thread_id} was already taken by another run or decision")


class GrantNotAllowedError(AgentError, PermissionError):
    """An approval that asked for a standing grant the tool's policy does not allow (no `grant_seconds`,
    several approvals required, a longer grant than the policy's, no approver named, a sub-agent's call,
    a run without a thread), or whose policy changed while it was being decided. Nothing changed; the
    call still waits."""

    def __init__(self, tool_name: str, why: str):
        self.tool_name = tool_name
        self.why = why
        super().__init__(f"no standing grant for {tool_name}: {why}")


class DatabaseAwayError(AgentError):
    """The database could not be reached for a moment (a restart, a failover, a connection dropped), and
    stayed away longer than `Storage.reconnect_for`: nothing of the failed transaction was stored. Not a
    failure of the work itself; what it was doing can be done again once the database is back."""


class CommitOutcomeUnknownError(DatabaseAwayError):
    """The connection dropped while a transaction was being committed: it may or may not be stored. Only
    the one who wrote it can tell, by reading what it wrote (a run's work is then left to recovery)."""


__all__ = [
    "AgentError",
    "CommitOutcomeUnknownError",
    "DatabaseAwayError",
    "DelegationError",
    "GrantNotAllowedError",
    "MessageTakenError",
    "PolicyError",
    "RunTakenOverError",
    "ThreadOwnerError",
]
