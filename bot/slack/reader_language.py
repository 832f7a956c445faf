"""Whose language the bot writes in: a person's (their Slack locale now) for what they see alone (the Home, a
modal, an ephemeral message, a DM copy), and a conversation's (its starter's, fixed when the bot first writes
in the thread) for every message in a thread, so a thread never switches language halfway.

A person's locale is `users.info`'s `locale` (asked with `include_locale`, cached with the other lookups of
`directory`), mapped to the nearest shipped catalog (`translator.nearest_language`); `BOT_LANGUAGE` when Slack
gives none, the bot has none near it, or Slack cannot be asked.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict

from .directory import Directory, DirectoryError
from .stores import Conversations
from .tables import SlackConversationRow
from .translator import DEFAULT_LANGUAGE, LANGUAGES, Translator, nearest_language, translator

_KEPT_THREADS = 10_000
"""Conversations whose fixed language this process remembers (a language, once fixed, never changes)."""


class ReaderLanguages:
    def __init__(self, directory: Directory | None, conversations: Conversations, *, default: str = DEFAULT_LANGUAGE):
        self.directory = directory
        self.conversations = conversations
        self.default = default
        """`BOT_LANGUAGE`: one of `translator.LANGUAGES`."""
        self._threads: OrderedDict[str, str] = OrderedDict()

    async def language_of_person(self, user_id: str | None) -> str:
        """The shipped language nearest to `user_id`'s Slack locale now, else the default."""
        if not user_id or self.directory is None:
            return self.default
        try:
            user = await self.directory.user(user_id)
        except DirectoryError:
            return self.default
        return nearest_language((user or {}).get("locale"), self.default)

    async def of_person(self, user_id: str | None, *, within: float | None = None) -> Translator:
        """The words of what `user_id` sees alone. `within`: seconds Slack may take to say (before an ack);
        the default language after that."""
        if within is None:
            return translator(await self.language_of_person(user_id))
        try:
            async with asyncio.timeout(within):
                return translator(await self.language_of_person(user_id))
        except TimeoutError:
            return translator(self.default)

    async def of_thread(
        self, thread_id: str, starter: str | None, *, conversation: SlackConversationRow | None = None
    ) -> Translator:
        """The words of the bot's messages in `thread_id`: the language the conversation was fixed to, or, the
        first time, its starter's now, which it keeps from then on. `starter`: who started it, as far as the
        caller knows (the conversation's own record wins); a thread the bot holds no conversation in (one the
        HTTP API alone acts on) is in `starter`'s language, not fixed. `conversation`: the thread's record as
        the caller read it (a turn reads it when it starts), not read again."""
        language = self._threads.get(thread_id)
        if language is None:
            if conversation is None or conversation.thread_id != thread_id:
                conversation = await self.conversations.get_by_id(thread_id)
            if conversation is None:
                return await self.of_person(starter)
            language = conversation.language
            if language is None:
                wanted = await self.language_of_person(conversation.started_by or starter)
                language = await self.conversations.keep_language(thread_id, wanted) or wanted
            self._remember(thread_id, language)
        return translator(language if language in LANGUAGES else self.default)

    async def wanted_for(self, thread_id: str, starter: str) -> str | None:
        """The language to record with the conversation `starter` starts (or continues) in `thread_id`, when
        its turn starts, so that `of_thread` need not fix it in a write of its own: `starter`'s now; None
        when this process knows the thread's language already (the record keeps a language it has)."""
        return None if thread_id in self._threads else await self.language_of_person(starter)

    def _remember(self, thread_id: str, language: str) -> None:
        self._threads[thread_id] = language
        self._threads.move_to_end(thread_id)
        while len(self._threads) > _KEPT_THREADS:
            self._threads.popitem(last=False)
