"""`--agent module:attr` names an Agent (or a function that builds one)."""

from __future__ import annotations

import pytest

from bot.agent import Agent
from bot.cli import AgentNotFoundError, build_parser, load_agent

agent = Agent(id="named-agent", model="openai/test-model")
not_an_agent = 42


def make_agent() -> Agent:
    return Agent(id="built-agent", model="openai/test-model")


def test_an_agent_attribute_is_used_as_is():
    assert load_agent(f"{__name__}:agent") is agent


def test_a_factory_is_called():
    assert load_agent(f"{__name__}:make_agent").id == "built-agent"


@pytest.mark.parametrize(
    ("spec", "says"),
    [
        ("no_colon", "expected module:attribute"),
        ("no.such.module:agent", "cannot import"),
        (f"{__name__}:not_an_agent", "is not an Agent"),
        (f"{__name__}:missing", "is not an Agent"),
    ],
)
def test_a_bad_spec_says_what_is_wrong(spec, says):
    with pytest.raises(AgentNotFoundError, match=says):
        load_agent(spec)


def test_command_line_options():
    options = build_parser().parse_args(["serve", "--agent", "pkg:agent", "--port", "8080"])
    assert (options.command, options.agent, options.port) == ("serve", "pkg:agent", 8080)
    assert build_parser().parse_args(["serve"]).port == 3000
    assert build_parser().parse_args(["socket"]).agent is None
