"""Who someone is in the workspace, as far as policies care: a person, an admin, a member of a user group.

A person is a Slack user ID (`U…`, `W…`) that `users.info` knows (not deleted, not a bot); a
user-group ID is never a person, only a list of them. Admins are the users in `BOT_ADMINS` when it is
set, else the workspace's admins and owners (`users.info`). User groups are read with
`usergroups.users.list` (scope `usergroups:read`). Answers are cached for a short time, so a burst of
clicks costs one lookup, and a change in Slack shows within `ttl` seconds.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Iterable
from typing import Any

from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bot.agent import DirectoryUnavailableError

from .tables import USER_ID as USER_ID_WIDTH
from .threads import channel_of_thread

log = logging.getLogger(__name__)

USER_ID = re.compile(r"^[UW][A-Z0-9]+$")
"""The shape of a Slack user ID; a user-group ID starts with S."""


class DirectoryError(DirectoryUnavailableError):
    """Slack could not answer a lookup; the message says which, for people (the details are logged)."""


def is_user_id(value: str) -> bool:
    """Whether `value` has the shape of a Slack user ID (says nothing of whether Slack knows it), no longer
    than the columns that store one."""
    return len(value) <= USER_ID_WIDTH and bool(USER_ID.match(value))


class Directory:
    """Slack's answer to the runtime's `bot.agent.Directory`: who is among approvers, who is an admin,
    who is in a conversation."""

    def __init__(self, client: AsyncWebClient, *, admins: Iterable[str] = (), ttl: float = 60.0):
        self.client = client
        self.admins = frozenset(admins)
        """`BOT_ADMINS`; empty: the workspace's admins and owners are the bot's admins."""
        self.ttl = ttl
        self._groups: dict[str, tuple[float, frozenset[str]]] = {}
        self._users: dict[str, tuple[float, dict[str, Any] | None]] = {}
        self._public: dict[str, tuple[float, bool]] = {}
        self._members: dict[str, tuple[float, dict[str, Any]]] = {}

    async def is_public_channel(self, channel: str) -> bool:
        """Whether `channel` is a public channel (every member of the workspace may read it), from
        `conversations.info`; a private channel, a DM, or one Slack does not describe: False."""
        cached = self._public.get(channel)
        if cached is not None and time.monotonic() - cached[0] < self.ttl:
            return cached[1]
        try:
            info = (await self.client.conversations_info(channel=channel)).get("channel") or {}
            public = bool(info) and not (info.get("is_private") or info.get("is_im") or info.get("is_mpim"))
        except Exception as exc:  # noqa: BLE001 - not known to be public: treated as private
            log.warning("conversations.info %s failed: %s", channel, exc)
            return False
        self._public[channel] = (time.monotonic(), public)
        return public

    async def in_conversation(self, person: str, thread_id: str) -> bool:
        """Whether `person` can read the conversation of `thread_id`: anyone in the workspace for a public
        channel, the person of a DM, a member of a private channel (`conversations.members`). A thread
        this adapter did not make is not Slack's to judge: True."""
        channel = channel_of_thread(thread_id)
        if channel is None:
            return True
        cached = self._members.get(channel)
        if cached is None or time.monotonic() - cached[0] >= self.ttl:
            cached = (time.monotonic(), await self._conversation(channel))
            self._members[channel] = cached
        info = cached[1]
        return bool(info["public"]) or person in info["members"]

    async def _conversation(self, channel: str) -> dict[str, Any]:
        try:
            info = (await self.client.conversations_info(channel=channel)).get("channel") or {}
            if info.get("is_im"):
                return {"public": False, "members": frozenset(filter(None, [info.get("user")]))}
            if info and not (info.get("is_private") or info.get("is_mpim")):
                return {"public": True, "members": frozenset()}
            members: set[str] = set()
            cursor = None
            while True:
                page = await self.client.conversations_members(channel=channel, cursor=cursor, limit=1000)
                members.update(page.get("members") or ())
                cursor = (page.get("response_metadata") or {}).get("next_cursor")
                if not cursor:
                    return {"public": False, "members": frozenset(members)}
        except Exception as exc:  # noqa: BLE001 - cannot tell who is in it: said so, nothing decided
            log.warning("conversations.info/members %s failed: %s", channel, exc)
            raise DirectoryError(f"Slack did not say who is in the conversation {channel}") from exc

    async def user(self, user_id: str) -> dict[str, Any] | None:
        """Slack's user object of `user_id` (`users.info`, with its `locale`), or None when Slack knows no such user."""
        if not is_user_id(user_id):
            return None
        cached = self._users.get(user_id)
        if cached is not None and time.monotonic() - cached[0] < self.ttl:
            return cached[1]
        try:
            answer = await self.client.users_info(user=user_id, include_locale=True)  # `locale`: reader_language
            user = answer.get("user") or None
        except SlackApiError as exc:
            if _error_of(exc) not in ("user_not_found", "user_not_visible"):
                log.warning("users.info %s failed: %s", user_id, exc)
                raise DirectoryError(f"Slack did not answer a lookup of the user {user_id}") from exc
            user = None
        except Exception as exc:  # noqa: BLE001 - an unknown answer is "cannot tell", and said so
            log.warning("users.info %s failed: %s", user_id, exc)
            raise DirectoryError(f"Slack did not answer a lookup of the user {user_id}") from exc
        self._users[user_id] = (time.monotonic(), user)
        return user

    def forget(self, user_id: str) -> None:
        """Look `user_id` up again next time (the playground, when a person switches their language)."""
        self._users.pop(user_id, None)

    async def is_person(self, user_id: str) -> bool:
        """Whether `user_id` names a person of the workspace: a user ID Slack knows, not deleted, not a bot."""
        user = await self.user(user_id)
        return user is not None and not user.get("deleted") and not user.get("is_bot")

    async def is_admin(self, user_id: str) -> bool:
        """Whether `user_id` may change tool policies."""
        if self.admins:
            return user_id in self.admins
        user = await self.user(user_id) or {}
        return bool(user.get("is_admin") or user.get("is_owner") or user.get("is_primary_owner"))

    async def group_members(self, group_id: str) -> frozenset[str]:
        """The user IDs of the user group `group_id`."""
        cached = self._groups.get(group_id)
        if cached is not None and time.monotonic() - cached[0] < self.ttl:
            return cached[1]
        try:
            answer = await self.client.usergroups_users_list(usergroup=group_id)
        except Exception as exc:  # noqa: BLE001
            log.warning("usergroups.users.list %s failed: %s", group_id, exc)
            raise DirectoryError(f"could not read the members of user group {group_id} from Slack") from exc
        members = frozenset(answer.get("users") or ())
        self._groups[group_id] = (time.monotonic(), members)
        return members

    async def is_among(self, user_id: str, approvers: Iterable[str]) -> bool:
        """Whether the person `user_id` is one of `approvers`' user IDs, or a member of one of its user
        groups. A group's own ID is not a member of anything: it never matches itself."""
        if not is_user_id(user_id):
            return False
        approvers = list(approvers)
        if user_id in (a for a in approvers if is_user_id(a)):
            return True
        failure: DirectoryError | None = None
        for group in (a for a in approvers if a.startswith("S")):
            try:
                if user_id in await self.group_members(group):
                    return True
            except DirectoryError as exc:
                failure = exc
        if failure is not None:
            raise failure  # not found in the groups we could read, and one we could not: cannot tell
        return False


def _error_of(exc: SlackApiError) -> str | None:
    """Slack's `error` code in a failed answer; None when the answer was not Slack's JSON (a proxy's page,
    an HTTP error with a text body)."""
    data = exc.response.data if exc.response is not None else None
    return data.get("error") if isinstance(data, dict) else None
