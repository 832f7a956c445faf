"""The bot's Prometheus metrics, and the `/metrics` route that serves them.

The runtime and the adapters record what happens with one-line calls (`tool_run(...)`,
`decided(...)`); what the database already knows (the calls waiting for a human) is counted when
Prometheus scrapes, so it is right across restarts and replicas. This module imports neither Slack nor
the runtime: both may import it.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily

if TYPE_CHECKING:
    from aiohttp import web

    from memory import Storage

METRICS_PATH = "/metrics"

_WAIT_BUCKETS = (5, 15, 30, 60, 120, 300, 600, 1800, 3600, 4 * 3600, 12 * 3600, 24 * 3600, 7 * 24 * 3600)
_MODEL_BUCKETS = (0.25, 0.5, 1, 2, 4, 8, 15, 30, 60, 120)

DECISIONS = Counter("bot_decisions_total", "Decisions on waiting tool calls, by outcome.", ["outcome"])
"""outcome: `approved`, `declined`, `answered` (through the form or in the thread) or `expired`; counted
once per call, when its message in Slack closes."""
REFUSED_CLICKS = Counter(
    "bot_refused_clicks_total", "Clicks and submissions that decided nothing, by reason.", ["reason"]
)
"""reason: `already_decided`, `unknown` (not a message of a waiting call) or `not_allowed`."""
DECISION_WAIT = Histogram(
    "bot_decision_wait_seconds",
    "Time from the request for a decision (the approval or question message) to the decision.",
    ["kind"],
    buckets=_WAIT_BUCKETS,
)
TIME_TO_DECISION = Histogram(
    "bot_time_to_decision_seconds",
    "Time a tool call waited for a person, from its request to the decision that settled it, by tool and outcome.",
    ["tool", "outcome"],
    buckets=(1, 2, 5, 10, 30, 60, 120, 300, 600, 1800, 3600, 4 * 3600, 24 * 3600, 7 * 24 * 3600),
)
"""outcome: `approved`, `declined`, `expired`, `answered` (a question), `cancelled`; observed by the process
that carries the decision out, once per call (a sub-agent's call, not the supervisor's that passes it down).
The low buckets show the quick approvals (`BOT_QUICK_APPROVAL_SECONDS`, 5 s by default)."""
MODEL_CALLS = Histogram(
    "bot_model_call_seconds", "Duration of model calls that answered.", ["kind"], buckets=_MODEL_BUCKETS
)
"""kind: `step` (a streamed step of a run) or `structured` (auto-resume's extraction)."""
MODEL_ERRORS = Counter("bot_model_call_errors_total", "Model calls that failed, by kind and error.", ["kind", "error"])
TOOL_RUNS = Counter("bot_tool_runs_total", "Tool executions, by tool and outcome.", ["tool", "outcome"])
"""outcome: `ok`, `error` (raised, or output that does not fit) or `suspended` (asked a question)."""
FEEDBACK = Counter("bot_feedback_total", "People's first ratings of the agent's answers, by rating.", ["rating"])
"""rating: `up` or `down`; once per person and answer (a second click is `bot_feedback_changed_total`).
The ratings standing now are `bot_feedback_total{rating="up"}` + changed to up - changed to down; per tool
they are in the admin App Home."""
FEEDBACK_CHANGED = Counter(
    "bot_feedback_changed_total", "Ratings changed by the person who gave them, by the new rating.", ["rating"]
)
SLACK_API_ERRORS = Counter(
    "bot_slack_api_errors_total", "Slack Web API attempts that failed, by method and error.", ["method", "error"]
)
"""error: Slack's error code (`ratelimited`, `channel_not_found`...), `http_<status>`, or the connection error's type."""


def decided(outcome: str, *, kind: str, waiting_since: datetime | None = None) -> None:
    """A waiting call was decided (`approved`, `declined`, `answered`) after waiting since `waiting_since`."""
    DECISIONS.labels(outcome).inc()
    if waiting_since is not None:
        since = waiting_since if waiting_since.tzinfo else waiting_since.replace(tzinfo=UTC)
        DECISION_WAIT.labels(kind).observe(max(0.0, (datetime.now(UTC) - since).total_seconds()))


def waited(tool: str, outcome: str, *, since: datetime | None, until: datetime | None) -> None:
    """A call of `tool` waited for a person from `since` to `until` (the storage's clock) and was settled
    with `outcome`."""
    if since is not None and until is not None:
        TIME_TO_DECISION.labels(tool, outcome).observe(max(0.0, (until - since).total_seconds()))


def refused(reason: str) -> None:
    REFUSED_CLICKS.labels(reason).inc()


def clock() -> float:
    """A start time for `model_call_done`."""
    return time.monotonic()


def model_call_done(kind: str, started: float) -> None:
    MODEL_CALLS.labels(kind).observe(time.monotonic() - started)


def model_call_failed(kind: str, error: BaseException) -> None:
    MODEL_ERRORS.labels(kind, type(error).__name__).inc()


def tool_run(tool: str, outcome: str) -> None:
    TOOL_RUNS.labels(tool, outcome).inc()


def feedback(rating: str, *, changed: bool = False) -> None:
    """A person rated an answer `rating` (`changed`: they had rated it the other way before)."""
    (FEEDBACK_CHANGED if changed else FEEDBACK).labels(rating).inc()


def slack_api_error(method: str, error: str) -> None:
    SLACK_API_ERRORS.labels(method, error).inc()


class WaitingCalls:
    """A collector of the calls waiting for a human, counted in the database at scrape time."""

    def __init__(self, approvals: int, questions: int):
        self.approvals = approvals
        self.questions = questions

    @classmethod
    async def count(cls, storage: Storage) -> WaitingCalls:
        from sqlalchemy import func, select

        from memory.states import WAITING_STATES, ToolCallState
        from memory.tables import RunRow, ToolCallRow

        # top-level runs only: a sub-agent's waiting call is also its supervisor's
        query = (
            select(ToolCallRow.state, func.count())
            .join(RunRow, RunRow.id == ToolCallRow.run_id)
            .where(RunRow.parent_run_id.is_(None))
            .where(ToolCallRow.state.in_(sorted(WAITING_STATES)))
            .group_by(ToolCallRow.state)
        )
        async with storage.read_session() as session:
            counts = {str(state): number for state, number in (await session.execute(query)).all()}
        return cls(counts.get(ToolCallState.AWAITING_APPROVAL, 0), counts.get(ToolCallState.SUSPENDED, 0))

    def collect(self) -> Iterator[GaugeMetricFamily]:
        yield GaugeMetricFamily("bot_approvals_waiting", "Tool calls waiting for Approve or Decline.", self.approvals)
        yield GaugeMetricFamily("bot_questions_waiting", "Tool calls waiting for an answer.", self.questions)


async def render(storage: Storage | None) -> bytes:
    """The text a scrape gets: the process's metrics, and the waiting calls counted in `storage`."""
    output = generate_latest(REGISTRY)
    if storage is not None:
        waiting = CollectorRegistry()
        waiting.register(await WaitingCalls.count(storage))
        output += generate_latest(waiting)
    return output


def add_metrics_routes(web_app: web.Application, storage: Storage | None) -> None:
    """Serve `GET /metrics` (Prometheus text format) on `web_app`."""
    from aiohttp import web

    async def metrics(_request: web.Request) -> web.Response:
        response = web.Response(body=await render(storage))
        response.headers["Content-Type"] = CONTENT_TYPE_LATEST
        return response

    web_app.router.add_get(METRICS_PATH, metrics)
