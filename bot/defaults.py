"""Every default value of the bot, in one place; settings, the runtime and the adapters import them.

The database URL is `Storage`'s own default, defined in `memory.defaults` (which cannot import `bot`)
and re-exported here.
"""

from memory.defaults import DEFAULT_DATABASE_URL

DEFAULT_MODEL = "openai/gpt-5-mini"
"""`provider/model` of an `Agent` built without `model=`, and of the demo agent (`BOT_MODEL`)."""

DEFAULT_SLACK_API_URL = "https://slack.com/api/"
"""Base URL of Slack's Web API (`SLACK_API_URL`)."""

DEFAULT_MAX_CONCURRENT_TURNS = 8
"""Turns one replica works on at once (`BOT_MAX_CONCURRENT_TURNS`); a turn waiting for the model or a
tool holds none. One event loop uses one core: a few turns keep it busy while others wait on the
database or Slack, and few enough leave the acks of a burst their share of the loop."""

DEFAULT_MAX_MODEL_REQUESTS = 256
"""Model requests one replica has in flight at once (`BOT_MAX_MODEL_REQUESTS`). One replica's CPU answers
about 100 plain turns a second (300 mentions at once in about 3 s with a model that answers at once,
`benchmarks/ack_latency.py`): with answers of 2 s that is some 200 requests in flight, and a lower bound
would make a burst wait for the gate while the CPU idles (at 32, 300 mentions with a 1 s model took 11.6 s
against 2.9 s). A hosted model's rate limit is kept by its 429s: one pauses every request of the replica
for its Retry-After, and the request is sent again without an error for the user."""

DEFAULT_DATABASE_POOL_SIZE = 10
"""Database connections one replica keeps open (`BOT_DATABASE_POOL_SIZE`)."""

DEFAULT_DATABASE_MAX_OVERFLOW = 5
"""Connections one replica may open beyond the pool at a peak (`BOT_DATABASE_MAX_OVERFLOW`): with the
pool, 15 per replica, well within PostgreSQL's default 100 for a few replicas."""

MCP_CALL_TIMEOUT = 60.0
"""Seconds one MCP tool call may take before the model gets a tool error and the server is restarted
(a server's `"timeout"`); the time a human takes to answer an elicitation is not counted."""

MCP_START_TIMEOUT = 30.0
"""Seconds an MCP server has to start and list its tools (a server's `"startTimeout"`)."""

MCP_MAX_SESSIONS = 10
"""Sessions the bot opens at most to one MCP server (a server's `"maxSessions"`; over stdio each is a process
of the server). A call holds one alone while it runs, a question it waits on included (so the server's
question reaches that call and no other); a call that finds them all held waits for one, at most its
timeout. Ten lets ten people answer a server's questions at once without a process each for a crowd."""

MCP_SESSION_IDLE = 300.0
"""Seconds a session to an MCP server may stay unused before it is closed (a server's `"idleTimeout"`);
one session always stays open, so a lone call never waits for a server to start."""

MCP_ELICITATION_WAIT = 3600.0
"""Seconds an MCP server's question (an elicitation) waits for an answer when its tool's policy sets no
expiry; then the server gets `cancel`."""

LIVE_QUESTION_POLL = 1.0
"""Seconds between the looks of the process that holds a live question (an MCP server's, whose call stays
open there) for an answer stored through another process, on SQLite; PostgreSQL tells it at once
(`LISTEN/NOTIFY`) and it still looks every `LIVE_QUESTION_POLL_NOTIFIED` seconds."""

LIVE_QUESTION_POLL_NOTIFIED = 5.0

DEFAULT_QUICK_APPROVAL_SECONDS = 5.0
"""`BOT_QUICK_APPROVAL_SECONDS`: an approval given within this many seconds of its request counts as quick
in the approval analytics (too quick to have read the arguments, perhaps): reading a tool's name and a few
arguments takes a person longer than that."""

__all__ = [
    "DEFAULT_DATABASE_MAX_OVERFLOW",
    "DEFAULT_LANGUAGE",
    "DEFAULT_DATABASE_POOL_SIZE",
    "DEFAULT_DATABASE_URL",
    "DEFAULT_MAX_CONCURRENT_TURNS",
    "DEFAULT_MAX_MODEL_REQUESTS",
    "DEFAULT_MODEL",
    "DEFAULT_QUICK_APPROVAL_SECONDS",
    "DEFAULT_SLACK_API_URL",
    "LIVE_QUESTION_POLL",
    "LIVE_QUESTION_POLL_NOTIFIED",
    "MCP_CALL_TIMEOUT",
    "DEV_STOP_DEADLINE",
    "MCP_ELICITATION_WAIT",
    "MCP_MAX_SESSIONS",
    "MCP_SESSION_IDLE",
    "MCP_START_TIMEOUT",
    "SHIPPED_LANGUAGES",
]

DEV_STOP_DEADLINE = 2.0
"""Seconds `python -m bot dev` may take to stop after Ctrl-C or SIGTERM before it exits anyway (what was at
work is recovered at its next start)."""

SHIPPED_LANGUAGES = ("en", "zh-TW", "zh-CN", "ko", "ja")
"""The languages of the bot's own words (`bot/slack/locales/`), as `BOT_LANGUAGE` names them."""
DEFAULT_LANGUAGE = "en"
"""`BOT_LANGUAGE`: the bot's words for a reader whose Slack locale names none of `SHIPPED_LANGUAGES`."""
