"""The bot's own words in the reader's language: gettext catalogs (`locales/<lang>/LC_MESSAGES/messages.po`),
compiled in memory with Babel when first used, and the `Translator` the pure builders take.

English is the source language of the code: a message id is the English text, with named placeholders
(`"Approved by {user}"`), and every other language is a catalog. Plurals come from the catalog's own rule
(`ngettext`), so no sentence is glued together from pieces. No `.mo` file is kept in git: the `.po` files
are read at start, and one `Translator` per language is kept for the life of the process.

What a tool or the model wrote is never passed through a catalog; it is a placeholder's value.
"""

from __future__ import annotations

import gettext
import io
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from babel.messages.mofile import write_mo
from babel.messages.pofile import read_po

from bot.defaults import DEFAULT_LANGUAGE, SHIPPED_LANGUAGES
from memory import Worded

LOCALES = Path(__file__).parent / "locales"
"""Where the catalogs are: `<folder>/LC_MESSAGES/messages.po` per language, and `messages.pot`."""
DOMAIN = "messages"

LANGUAGES = {language: language.replace("-", "_") for language in SHIPPED_LANGUAGES}
"""The shipped languages (as `BOT_LANGUAGE` names them) and the folder of each one's catalog."""

_TRADITIONAL = ("tw", "hk", "mo", "hant")
"""A Chinese locale with one of these (region or script) reads Traditional characters."""


@dataclass(frozen=True)
class Translator:
    """The words of one language. `gettext("Approved by {user}", user=...)` and
    `ngettext("{n} approval", "{n} approvals", n)` give the catalog's text with the values put in."""

    language: str
    """One of `LANGUAGES`."""
    catalog: gettext.NullTranslations = field(repr=False, compare=False)

    def gettext(self, message: str, /, **values: Any) -> str:
        text = self.catalog.gettext(message)
        return text.format(**values) if values else text

    def said(self, error: Worded) -> str:
        """An error's one line (a policy check's, an admin command's) in this language: its English
        `template` looked up in the catalog, its values put in."""
        return self.gettext(error.template, **error.values)

    def ngettext(self, singular: str, plural: str, n: int, /, **values: Any) -> str:
        """The form of `n` the language's plural rule picks; `{n}` is `n` unless given."""
        return self.catalog.ngettext(singular, plural, n).format(**{"n": n, **values})


def nearest_language(locale: str | None, default: str = DEFAULT_LANGUAGE) -> str:
    """The shipped language nearest to a Slack locale (`zh-TW`, `ko-KR`, `en-GB`, ...): Chinese of Taiwan,
    Hong Kong and Macau (or `Hant`) reads zh-TW, any other Chinese zh-CN; otherwise the same language.
    `default` when Slack gave none or none is near."""
    if not locale:
        return default
    parts = locale.replace("_", "-").lower().split("-")
    if parts[0] == "zh":
        return "zh-TW" if any(part in _TRADITIONAL for part in parts[1:]) else "zh-CN"
    for language in LANGUAGES:
        if language.lower() == parts[0]:
            return language
    return default


def translator(language: str) -> Translator:
    """The `Translator` of a shipped language (`LANGUAGES`); an unknown one is a `KeyError`."""
    return _translator(language)


@cache
def _translator(language: str) -> Translator:
    return Translator(language, _compile(LANGUAGES[language]))


def _compile(folder: str) -> gettext.GNUTranslations:
    """Read a `.po` file and compile it in memory: gettext reads only the binary `.mo` form."""
    with open(LOCALES / folder / "LC_MESSAGES" / f"{DOMAIN}.po", "rb") as po:
        catalog = read_po(po, locale=folder)
    compiled = io.BytesIO()
    write_mo(compiled, catalog, use_fuzzy=False)
    compiled.seek(0)
    return gettext.GNUTranslations(compiled)


def N_(message: str) -> str:  # noqa: N802 - gettext's own name for it, which Babel's extractor knows
    """Mark `message` for the catalogs where it is written (a table of words); it is translated where shown."""
    return message
