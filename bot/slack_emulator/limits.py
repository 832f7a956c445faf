"""Slack's documented size limits of Block Kit that the emulation enforces as Slack does, so a message or
a view the real Slack would refuse is refused here too."""

from __future__ import annotations

from typing import Any

MESSAGE_BLOCK_LIMIT = 50
SECTION_TEXT_LIMIT = 3000
SECTION_FIELD_LIMIT = 2000


def section_text_ok(block: dict[str, Any]) -> bool:
    """Slack's limits of a section block: its text at most 3,000 characters, each of its fields at most
    2,000 (as sent, so after any escaping); other blocks pass."""
    if block.get("type") != "section":
        return True
    text = block.get("text")
    if isinstance(text, dict) and len(str(text.get("text") or "")) > SECTION_TEXT_LIMIT:
        return False
    fields = block.get("fields") or []
    return all(not isinstance(f, dict) or len(str(f.get("text") or "")) <= SECTION_FIELD_LIMIT for f in fields)
