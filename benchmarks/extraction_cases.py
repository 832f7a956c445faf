"""The labelled cases of the extraction benchmark: a question a tool asked with `suspend()`, the user's
next message in the thread, and what a careful reader takes from it: the resume data of the call it
answers, or nothing (the call must keep waiting).

`expect` is None when the message must not resume anything; else `(tool, data)`, where a value may be a
tuple of acceptable alternatives ("New York" or "New York City"). Strings compare without case.
Cases marked `held_out` were not looked at while the extraction was tuned; they are reported apart.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Waiting:
    """A tool call parked by `suspend()`."""

    tool: str
    asked: Any
    resume_schema: dict[str, Any]
    args: dict[str, Any]


@dataclass(frozen=True)
class Case:
    id: str
    category: str
    waiting: tuple[Waiting, ...]
    message: str
    expect: tuple[str, dict[str, Any]] | None
    held_out: bool = False


def _obj(**properties: Any) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": list(properties), "additionalProperties": False}


BOOL, STR, INT, NUM = {"type": "boolean"}, {"type": "string"}, {"type": "integer"}, {"type": "number"}

DEPLOY = Waiting("deploy", {"question": "Deploy build 142 to production now?"}, _obj(confirmed=BOOL), {"build": 142})
DROP = Waiting(
    "drop-table", {"question": "This drops the table orders for good. Are you sure?"}, _obj(confirmed=BOOL), {}
)
MAIL = Waiting("send-newsletter", {"question": "Send the newsletter to all 240 customers?"}, _obj(send=BOOL), {})
WEATHER = Waiting("get-weather", {"question": "Which city?"}, _obj(city=STR), {"when": "tomorrow"})
INVITE = Waiting("send-invite", {"question": "Who should I invite?"}, _obj(name=STR), {"event": "launch party"})
TRANSFER = Waiting("transfer", {"question": "How much should I transfer, in dollars?"}, _obj(amount=NUM), {})
TRIP = Waiting("plan-trip", {"question": "How many days?"}, _obj(days=INT), {"to": "Japan"})
VM = Waiting("create-vm", {"question": "How much memory, in GB?"}, _obj(memory_gb=INT), {"name": "ci-runner"})
BUDGET = Waiting("set-budget", {"question": "What is the monthly budget in USD?"}, _obj(amount_usd=NUM), {})
TICKET = Waiting(
    "open-ticket",
    {"question": "What priority: low, medium or high?"},
    _obj(priority={"type": "string", "enum": ["low", "medium", "high"]}),
    {"title": "Login page is slow"},
)
TARGET = Waiting(
    "deploy-service",
    {"question": "Which environment?"},
    _obj(environment={"type": "string", "enum": ["staging", "production"]}),
    {"service": "billing"},
)
COFFEE = Waiting(
    "order-coffee",
    {"question": "What size?"},
    _obj(size={"type": "string", "enum": ["small", "medium", "large"]}),
    {"drink": "latte"},
)
TABLE = Waiting("book-table", {"question": "For which day, and for how many people?"}, _obj(day=STR, people=INT), {})
FLIGHT = Waiting(
    "search-flights", {"question": "From which city to which city?"}, _obj(origin=STR, destination=STR), {}
)
MEETING = Waiting("schedule-meeting", {"question": "Which day, and how many minutes?"}, _obj(day=STR, minutes=INT), {})
DATE = Waiting("reserve-room", {"question": "Which date?"}, _obj(date=STR), {"room": "Aurora"})


def _cases() -> list[Case]:
    cases: list[Case] = []

    def add(category: str, waiting, message: str, expect, *, held_out: bool = False) -> None:
        waiting = waiting if isinstance(waiting, tuple) else (waiting,)
        cases.append(Case(f"{category}-{len(cases) + 1:02d}", category, waiting, message, expect, held_out))

    # confirmations: yes in many phrasings
    for message, held in [
        ("yes", False),
        ("Yes please", False),
        ("go ahead", False),
        ("sure, do it", False),
        ("yep", True),
        ("ok, deploy it", False),
        ("confirmed", True),
        ("absolutely, ship it", False),
    ]:
        add("confirm-yes", DEPLOY, message, ("deploy", {"confirmed": True}), held_out=held)
    add("confirm-yes", DROP, "yes, I'm sure", ("drop-table", {"confirmed": True}))
    add("confirm-yes", MAIL, "yes, send it", ("send-newsletter", {"send": True}), held_out=True)

    # confirmations: no, negations, not yet
    for message, held in [
        ("no", False),
        ("No.", False),
        ("nope", False),
        ("don't", False),
        ("not yet", False),
        ("no, wait until tomorrow", True),
        ("cancel", False),
        ("stop, don't deploy", False),
        ("absolutely not", True),
        ("I'd rather not", False),
    ]:
        add("confirm-no", DEPLOY, message, ("deploy", {"confirmed": False}), held_out=held)
    add("confirm-no", DROP, "no, keep it", ("drop-table", {"confirmed": False}))
    add("confirm-no", MAIL, "do not send it", ("send-newsletter", {"send": False}), held_out=True)

    # hedges: no yes and no no given, so the call keeps waiting
    for message, held in [
        ("maybe", False),
        ("I'm not sure", False),
        ("let me check with the team first", False),
        ("hmm", True),
        ("it depends on the tests", False),
    ]:
        add("hedge", DEPLOY, message, None, held_out=held)

    # cities and names
    add("city-name", WEATHER, "Paris", ("get-weather", {"city": "Paris"}))
    add("city-name", WEATHER, "paris please", ("get-weather", {"city": "Paris"}))
    add("city-name", WEATHER, "In Lyon.", ("get-weather", {"city": "Lyon"}))
    add("city-name", WEATHER, "São Paulo", ("get-weather", {"city": "São Paulo"}), held_out=True)
    add("city-name", WEATHER, "New York City", ("get-weather", {"city": ("New York City", "New York")}))
    add("city-name", INVITE, "Invite Maria Lopez", ("send-invite", {"name": "Maria Lopez"}))
    add("city-name", INVITE, "bob", ("send-invite", {"name": "Bob"}))
    add("city-name", INVITE, "Ahmed, please", ("send-invite", {"name": "Ahmed"}), held_out=True)

    # numbers with units
    add("number", TRANSFER, "20 dollars", ("transfer", {"amount": 20}))
    add("number", TRANSFER, "twenty dollars", ("transfer", {"amount": 20}))
    add("number", TRANSFER, "$1,500", ("transfer", {"amount": 1500}))
    add("number", BUDGET, "5k", ("set-budget", {"amount_usd": 5000}))
    add("number", TRIP, "3 days", ("plan-trip", {"days": 3}))
    add("number", TRIP, "five", ("plan-trip", {"days": 5}), held_out=True)
    add("number", VM, "16 GB", ("create-vm", {"memory_gb": 16}))
    add("number", TRANSFER, "let's do 2.5", ("transfer", {"amount": 2.5}), held_out=True)

    # enums
    add("enum", TICKET, "high", ("open-ticket", {"priority": "high"}))
    add("enum", TICKET, "High priority please", ("open-ticket", {"priority": "high"}))
    add("enum", TICKET, "medium is fine", ("open-ticket", {"priority": "medium"}), held_out=True)
    add("enum", TARGET, "prod", ("deploy-service", {"environment": "production"}))
    add("enum", TARGET, "staging", ("deploy-service", {"environment": "staging"}))
    add("enum", COFFEE, "Large", ("order-coffee", {"size": "large"}))
    add("enum", COFFEE, "a small one", ("order-coffee", {"size": "small"}), held_out=True)

    # several fields at once
    add("multi-field", TABLE, "Friday, 4 people", ("book-table", {"day": "Friday", "people": 4}))
    add("multi-field", TABLE, "saturday for two", ("book-table", {"day": "Saturday", "people": 2}))
    add(
        "multi-field",
        FLIGHT,
        "From Berlin to Madrid",
        ("search-flights", {"origin": "Berlin", "destination": "Madrid"}),
    )
    add("multi-field", MEETING, "Monday, 30 minutes", ("schedule-meeting", {"day": "Monday", "minutes": 30}))
    add(
        "multi-field",
        MEETING,
        "Thursday for 45 minutes",
        ("schedule-meeting", {"day": "Thursday", "minutes": 45}),
        held_out=True,
    )
    add(
        "multi-field",
        FLIGHT,
        "Oslo to Rome",
        ("search-flights", {"origin": "Oslo", "destination": "Rome"}),
        held_out=True,
    )

    # answers spread over a correction
    add("correction", WEATHER, "Paris, no wait, Lyon", ("get-weather", {"city": "Lyon"}))
    add("correction", TRIP, "3 days, actually make it 5", ("plan-trip", {"days": 5}))
    add("correction", DEPLOY, "yes - no wait, don't", ("deploy", {"confirmed": False}))
    add("correction", TICKET, "high, sorry, I mean medium", ("open-ticket", {"priority": "medium"}))
    add("correction", WEATHER, "Oslo. Sorry, Bergen", ("get-weather", {"city": "Bergen"}), held_out=True)
    add("correction", TRANSFER, "100, no, 50 dollars", ("transfer", {"amount": 50}), held_out=True)

    # unrelated messages: nothing resumes
    add("unrelated", WEATHER, "hello", None)
    add("unrelated", WEATHER, "thanks!", None)
    add("unrelated", DEPLOY, "what's for lunch today?", None)
    add("unrelated", TICKET, "tell me a joke", None)
    add("unrelated", DEPLOY, "can you also list my open tickets?", None)
    add("unrelated", INVITE, "I'll be in a meeting for an hour", None, held_out=True)
    add("unrelated", TRANSFER, "how's it going?", None, held_out=True)

    # questions back: nothing resumes
    add("question-back", WEATHER, "which cities do you support?", None)
    add("question-back", TARGET, "what's the difference between staging and production?", None)
    add("question-back", DEPLOY, "is it safe to deploy now?", None)
    add("question-back", TRANSFER, "how much is in the account?", None)
    add("question-back", COFFEE, "what sizes do you have?", None, held_out=True)
    add("question-back", INVITE, "who is on the list already?", None, held_out=True)

    # two tools waiting in one thread
    add("two-waiting", (WEATHER, DATE), "Rome", ("get-weather", {"city": "Rome"}))
    add("two-waiting", (WEATHER, DATE), "Friday works", ("reserve-room", {"date": "Friday"}))
    add("two-waiting", (WEATHER, DATE), "hello", None)
    add("two-waiting", (DEPLOY, WEATHER), "no", ("deploy", {"confirmed": False}))
    add("two-waiting", (DEPLOY, WEATHER), "Berlin", ("get-weather", {"city": "Berlin"}))
    add("two-waiting", (DEPLOY, TICKET), "yes, go ahead", ("deploy", {"confirmed": True}), held_out=True)
    add("two-waiting", (TICKET, WEATHER), "low", ("open-ticket", {"priority": "low"}), held_out=True)
    return cases


CASES: list[Case] = _cases()
CATEGORIES: list[str] = list(dict.fromkeys(case.category for case in CASES))

# A dozen cases across the categories, for the test that runs against a real local model.
SMOKE: list[str] = [
    "confirm-yes-01",
    "confirm-no-11",
    "confirm-no-14",
    "confirm-no-15",
    "hedge-24",
    "city-name-28",
    "number-36",
    "enum-47",
    "correction-57",
    "unrelated-63",
    "question-back-72",
    "two-waiting-79",
]
