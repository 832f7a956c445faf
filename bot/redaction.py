"""Secrets out of text that leaves the process: what a tool's failure says, before people or the model see it.

A tool's error is written by code the bot does not control (`could not reach db at
postgres://admin:s3cr3t@db/prod`), and it goes to the thread, the audit trail and the model. The runtime
passes such text through a `Redactor` first; the full text goes to the log only.

A `Redactor` masks the secrets it is told of (the settings' tokens and keys, the database's password),
credentials in URLs (`user:password@`), and the shapes of common tokens (Slack's `xoxb-`/`xapp-`, `sk-`
keys, `Bearer ...`, `password=...`). It imports nothing of the project: the runtime gets one as a
dependency, and the command line builds it from the settings (`Settings.secrets`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from urllib.parse import unquote

MASK = "***"
SHORTEST_SECRET = 6
"""A known secret shorter than this is not masked wherever it occurs: it would mangle ordinary words,
and it is no secret anyway. Token shapes and URL credentials are masked whatever their length."""

_URL_CREDENTIALS = re.compile(r"(?P<head>\b[A-Za-z][A-Za-z0-9+.-]*://[^\s:/@]*):[^\s/]*@")
"""`scheme://user:password@`: the password, up to the last `@` before the host (it may hold an `@`)."""
_TOKEN_SHAPES = (
    re.compile(r"\b(?P<head>xox[abposre]-)[A-Za-z0-9-]+"),  # Slack bot, user, config... tokens
    re.compile(r"\b(?P<head>xapp-)[A-Za-z0-9-]+"),  # Slack app-level tokens
    re.compile(r"\b(?P<head>sk-)[A-Za-z0-9_-]{8,}"),  # OpenAI-style keys (sk-..., sk-proj-...)
    re.compile(r"\b(?P<head>gh[pousr]_)[A-Za-z0-9]{16,}"),  # GitHub tokens
    re.compile(r"\b(?P<head>AKIA)[0-9A-Z]{16}\b"),  # AWS access key ids
    re.compile(r"(?i)\b(?P<head>bearer\s+)[A-Za-z0-9._~+/=-]{6,}"),
    re.compile(
        r"(?i)(?P<head>\b(?:password|passwd|pwd|secret|token|api[_-]?key|access[_-]?key|client[_-]?secret)"
        r"[\"']?\s*[=:]\s*[\"']?)[^\s&\"',;]+"
    ),
)


class Redactor:
    """Masks secrets in text (see the module docstring); callable: `redactor(text) -> text`."""

    def __init__(self, known: Iterable[str | None] = ()):
        secrets = {s for value in known if value for s in (value, unquote(value)) if len(s) >= SHORTEST_SECRET}
        # the longest first, so a secret that holds another is masked whole
        self._known = re.compile("|".join(map(re.escape, sorted(secrets, key=len, reverse=True)))) if secrets else None

    def __call__(self, text: str) -> str:
        if self._known is not None:
            text = self._known.sub(MASK, text)
        text = _URL_CREDENTIALS.sub(lambda m: f"{m['head']}:{MASK}@", text)
        for shape in _TOKEN_SHAPES:
            text = shape.sub(lambda m: m["head"] + MASK, text)
        return text


def url_password(url: str | None) -> str | None:
    """The password in a URL (`scheme://user:password@host/...`), as written; None when it has none."""
    if not url:
        return None
    _, _, rest = url.partition("://")
    credentials, at, _ = rest.rpartition("@")
    if not at or ":" not in credentials:
        return None
    return credentials.split(":", 1)[1] or None


NO_KNOWN_SECRETS = Redactor()
"""Masks URL credentials and token shapes only: for a runtime the bot gave no secrets to."""
