"""The message catalogs: every message of the code is in every shipped language, with the same placeholders.

The message ids are read from the code itself with Babel's extractor (what `pybabel extract` reads), so a
new `tr.gettext("...")` fails here until each catalog has it.
"""

from __future__ import annotations

import fnmatch
import string
import subprocess
import tomllib
from pathlib import Path

import pytest
from babel.messages.extract import DEFAULT_KEYWORDS, extract_from_dir
from babel.messages.pofile import read_po

from bot.defaults import SHIPPED_LANGUAGES
from bot.slack.translator import LANGUAGES, LOCALES, nearest_language, translator

ROOT = Path(__file__).resolve().parents[2]
SOURCES = ("bot", "memory")
"""Where the bot writes its own words: `gettext` calls (the Slack adapter, the playground) and the one-line
errors the adapter shows in its reader's language (`PolicyError`, `AdminInputError`, `N_`-marked templates)."""
KEYWORDS = {**DEFAULT_KEYWORDS, "PolicyError": None, "AdminInputError": None}
"""As `pybabel extract -k PolicyError -k AdminInputError` reads them (docs/languages.md)."""


def code_messages() -> dict[str, str | None]:
    """Every message id in the code, and its plural id (None for a message without plural)."""
    found: dict[str, str | None] = {}
    for source in SOURCES:
        for _file, _line, message, _comments, _context in extract_from_dir(ROOT / source, keywords=KEYWORDS):
            if isinstance(message, tuple):
                found[message[0]] = message[1]
            else:
                found[message] = None
    return found


def placeholders(text: str) -> set[str]:
    return {name for _, name, _, _ in string.Formatter().parse(text) if name is not None}


def catalog(language: str):
    with open(LOCALES / LANGUAGES[language] / "LC_MESSAGES" / "messages.po", "rb") as po:
        return read_po(po)


def test_the_code_has_messages_and_the_shipped_languages_have_catalogs():
    assert len(code_messages()) > 50
    assert tuple(LANGUAGES) == SHIPPED_LANGUAGES
    for language in SHIPPED_LANGUAGES:
        assert (LOCALES / LANGUAGES[language] / "LC_MESSAGES" / "messages.po").is_file()


@pytest.mark.parametrize("language", SHIPPED_LANGUAGES)
def test_every_message_is_translated_with_the_same_placeholders(language):
    messages = catalog(language)
    problems = []
    for msgid, plural in code_messages().items():
        entry = messages.get(msgid)
        if entry is None:
            problems.append(f"missing: {msgid!r}")
            continue
        if entry.fuzzy:
            problems.append(f"fuzzy: {msgid!r}")
        forms = list(entry.string) if isinstance(entry.string, tuple) else [entry.string]
        if plural is not None and not isinstance(entry.string, tuple):
            problems.append(f"not a plural entry: {msgid!r}")
            continue
        if not all(form and form.strip() for form in forms):
            problems.append(f"empty: {msgid!r}")
            continue
        for index, form in enumerate(forms):
            # a language with one plural form says it with the plural's placeholders ({n} always)
            wanted = placeholders(msgid if plural is None or (index == 0 and len(forms) > 1) else plural)
            if placeholders(form) != wanted:
                problems.append(f"placeholders differ: {msgid!r} -> {form!r}")
    assert not problems, "\n".join(problems)


def test_the_template_lists_the_messages_of_the_code():
    """`messages.pot` is what `pybabel update` brings into each catalog: it must be current."""
    with open(LOCALES / "messages.pot", "rb") as pot:
        template = {(m.id[0] if isinstance(m.id, tuple) else m.id) for m in read_po(pot) if m.id}
    assert template == set(code_messages())


def test_catalogs_ship_as_po_files_only():
    """No compiled `.mo` is kept in git (they are compiled at start), and the package data brings each `.po`
    along in a non-editable install."""
    tracked = subprocess.run(
        ["git", "ls-files", "bot/slack/locales"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    assert tracked and not [path for path in tracked if path.endswith(".mo")]
    patterns = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]["bot"]
    for path in tracked:
        inside = str(Path(path).relative_to("bot"))
        assert any(fnmatch.fnmatch(inside, pattern) for pattern in patterns), f"{path} is not package data"


def test_plurals_and_placeholders_come_from_the_catalog():
    assert translator("en").ngettext("{n} minute", "{n} minutes", 1) == "1 minute"
    assert translator("en").ngettext("{n} minute", "{n} minutes", 5) == "5 minutes"
    assert translator("ko").ngettext("{n} minute", "{n} minutes", 5) == "5분"
    assert translator("zh-TW").gettext("Answered by {user}.", user="<@U1>") == "<@U1> 已回答。"


@pytest.mark.parametrize(
    ("locale", "language"),
    [
        ("zh-TW", "zh-TW"),
        ("zh-HK", "zh-TW"),
        ("zh-CN", "zh-CN"),
        ("ko-KR", "ko"),
        ("ja-JP", "ja"),
        ("en-GB", "en"),
        ("fr-FR", "ja"),
        (None, "ja"),
        ("", "ja"),
    ],
)
def test_a_slack_locale_reads_the_nearest_shipped_language(locale, language):
    assert nearest_language(locale, default="ja") == language
