"""The runtime's errors: one base class, one module that lists them, every one importable from `bot.agent`."""

from __future__ import annotations

import inspect

import bot.agent
import memory
from bot.agent import exceptions


def public_errors() -> list[type[BaseException]]:
    return [
        value
        for name, value in vars(exceptions).items()
        if inspect.isclass(value) and issubclass(value, BaseException) and not name.startswith("_")
    ]


def test_every_error_of_the_runtime_is_an_agent_error_importable_from_bot_agent():
    errors = public_errors()
    contract = {
        "SnapshotNotFoundError",
        "ToolCallNotSuspendedError",
        "AmbiguousSuspendedRunsError",
        "NoSuspendedRunError",
        "ResumeDataInvalidError",
    }
    assert contract | {"ThreadOwnerError", "PolicyError", "ModelError", "SubAgentNotFoundError"} <= {
        e.__name__ for e in errors
    }
    for error in errors:
        assert issubclass(error, bot.agent.AgentError), error
        assert getattr(bot.agent, error.__name__) is error
    assert sorted(exceptions.__all__) == sorted(e.__name__ for e in errors)


def test_storage_raises_the_same_errors_the_runtime_exports():
    assert memory.ThreadOwnerError is bot.agent.ThreadOwnerError
    assert memory.PolicyError is bot.agent.PolicyError
    assert issubclass(bot.agent.ThreadOwnerError, PermissionError)
