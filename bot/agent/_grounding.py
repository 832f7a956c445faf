"""Whether a value the model read from a user's message is supported by what the message says.

Auto-resume must never act on a value the user did not give: a yes where they said no, a city that
is not in their message, a number they did not state. This module holds the checks, on plain text,
in any language and script. Text is compared folded (`languages.fold`: NFKC, case, accents, full-width
forms, digits of every script). A value occurs in a message at word boundaries in scripts written
with spaces, and anywhere in scripts written without them (巴黎 in 我在巴黎); a Hangul word may carry
an attached particle (서울 in 서울로), a Hebrew or Arabic one an attached prefix (פריז in בפריז). The
words of each language (yes, no, hedges, corrections, number words...) are data (`languages/`);
nothing here names a language. Pure functions; no model, no I/O.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from typing import Any

from .languages import clean, fold, languages

# -- scripts --------------------------------------------------------------------------------------

_NO_SPACE_SCRIPTS = ("CJK", "HIRAGANA", "KATAKANA", "THAI", "LAO", "KHMER", "MYANMAR", "TIBETAN", "IDEOGRAPHIC")
# attached prefixes ("in", "and", "the"...): בפריז is פריז, بالرياض is الرياض
_PREFIX_CLITICS = {"HEBREW": re.compile(r"[ובלמהשכ]{1,3}"), "ARABIC": re.compile(r"[وفبلك]{0,2}(?:ال)?")}


@cache
def _script(ch: str) -> str:
    name = unicodedata.name(ch, "")
    for script in (*_NO_SPACE_SCRIPTS, "HANGUL", "HEBREW", "ARABIC"):
        if name.startswith(script) or f" {script} " in f" {name} ":
            return "nospace" if script in _NO_SPACE_SCRIPTS else script
    return "spaced"


def _is_word(ch: str) -> bool:
    return ch.isalnum() or unicodedata.category(ch).startswith("M")


def _start_ok(text: str, i: int, first: str) -> bool:
    """Whether a match starting at text[i] (whose first char is `first`) starts a word."""
    if i == 0 or not _is_word(text[i - 1]):
        return True
    before = text[i - 1]
    if "nospace" in (_script(before), _script(first)):
        return True
    script = _script(first)
    if script in _PREFIX_CLITICS:
        start = i
        while start > 0 and _is_word(text[start - 1]):
            start -= 1
        return bool(_PREFIX_CLITICS[script].fullmatch(text[start:i]))
    return False


def _end_ok(text: str, end: int, last: str) -> bool:
    """Whether a match ending before text[end] (whose last char is `last`) ends a word."""
    if end >= len(text) or not _is_word(text[end]):
        return True
    after = text[end]
    if "nospace" in (_script(after), _script(last)):
        return True
    return _script(last) == "HANGUL" == _script(after)  # 서울로: a particle attached after


def occurs(needle: str, text: str) -> bool:
    """Whether the cleaned `needle` occurs in the cleaned `text` as a word (or words) of it."""
    return bool(needle) and any(True for _ in _occurrences(needle, text))


def _occurrences(needle: str, text: str) -> Iterator[tuple[int, int]]:
    start = text.find(needle)
    while start >= 0:
        end = start + len(needle)
        if _start_ok(text, start, needle[0]) and _end_ok(text, end, needle[-1]):
            yield start, end
        start = text.find(needle, start + 1)


# -- the words of every language ------------------------------------------------------------------


@dataclass(frozen=True)
class _Span:
    start: int
    end: int
    kinds: frozenset[str]


@cache
def _lexicon() -> dict[str, frozenset[str]]:
    """Every word and phrase of every language -> its kinds (`yes`, `no`, `filler`, `number`, ...)."""
    found: dict[str, set[str]] = {}
    for language in languages():
        for kind, entries in language.entries.items():
            for entry in entries:
                found.setdefault(entry, set()).add(kind)
        for entry in language.numbers:
            found.setdefault(entry, set()).add("number")
        for entry in language.scales:
            found.setdefault(entry, set()).add("scale")
        for entry in language.joiners:
            found.setdefault(entry, set()).add("joiner")
    return {entry: frozenset(kinds) for entry, kinds in found.items()}


@cache
def _by_first_char() -> dict[str, list[str]]:
    index: dict[str, list[str]] = {}
    for entry in _lexicon():
        index.setdefault(entry[0], []).append(entry)
    for entries in index.values():
        entries.sort(key=len, reverse=True)
    return index


def spans(text: str) -> list[_Span]:
    """The words and phrases of the cleaned `text` that some language knows, longest first, left to right:
    "no problem" is a yes, not a "no"; "いいえ" a no, not "いい"."""
    found, i = [], 0
    index = _by_first_char()
    while i < len(text):
        for entry in index.get(text[i], ()):
            end = i + len(entry)
            if text.startswith(entry, i) and _start_ok(text, i, entry[0]) and _end_ok(text, end, entry[-1]):
                found.append(_Span(i, end, _lexicon()[entry]))
                i = end
                break
        else:
            i += 1
    return found


@cache
def _numbers() -> tuple[dict[str, int], dict[str, int], dict[str, int], dict[str, int]]:
    words, scales, digits, units = {}, {}, {}, {}
    for language in languages():
        words.update(language.numbers)
        scales.update(language.scales)
        digits.update(language.numeral_digits)
        units.update(language.numeral_units)
    return words, scales, digits, units


@cache
def _question_endings() -> frozenset[str]:
    return frozenset(e for language in languages() for e in language.question_endings)


# -- corrections, questions back, yes and no ------------------------------------------------------

# where a clause ends: punctuation, but not a decimal point or a thousands comma, nor a hyphen inside a word
_CLAUSE = re.compile(r"((?:(?<!\d)[,.]|[,.](?!\d)|[;:!?、。，；：！？–—]|\s-+\s)+)")


def after_correction(message: str) -> str:
    """What follows the last correction in the message ("Paris, no wait, Lyon" -> "lyon"; "100, no, 50" ->
    "50"; "Oslo，不，北京" -> "北京"), folded (punctuation kept, for numbers); else all of it."""
    folded = fold(message or "")
    pieces = _CLAUSE.split(folded)  # clause, separator, clause, ...
    clauses = [(i, clean(pieces[i])) for i in range(0, len(pieces), 2) if clean(pieces[i])]
    cut: tuple[int, int] | None = None  # (piece, characters of it kept by `clean`) where the answer starts
    for position, (piece, text) in enumerate(clauses):
        found = spans(text)
        later = clauses[position + 1][0] if position + 1 < len(clauses) else None
        whole_no = len(found) == 1 and "no" in found[0].kinds and found[0].end - found[0].start == len(text)
        if position > 0 and later is not None and whole_no:
            cut = (later, 0)  # a bare "no" between two answers
        for span in found:
            if "corrections" in span.kinds and (text[span.end :].strip() or later is not None):
                cut = (piece, _kept(text[: span.end]))
    if cut is None:
        return folded
    piece, kept = cut
    head = pieces[piece]
    index = 0
    while kept and index < len(head):
        kept -= _is_word(head[index])
        index += 1
    tail = head[index:] + "".join(pieces[piece + 1 :])
    return tail if clean(tail) else folded


def _kept(text: str) -> int:
    return sum(_is_word(ch) for ch in text)


def is_question_back(message: str) -> bool:
    """The message asks something instead of answering ("which cities do you support?", "哪些城市？")."""
    if re.search(r"[?？؟]\s*$", message.strip()):
        return True
    text = clean(message)
    if not text:
        return False
    found = spans(text)
    for span in found:
        if "question_words" in span.kinds and (span.start == 0 or _script(text[span.start]) == "nospace"):
            return True
    last = text.split()[-1]
    covered = {(s.start, s.end) for s in found if s.kinds - {"question_words"}}
    for ending in _question_endings():
        if last.endswith(ending) and (len(text) - len(last), len(text)) not in covered:
            return _script(ending[-1]) != "spaced"
    return False


def _kinds(text: str) -> set[str]:
    """The kinds of word in the text, clause by clause: a phrase never spans a comma ("no, wait until" is a
    no and a wait, not the correction "no wait")."""
    clauses = _CLAUSE.split(fold(text))[::2]
    return {kind for clause in clauses for span in spans(clean(clause)) for kind in span.kinds}


def yes_or_no(message: str) -> bool | None:
    """True for a clear yes, False for a clear no (a refusal, "not yet", "不要", "아니요"), None for anything
    else (a hedge, a question back, or no yes and no word at all)."""
    if is_question_back(message):
        return None
    kinds = _kinds(after_correction(message))
    if "hedges" in kinds:
        return None
    if "no" in kinds:
        return False  # a no wins over a yes in the same breath ("好的，不要部署")
    if "yes" in kinds:
        return True
    return None


def knows_words_of(message: str) -> bool:
    """Whether any word of the message belongs to a language the bot has data for. When none does, a yes/no
    reading cannot be checked against the words and needs a second, independent reading."""
    return bool(_kinds(message))


def is_hedge(message: str) -> bool:
    return "hedges" in _kinds(after_correction(message))


# -- numbers --------------------------------------------------------------------------------------

_DIGITS = re.compile(r"(\d+(?:[,.]\d+)*)(?:\s*([^\W\d_]+))?")


def _digit_values(token: str) -> set[float]:
    """ "1,500" -> 1500; "2,5" -> 2.5; "1.500" -> 1.5 and 1500 (both ways of writing it)."""
    if "," in token and "." in token:
        thousands, decimal = (",", ".") if token.rfind(".") > token.rfind(",") else (".", ",")
        return {float(token.replace(thousands, "").replace(decimal, "."))}
    for sep in (",", "."):
        if sep in token:
            parts = token.split(sep)
            values = set()
            if all(len(p) == 3 for p in parts[1:]):
                values.add(float("".join(parts)))
            if len(parts) == 2 and (sep == "." or len(parts[1]) != 3):
                values.add(float(".".join(parts)))
            return values
    return {float(token)}


def numbers_in(text: str) -> set[float]:
    """Every number the text states: in digits of any script ("1,500", "2.5", "$20", "１２", "٣"), with a scale
    ("5k", "2 thousand", "3万"), in words of any language the bot knows ("twenty five", "fünfundzwanzig",
    "vingt-cinq"), or in CJK numerals ("十二", "三百")."""
    words, scales, cjk_digits, cjk_units = _numbers()
    folded = fold(text)
    found: set[float] = set()
    for match in _DIGITS.finditer(folded):
        values, after = _digit_values(match.group(1)), match.group(2) or ""
        if after in scales:  # "5k", "2 thousand", "3 mil": the scaled number only
            found |= {v * scales[after] for v in values}
        elif not (after and after[0] in cjk_units):  # "3万" is read with the numerals below
            found |= values
    found |= _cjk_numbers(folded, cjk_digits, cjk_units)
    # number words: a run of number words, scales and joiners is one number ("two hundred and fifty")
    cleaned = clean(folded)
    value: float | None = None
    last_end = 0
    for span in spans(cleaned):
        entry = cleaned[span.start : span.end]
        gap = cleaned[last_end : span.start].strip()
        if gap and value is not None:
            found.add(value)
            value = None
        last_end = span.end
        if "number" in span.kinds and entry in words:
            number = float(words[entry])
            if value is not None and _adds(value, number):
                value += number
            else:
                if value is not None:
                    found.add(value)
                value = number
        elif "scale" in span.kinds and entry in scales and value is not None:
            value *= scales[entry]
        elif "joiner" in span.kinds:
            continue
        elif value is not None:
            found.add(value)
            value = None
    if value is not None:
        found.add(value)
    return found


def _adds(value: float, number: float) -> bool:
    """ "twenty" then "five" is 25, "two hundred" then "fifty" 250, "soixante" then "dix" 70."""
    if value >= 100 and value % 100 == 0:
        return number < 100
    if value >= 20 and value % 10 == 0:
        return number < 10 or (value in (60, 80) and number < 20)
    return False


def _cjk_numbers(text: str, digits: dict[str, int], units: dict[str, int]) -> set[float]:
    found: set[float] = set()
    numeral = "".join(re.escape(c) for c in [*digits, *units])
    if not numeral:
        return found
    for match in re.finditer(rf"\d*[{numeral}]+", text):
        run = match.group(0)
        if not any(c in digits or c in units for c in run):
            continue
        total, section, current = 0.0, 0.0, None
        ascii_digits = re.match(r"\d+", run)
        if ascii_digits:
            current = float(ascii_digits.group(0))
            run = run[ascii_digits.end() :]
        for ch in run:
            if ch in digits:
                current = digits[ch] if current is None else current * 10 + digits[ch]
            elif units[ch] < 10000:
                section += (1 if current is None else current) * units[ch]
                current = None
            else:
                total += (section + (current or 0) or 1) * units[ch]
                section, current = 0.0, None
        found.add(total + section + (current or 0))
    return found


# -- values of a schema ---------------------------------------------------------------------------


def enum_supported(value: Any, options: list[Any], message: str) -> bool:
    """The message names `value` (any case), or an abbreviation of it ("prod"), and no other option after
    its last correction."""
    if value not in options:
        return False
    if not isinstance(value, str):
        return any(float(value) == n for n in numbers_in(after_correction(message))) if _is_number(value) else False
    tail = clean(after_correction(message))

    def named(option: str) -> bool:
        target = clean(option)
        if occurs(target, tail):
            return True
        return any(len(w) >= 3 and _script(w[0]) == "spaced" and target.startswith(w) for w in tail.split())

    if not named(value):
        return False
    others = [o for o in options if isinstance(o, str) and o != value and named(o)]
    return not others


def _only_filler(text: str) -> bool:
    """A value made only of greetings, yes/no, question and filler words ("hello", "谢谢") is no answer."""
    covered = [False] * len(text)
    for span in spans(text):
        if span.kinds - {"number", "scale", "joiner"}:
            covered[span.start : span.end] = [True] * (span.end - span.start)
    return all(covered[i] for i, ch in enumerate(text) if ch != " ")


def string_supported(value: Any, message: str) -> bool:
    """The text occurs in the message (case, accents, width and punctuation aside), after any correction, and
    is more than a yes, a no or a greeting."""
    if not isinstance(value, str):
        return False
    target = clean(value)
    if not target or _only_filler(target):
        return False
    edge_words = {"greetings", "filler"}
    found = spans(target)
    if sum(1 for s in found if s.kinds & edge_words) >= 2:
        return False  # a sentence, not a name ("sarò in riunione per un'ora")
    if any(s.kinds & edge_words and (s.start == 0 or s.end == len(target)) for s in found):
        return False  # the model copied more than the value ("北京，谢谢", "Paris, thanks", "Estoy en Madrid")
    if _script(target[-1]) == "HANGUL" and any(target.endswith(p) and len(target) > len(p) for p in _particles()):
        return False  # "서울로": the particle came along
    return occurs(target, clean(after_correction(message)))


def as_written(value: str, message: str) -> str:
    """The words of `message` that the supported text `value` stands for, as the user wrote them (NFKC
    only: full-width forms become plain ones): the model's "Montreal" for "Je suis à Montréal" is
    "Montréal", its "Seoul-ro" never, its "서울" in "서울로" is "서울". The last occurrence counts (what
    follows a correction); `value` itself when the message does not show it (never the case for a value
    `string_supported` accepted, but a reading is not trusted to be one)."""
    text, origin = _cleaned_with_origin(message)
    found = list(_occurrences(clean(value), text))
    if not found:
        return value
    start, end = found[-1]
    return unicodedata.normalize("NFKC", message[origin[start] : origin[end - 1] + 1])


def _cleaned_with_origin(message: str) -> tuple[str, list[int]]:
    """`clean(message)` built one character at a time, with the index in `message` of each character."""
    chars: list[str] = []
    origin: list[int] = []
    for index, ch in enumerate(message):
        for folded in fold(ch):
            word = folded.isalnum() or unicodedata.category(folded).startswith("M")
            inner_apostrophe = folded == "'" and chars and chars[-1].isalnum()
            if word or inner_apostrophe:
                chars.append(folded)
                origin.append(index)
            elif chars and chars[-1] != " ":
                chars.append(" ")
                origin.append(index)
    while chars and chars[-1] in " '":
        chars.pop()
        origin.pop()
    return "".join(chars), origin


@cache
def _particles() -> frozenset[str]:
    """Short Hangul filler entries (particles such as 로, 이요), which attach to the word before them."""
    return frozenset(
        entry
        for language in languages()
        for entry in language.entries["filler"]
        if len(entry) <= 2 and all(_script(ch) == "HANGUL" for ch in entry)
    )


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
    """The text values make up at least half of what the message says, greetings, politeness, filler and
    numbers of every known language aside: a longer message that mentions a word in passing ("I'll be in
    a meeting") is not an answer. A word of a spaced script counts one; in scripts without spaces each
    character counts a half, so "我在巴黎" is all city and "서울로 해주세요" all 서울."""
    if not texts:
        return True
    targets = [clean(t) for t in texts]
    if len(set(targets)) < len(targets):
        return False  # one word of the message cannot be two fields ("Oslo to Rome" is not Oslo to Oslo)
    text = clean(after_correction(message))
    marks = [""] * len(text)  # "said", "aside" or "" (content) for every character
    for target in targets:
        for start, end in _occurrences(target, text):
            marks[start:end] = ["said"] * (end - start)
    for span in spans(text):
        if not any(marks[span.start : span.end]):
            marks[span.start : span.end] = ["aside"] * (span.end - span.start)
    for word_start, word in _words_with_positions(text):
        particle = _hangul_particle(word)  # 날씨를: the 를 says nothing of its own
        if particle and not any(marks[word_start + len(word) - particle : word_start + len(word)]):
            marks[word_start + len(word) - particle : word_start + len(word)] = ["aside"] * particle
    said = content = 0.0
    for word_start, word in _words_with_positions(text):
        if word.isdigit() or _numeric(word):
            continue
        if not any(_script(ch) in ("nospace", "HANGUL") for ch in word):
            kinds = set(marks[word_start : word_start + len(word)])
            if "said" in kinds:
                said += 1
                content += 1
            elif kinds != {"aside"}:
                content += 1
        else:
            for offset, ch in enumerate(word):
                mark = marks[word_start + offset]
                if ch.isdigit() or mark == "aside":
                    continue
                content += 0.5
                said += 0.5 if mark == "said" else 0
    return 2 * said >= content


def _hangul_particle(word: str) -> int:
    """The length of the particle a Hangul word ends with (을, 를, 에서, ...), 0 if none; the word keeps at
    least one syllable of its own."""
    if not word or _script(word[-1]) != "HANGUL":
        return 0
    for size in (2, 1):
        if len(word) > size and word[-size:] in _particles():
            return size
    return 0


def _words_with_positions(text: str) -> Iterator[tuple[int, str]]:
    for match in re.finditer(r"\S+", text):
        yield match.start(), match.group(0)


def _numeric(word: str) -> bool:
    words, scales, _, _ = _numbers()
    return any(ch.isdigit() for ch in word) or word in words or word in scales
