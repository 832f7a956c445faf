"""Whether a value the model read from a user's message is supported by what the message says.

Auto-resume must never act on a value the user did not give: a yes where they said no, a city that
is not in their message, a number they did not state. This module holds the checks, on plain text,
with the normalisation a careful reader allows: case and accents, number words and units ("twenty",
"5k", "$1,500"), the schema's enum values and their abbreviations ("prod"), and corrections (in
"Paris, no wait, Lyon" only what follows the correction counts). Pure functions; no model, no I/O.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any

_CORRECTION = re.compile(
    r"\b(?:no\s+wait|wait\s+no|actually|i\s+mean|i\s+meant|sorry|rather|make\s+it|scratch\s+that|correction)\b"
    r"|[,.;:!-]\s*no\s*[,.;:!-]"
)
_YES_PHRASES = (
    "no problem",
    "no worries",
    "not a problem",
    "why not",
    "of course",
    "go ahead",
    "do it",
    "ship it",
    "send it",
    "deploy it",
    "sounds good",
    "let's go",
    "lets go",
    "i'm sure",
    "im sure",
    "please do",
)
_YES_WORDS = {
    "yes", "y", "yeah", "yep", "yup", "ya", "sure", "ok", "okay", "k", "confirm", "confirmed", "absolutely",
    "definitely", "proceed", "approve", "approved", "affirmative", "certainly", "go", "agreed", "correct", "right",
}  # fmt: skip
_NO_PHRASES = ("not yet", "hold off", "rather not", "do not", "don't", "dont", "no way", "wait until")
_NO_WORDS = {
    "no", "n", "nope", "nah", "not", "never", "cancel", "stop", "abort", "negative", "decline", "refuse", "skip",
    "later", "wait",
}  # fmt: skip
_HEDGES = (
    "maybe",
    "perhaps",
    "not sure",
    "unsure",
    "depends",
    "let me check",
    "let me think",
    "don't know",
    "dont know",
    "no idea",
    "hmm",
    "possibly",
    "might",
)
_NUMBER_WORDS = {
    "zero": 0, "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15,
    "sixteen": 16, "seventeen": 17, "eighteen": 18, "nineteen": 19, "twenty": 20, "thirty": 30, "forty": 40,
    "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90, "dozen": 12, "couple": 2, "pair": 2,
}  # fmt: skip
_SCALES = {"hundred": 100, "thousand": 1000, "k": 1000, "grand": 1000, "million": 1_000_000, "m": 1_000_000}
# Words that are never an answer by themselves: a "city" or "name" made only of these is not supported.
_FILLER = {
    *_YES_WORDS, *_NO_WORDS, "hello", "hi", "hey", "thanks", "thank", "you", "please", "the", "a", "an", "it",
    "this", "that", "what", "which", "who", "why", "how", "when", "where", "is", "are", "do", "does", "i", "me",
    "my", "we", "us", "in", "on", "at", "to", "for", "of", "and", "or", "be", "will", "can", "could", "would",
    "yet", "there", "here", "one", "some", "any", "today", "now", "just", "well", "good", "fine", "great",
}  # fmt: skip
_QUESTION_START = re.compile(r"^(?:what|which|who|whom|whose|why|how|when|where)\b")


def normalise(text: str) -> str:
    """Lower case, accents and punctuation dropped, whitespace collapsed: what the checks compare."""
    text = unicodedata.normalize("NFKD", text.casefold().replace("’", "'"))
    text = "".join(ch for ch in text if not unicodedata.combining(ch))
    return " ".join(re.sub(r"[^\w'$.,]+", " ", text).split())


def words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9']+", normalise(text))


def after_correction(message: str) -> str:
    """What follows the last correction in the message ("Paris, no wait, Lyon" -> "Lyon"), else all of it."""
    text = normalise(message) if message else ""
    corrections = list(_CORRECTION.finditer(" " + text + " "))
    if not corrections:
        return text
    tail = (" " + text + " ")[corrections[-1].end() :].strip(" ,.;:!-")
    return tail or text


def is_question_back(message: str) -> bool:
    """The message asks something instead of answering ("which cities do you support?")."""
    text = normalise(message)
    return message.strip().endswith("?") or bool(_QUESTION_START.match(text))


def yes_or_no(message: str) -> bool | None:
    """True for a clear yes, False for a clear no (a refusal, "not yet"), None for anything else."""
    text = after_correction(message)
    if any(hedge in text for hedge in _HEDGES) or is_question_back(message):
        return None
    for phrase in _YES_PHRASES:
        text = text.replace(phrase, " yes ")
    tokens = words(text)
    said_no = any(p in text for p in _NO_PHRASES) or any(t in _NO_WORDS or t.endswith("n't") for t in tokens)
    said_yes = any(t in _YES_WORDS for t in tokens)
    if said_no:
        return False  # a no wins over a yes in the same breath ("absolutely not", "yes - no wait, don't")
    if said_yes:
        return True
    return None


def numbers_in(text: str) -> set[float]:
    """Every number the text states: digits ("1,500", "2.5", "$20"), with a scale ("5k", "2 thousand"), or
    in words ("twenty five", "a dozen")."""
    found: set[float] = set()
    tokens = re.findall(r"\d[\d,]*(?:\.\d+)?|[a-z]+", normalise(text).replace("$", " "))
    value: float | None = None
    for token in [*tokens, ""]:
        if token and token[0].isdigit():
            if value is not None:
                found.add(value)
            value = float(token.replace(",", ""))
        elif token in _SCALES and value is not None:
            value *= _SCALES[token]
        elif token in _NUMBER_WORDS and token not in ("a", "an"):
            number = _NUMBER_WORDS[token]
            if value is not None and value >= 20 and value % 10 == 0 and number < 10:
                value += number  # "twenty five"
            else:
                if value is not None:
                    found.add(value)
                value = float(number)
        elif token in ("a", "an") and value is None:
            continue
        else:
            if value is not None:
                found.add(value)
            value = None
    for match in re.finditer(r"(\d[\d,]*(?:\.\d+)?)\s*(k|m)\b", normalise(text)):
        found.add(float(match.group(1).replace(",", "")) * _SCALES[match.group(2)])
    return found


def enum_supported(value: Any, options: list[Any], message: str) -> bool:
    """The message names `value` (any case), or an abbreviation of it ("prod"), and no other option after
    its last correction."""
    if value not in options:
        return False
    if not isinstance(value, str):
        return any(float(value) == n for n in numbers_in(after_correction(message))) if _is_number(value) else False
    tail = words(after_correction(message))

    def named(option: str) -> bool:
        target = " ".join(words(option))
        if f" {target} " in f" {' '.join(tail)} ":
            return True
        return any(len(w) >= 3 and target.startswith(w) for w in tail)

    if not named(value):
        return False
    others = [o for o in options if isinstance(o, str) and o != value and named(o)]
    return not others


def string_supported(value: Any, message: str) -> bool:
    """The text occurs in the message (case, accents and punctuation aside), after any correction, and is
    more than a yes, a no or a greeting."""
    if not isinstance(value, str):
        return False
    target = " ".join(words(value))
    if not target or all(w in _FILLER for w in target.split()):
        return False
    return f" {target} " in f" {' '.join(words(after_correction(message)))} "


def number_supported(value: Any, message: str) -> bool:
    if isinstance(value, bool) or not _is_number(value):
        return False
    return float(value) in numbers_in(after_correction(message))


def value_supported(value: Any, schema: dict[str, Any], message: str) -> bool:
    """Whether the message supports `value` for a field of this (resolved) schema."""
    if "enum" in schema:
        return enum_supported(value, list(schema["enum"]), message)
    if "const" in schema:
        return enum_supported(value, [schema["const"]], message)
    kinds = schema.get("type")
    kinds = set(kinds) if isinstance(kinds, list) else {kinds}
    if isinstance(value, bool):
        return "boolean" in kinds and yes_or_no(message) is value
    if _is_number(value):
        return bool(kinds & {"number", "integer"}) and number_supported(value, message)
    if isinstance(value, str):
        return (not kinds - {None} or "string" in kinds) and string_supported(value, message)
    return False  # objects and lists: too loose to check, so never taken from a message


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def covers_message(texts: list[str], message: str) -> bool:
    """The text values make up at least half of what the message says (greetings, politeness and numbers
    aside): a longer message that mentions a word in passing ("I'll be in a meeting") is not an answer."""
    if not texts:
        return True
    if len({normalise(t) for t in texts}) < len(texts):
        return False  # one word of the message cannot be two fields ("Oslo to Rome" is not Oslo to Oslo)
    content = [w for w in words(after_correction(message)) if w not in _FILLER and not _numeric(w)]
    said = {w for text in texts for w in words(text)}
    return 2 * sum(w in said for w in content) >= len(content)


def _numeric(word: str) -> bool:
    return any(ch.isdigit() for ch in word) or word in _NUMBER_WORDS or word in _SCALES
