"""Turn the model's Markdown into Slack's mrkdwn, and split long text into messages Slack accepts.

Pure functions: no Slack calls, no I/O.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime

MESSAGE_LIMIT = 3900
"""Characters per message: Slack advises at most 4,000 characters of text per message."""

_FENCE = "```"
_INLINE_CODE = re.compile(r"(`[^`\n]+`)")
_LINK = re.compile(r"\[([^\]\n]+)\]\((\S+?)\)")
_BOLD = re.compile(r"(\*\*|__)(?=\S)(.+?)(?<=\S)\1")
_ITALIC_STAR = re.compile(r"(?<![\*\w])\*(?=[^\s\*])([^\*\n]+?)(?<=\S)\*(?![\*\w])")
_STRIKE = re.compile(r"~~(?=\S)(.+?)(?<=\S)~~")
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+(.+?)\s*#*\s*$")
_BULLET = re.compile(r"^(\s*)[-*+]\s+")
_RULE = re.compile(r"^\s{0,3}([-*_])(\s*\1){2,}\s*$")


def escape(text: str) -> str:
    """Escape the three characters Slack treats as markup (`&`, `<`, `>`)."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


_ESCAPED = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}


def escape_within(text: str, limit: int) -> tuple[str, int]:
    """`text` escaped and cut so that the escaped text is at most `limit` characters (Slack counts what
    it is sent); and how many characters of `text` it kept."""
    out: list[str] = []
    size = 0
    for kept, char in enumerate(text):
        piece = _ESCAPED.get(char, char)
        if size + len(piece) > limit:
            return "".join(out), kept
        out.append(piece)
        size += len(piece)
    return "".join(out), len(text)


def slack_date(moment: datetime) -> str:
    """A moment as Slack's date token: each reader sees it in their own time zone and their own language's
    format (Slack renders it); the fallback (clients that cannot) is in UTC. A naive moment is UTC (as stored)."""
    moment = moment if moment.tzinfo else moment.replace(tzinfo=UTC)
    fallback = moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")
    return f"<!date^{int(moment.timestamp())}^{{date_short_pretty}} {{time}}|{fallback}>"


def to_mrkdwn(markdown: str) -> str:
    """Convert common Markdown (bold, italics, strike, links, headings, lists, code) to Slack mrkdwn.

    Code blocks and inline code are kept verbatim (only escaped); everything else is escaped first so
    the model's text can never ping a channel or forge a link.
    """
    out: list[str] = []
    in_code = False
    for line in markdown.split("\n"):
        if line.lstrip().startswith(_FENCE):
            in_code = not in_code
            out.append(_FENCE)  # drop the language tag: Slack shows it as code
            continue
        if in_code:
            out.append(escape(line))
            continue
        out.append(_convert_line(line))
    return "\n".join(out)


def _convert_line(line: str) -> str:
    if _RULE.match(line):
        return "──────────"
    heading = _HEADING.match(line)
    if heading:
        return f"*{_convert_inline(heading.group(1)).strip('*')}*"
    bullet = _BULLET.match(line)
    if bullet:
        return f"{bullet.group(1)}• {_convert_inline(line[bullet.end() :])}"
    return _convert_inline(line)


def _convert_inline(text: str) -> str:
    parts = _INLINE_CODE.split(text)
    for i, part in enumerate(parts):
        if i % 2 == 1:  # inline code: verbatim
            parts[i] = escape(part)
            continue
        part = escape(part)
        part = _LINK.sub(lambda m: f"<{m.group(2)}|{m.group(1)}>", part)
        part = _ITALIC_STAR.sub(lambda m: f"_{m.group(1)}_", part)
        part = _BOLD.sub(lambda m: f"*{m.group(2)}*", part)
        part = _STRIKE.sub(lambda m: f"~{m.group(1)}~", part)
        parts[i] = part
    return "".join(parts)


def split_point(text: str, limit: int, *, start: int = 0) -> int:
    """Where to cut `text` so the head is at most `limit` long: the last paragraph break, else line
    break, else space after `start`; a hard cut at `limit` when there is none."""
    if len(text) <= limit:
        return len(text)
    window = text[:limit]
    for separator in ("\n\n", "\n", " "):
        index = window.rfind(separator)
        if index > start:
            return index + len(separator)
    return max(limit, start)


def split_text(text: str, limit: int = MESSAGE_LIMIT) -> list[str]:
    """Split `text` into pieces of at most `limit` characters, at paragraph, line or word boundaries.

    A code block cut in two is closed at the end of one piece and reopened at the start of the next.
    """
    pieces: list[str] = []
    rest = text
    reopen = False
    while rest:
        if reopen:
            rest = _FENCE + "\n" + rest
        budget = limit - len("\n" + _FENCE)
        if len(rest) <= limit:
            pieces.append(rest)
            break
        cut = split_point(rest, budget)
        head, rest = rest[:cut], rest[cut:]
        reopen = head.count(_FENCE) % 2 == 1
        if reopen:
            head = head.rstrip("\n") + "\n" + _FENCE
        pieces.append(head.rstrip("\n") if not reopen else head)
    return [piece for piece in pieces if piece.strip()]
