"""The words auto-resume knows, one data file per language (`<code>.json` in this folder), loaded once.

A file lists a language's yes and no (words and phrases, refusals included), hedges, question words
and question endings, corrections ("no wait", "其实"), greetings and filler words, what withdraws a
waiting call (`cancel`: "never mind", "算了", "취소해"; `says_cancel`), and its number words
(`numbers`, `scales`, `joiners`, German-style `compounds`, CJK `numeral_digits`/`numeral_units`).
Adding a language is adding a file; nothing in the code names a language. Every entry is folded as
the messages are (`fold`), so a file may be written with accents, full-width forms or any case.
Pure data and folding; no model, no I/O after the first load.
"""

from __future__ import annotations

import json
import unicodedata
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import Any

# Marks folded away as accents are: Latin/Greek/Cyrillic combining diacritics, Arabic harakat and
# tatweel, Hebrew points. Other marks (Japanese dakuten, Devanagari vowel signs) are letters' parts.
_DROPPED_MARKS = frozenset(
    [*range(0x0300, 0x0370), *range(0x064B, 0x0660), 0x0670, 0x0640, *range(0x0591, 0x05BE), 0x05BF, 0x05C1, 0x05C2]
    + [0x05C4, 0x05C5, 0x05C7]
)
_SEPARATORS = {"\u066b": ".", "\u066c": ",", "\u2019": "'", "\u02bc": "'", "\uff07": "'"}


def fold(text: str) -> str:
    """What every comparison sees: NFKC (full-width forms, ligatures), case folded, accents and vowel points
    dropped, digits of every script as ASCII digits. Punctuation stays (numbers need it)."""
    text = unicodedata.normalize("NFKC", text).casefold()
    out = []
    for ch in unicodedata.normalize("NFKD", text):
        if ord(ch) in _DROPPED_MARKS:
            continue
        if ch in _SEPARATORS:
            out.append(_SEPARATORS[ch])
        elif ch.isdigit() and not ch.isascii() and unicodedata.decimal(ch, None) is not None:
            out.append(str(unicodedata.decimal(ch)))
        else:
            out.append(ch)
    return unicodedata.normalize("NFC", "".join(out))


def clean(text: str) -> str:
    """`fold`, then punctuation and symbols as spaces (an apostrophe inside a word stays), spaces collapsed."""
    folded = fold(text)
    out = []
    for i, ch in enumerate(folded):
        if ch == "'" and 0 < i < len(folded) - 1 and folded[i - 1].isalnum():
            out.append(ch)
        elif ch.isalnum() or unicodedata.category(ch).startswith("M"):
            out.append(ch)
        else:
            out.append(" ")
    return " ".join("".join(out).split()).strip("'")


KINDS = ("yes", "no", "hedges", "question_words", "corrections", "greetings", "filler", "cancel")


@dataclass(frozen=True)
class Language:
    """One language's data file, folded."""

    code: str
    name: str
    entries: dict[str, frozenset[str]]
    """Kind (`yes`, `no`, `hedges`, ...) -> its cleaned words and phrases."""
    question_endings: frozenset[str]
    numbers: dict[str, int]
    scales: dict[str, int]
    joiners: frozenset[str]
    numeral_digits: dict[str, int] = field(default_factory=dict)
    numeral_units: dict[str, int] = field(default_factory=dict)


def _language(data: dict[str, Any]) -> Language:
    def words(key: str) -> frozenset[str]:
        return frozenset(w for w in (clean(x) for x in data.get(key, [])) if w)

    numbers = {clean(k): int(v) for k, v in data.get("numbers", {}).items()}
    for pattern in data.get("compounds", []):  # "{unit}und{ten}": fünfundzwanzig
        units = {w: v for w, v in numbers.items() if 1 <= v <= 9}
        tens = {w: v for w, v in numbers.items() if v in range(20, 100, 10)}
        for unit, u in units.items():
            for ten, t in tens.items():
                numbers[clean(pattern.format(unit=unit, ten=ten))] = t + u
    return Language(
        code=data["code"],
        name=data.get("name", data["code"]),
        entries={kind: words(kind) for kind in KINDS},
        question_endings=words("question_endings"),
        numbers=numbers,
        scales={clean(k): int(v) for k, v in data.get("scales", {}).items()},
        joiners=words("joiners"),
        numeral_digits={fold(k): int(v) for k, v in data.get("numeral_digits", {}).items()},
        numeral_units={fold(k): int(v) for k, v in data.get("numeral_units", {}).items()},
    )


@cache
def languages() -> tuple[Language, ...]:
    """Every data file of this folder, loaded once, in file-name order."""
    folder = resources.files(__package__)
    files = sorted((f for f in folder.iterdir() if f.name.endswith(".json")), key=lambda f: f.name)
    return tuple(_language(json.loads(f.read_text(encoding="utf-8"))) for f in files)


def says_cancel(text: str) -> bool:
    """Whether the whole message is a clear "never mind" / "cancel that" in a language the bot reads (a
    `cancel` entry of a data file, with greetings such as "please" or "thanks" around it). A refusal inside
    a longer answer ("no, cancel that") is an answer, not a withdrawal."""
    words = clean(text).split()
    for language in languages():
        greetings = language.entries["greetings"]
        kept = list(words)
        while kept and kept[0] in greetings:
            kept.pop(0)
        while kept and kept[-1] in greetings:
            kept.pop()
        if kept and " ".join(kept) in language.entries["cancel"]:
            return True
    return False
