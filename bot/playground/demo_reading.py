"""How the offline demo model reads a user's words: a city in any script, and the values of
`field=value` pairs typed by a tool's JSON Schema.

It reads with the language data of auto-resume (`bot.agent.languages`: yes and no, filler, greetings,
question words of every language the bot knows) and never names a language itself, so the demo reads
what the runtime's checks accept: "我在台北" is 台北, "서울이요" 서울, "東京にいます" 東京, "أنا في القاهرة"
القاهرة. Pure functions; no I/O.
"""

from __future__ import annotations

import json
import re
import unicodedata
from functools import cache
from typing import Any

from bot.agent import yes_or_no
from bot.agent.languages import clean, languages

_COMMON_WORDS = """a an the in at for of on to from and or but i i'm im me my we you your it it's its is are was be
this that there here what what's whats how about please thanks thank ok okay yes no yeah sure hi hello hey today
now tomorrow weather city town like tell show give say know think want delete remove record records refund order
list approve decline help can could would will do does did just also maybe"""
_NOT_A_CITY = frozenset(_COMMON_WORDS.split())
_LATIN_WORD = r"[A-Za-zÀ-ÿ][\w'’-]*"


def city_after_preposition(text: str) -> str | None:
    """ "weather in Paris" -> "Paris"; "weather in new york?" -> "New York"."""
    match = re.search(rf"\b(?:in|at|for)\s+({_LATIN_WORD}(?:\s+{_LATIN_WORD}){{0,2}})", text, re.IGNORECASE)
    if not match:
        return None
    words = []
    for word in match.group(1).split():
        if word.lower() in _NOT_A_CITY:
            break
        words.append(word)
    return " ".join(w[:1].upper() + w[1:] for w in words) or None


def latin_city(text: str) -> str | None:
    """A city in Latin letters: after "in"/"at"/"for", else a capitalised word, else the whole message when
    it is one to three plain words."""
    after = city_after_preposition(text)
    if after:
        return after
    words = re.findall(_LATIN_WORD, text)
    capitalised = [w for w in words if w[0].isupper() and w.lower() not in _NOT_A_CITY]
    if capitalised:
        return " ".join(capitalised[:3])
    plain = [w for w in words if w.lower() not in _NOT_A_CITY and not _known(clean(w))]
    if plain and len(words) <= 3 and not re.search(r"\d", text):
        return " ".join(w.capitalize() for w in plain)
    return None


def city_in_any_script(text: str) -> str | None:
    """A city written in another script than Latin: what is left of the message once the words every
    language of the bot knows (filler, greetings, yes and no...) are set aside. In scripts without spaces a
    run of kana between ideographs is grammar (東京にいます), and known words are taken off a run's ends
    (我在台北); a Hangul word loses the particle attached to it (서울이요). A message that is a yes, a no or
    a question back names no city."""
    if yes_or_no(text) is not None or re.search(r"[?？؟]\s*$", text):
        return None
    cleaned = clean(text)
    found: list[str] = []
    for token in cleaned.split():
        if _script(token[0]) == "latin" or token.isdigit() or _known(token):
            if found and _script(found[-1][0]) == "spaced":
                break  # a city of several words ends at the first word that is not part of it
            continue
        script = _script(token[0])
        if script == "nospace":
            found += _nospace_candidates(token)
        elif script == "hangul":
            stripped = _without_particle(token)
            if stripped:
                found.append(stripped)
        elif len(found) < 3:
            found.append(token)
    if not found:
        return None
    if _script(found[0][0]) == "spaced":
        return " ".join(_as_written(w, text) for w in found if _script(w[0]) == "spaced")
    return max(found, key=len)  # the longest: 台北 rather than a stray character


def _as_written(word: str, text: str) -> str:
    """The word of `text` that folds to `word` (Москве, not москве)."""
    return next((w for w in re.findall(r"[\w'’-]+", unicodedata.normalize("NFKC", text)) if clean(w) == word), word)


def _nospace_candidates(token: str) -> list[str]:
    """The runs of ideographs and katakana of a token, with known words taken off their ends."""
    runs = re.findall(r"[^\u3040-\u309f]+", token) if re.search(r"[^\u3040-\u309f]", token) else [token]
    candidates = []
    for run in runs:
        run = _strip_known_ends(run)
        if run and not _known(run):
            candidates.append(run)
    return candidates


def _strip_known_ends(run: str) -> str:
    changed = True
    while changed and run:
        changed = False
        for entry in _entries_longest_first():
            if len(entry) < len(run) and run.startswith(entry):
                run, changed = run[len(entry) :], True
                break
            if len(entry) < len(run) and run.endswith(entry):
                run, changed = run[: -len(entry)], True
                break
    return run


def _without_particle(token: str) -> str:
    """서울이요 -> 서울, 서울로 -> 서울: the longest known word at its end taken off (one syllable kept)."""
    for entry in _entries_longest_first():
        if token.endswith(entry) and len(token) > len(entry):
            return token[: -len(entry)]
    return "" if _known(token) else token


@cache
def _lexicon() -> frozenset[str]:
    """Every word and phrase of every language's data, folded as `clean` folds a message."""
    words: set[str] = set()
    for language in languages():
        for entries in language.entries.values():
            words |= entries
        words |= set(language.numbers) | set(language.scales) | language.joiners
    return frozenset(words)


@cache
def _entries_longest_first() -> tuple[str, ...]:
    return tuple(sorted(_lexicon(), key=len, reverse=True))


def _known(token: str) -> bool:
    return token in _lexicon()


def _script(ch: str) -> str:
    """`latin`, `nospace` (CJK ideographs, kana), `hangul`, or `spaced` (Arabic, Hebrew, Cyrillic, ...)."""
    if ch.isascii() or "LATIN" in unicodedata.name(ch, ""):
        return "latin"
    name = unicodedata.name(ch, "")
    if name.startswith("HANGUL"):
        return "hangul"
    if name.startswith(("CJK", "HIRAGANA", "KATAKANA", "IDEOGRAPHIC")):
        return "nospace"
    return "spaced"


# -- field=value pairs ------------------------------------------------------------------------------

_PAIR = re.compile(
    r"""([A-Za-z_][\w-]*)\s*[=＝]\s*(\[[^\]]*\]|\{[^}]*\}|"[^"]*"|'[^']*'|“[^”]*”|「[^」]*」|[^\s,;]+)"""
)


def pairs_in(text: str) -> dict[str, str]:
    """`customer=ACME amount=30 note="late fee"` -> {"customer": "ACME", "amount": "30", "note": "late fee"}."""
    return {name: value.strip("\"'“”「」") for name, value in _PAIR.findall(unicodedata.normalize("NFKC", text))}


def kinds_of(prop: dict[str, Any]) -> set[str]:
    """The JSON types a property allows (`type`, a list of them, or the members of `anyOf`/`oneOf`)."""
    kinds: set[str] = set()
    declared = prop.get("type")
    kinds |= set(declared) if isinstance(declared, list) else {declared} if isinstance(declared, str) else set()
    for member in (prop.get("anyOf") or []) + (prop.get("oneOf") or []):
        if isinstance(member, dict):
            kinds |= kinds_of(member)
    return kinds


class NotTyped(ValueError):
    """A value does not fit its field's type; the message says what was expected."""


def typed(value: str, prop: dict[str, Any]) -> Any:
    """`value` as its field's type wants it: a number, a boolean (yes or no in any language the bot
    knows), JSON for an array or object, else the text; `NotTyped` when it cannot be."""
    kinds = kinds_of(prop)
    if isinstance(prop.get("enum"), list):
        for option in prop["enum"]:
            if str(option).casefold() == value.casefold():
                return option
        raise NotTyped("one of " + ", ".join(str(o) for o in prop["enum"]))
    if "integer" in kinds and re.fullmatch(r"-?\d+", value):
        return int(value)
    if "number" in kinds and re.fullmatch(r"-?\d+(?:\.\d+)?", value):
        number = float(value)
        return int(number) if number.is_integer() else number
    if "boolean" in kinds:
        said = {"true": True, "false": False}.get(value.lower(), yes_or_no(value))
        if said is not None:
            return said
    if kinds & {"array", "object"}:
        try:
            return json.loads(value)
        except ValueError:
            pass
    if "string" in kinds or not kinds:
        return value
    wanted = sorted(kinds - {"null"})
    raise NotTyped("a " + " or ".join("whole number" if k == "integer" else k for k in wanted))
