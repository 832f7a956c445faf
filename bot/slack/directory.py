"""Who someone is in the workspace, as far as policies care: an admin, a member of a user group.

Admins are the users in `BOT_ADMINS` when it is set, else the workspace's admins and owners
(`users.info`). User groups are read with `usergroups.users.list` (scope `usergroups:read`). Both are
cached for a short time, so a burst of clicks costs one lookup, and a change in Slack shows within
`ttl` seconds.
"""

from __future__ import annotations

import time
from collections.abc import Iterable

from slack_sdk.web.async_client import AsyncWebClient


class DirectoryError(RuntimeError):
    """Slack could not answer a lookup; the message says which and why."""


class Directory:
    def __init__(self, client: AsyncWebClient, *, admins: Iterable[str] = (), ttl: float = 60.0):
        self.client = client
        self.admins = frozenset(admins)
        """`BOT_ADMINS`; empty: the workspace's admins and owners are the bot's admins."""
        self.ttl = ttl
        self._groups: dict[str, tuple[float, frozenset[str]]] = {}
        self._admin_flags: dict[str, tuple[float, bool]] = {}

    async def is_admin(self, user_id: str) -> bool:
        """Whether `user_id` may change tool policies."""
        if self.admins:
            return user_id in self.admins
        cached = self._admin_flags.get(user_id)
        if cached is not None and time.monotonic() - cached[0] < self.ttl:
            return cached[1]
        try:
            answer = await self.client.users_info(user=user_id)
        except Exception as exc:  # noqa: BLE001 - an unknown answer is "no", and said so
            raise DirectoryError(f"could not look up <@{user_id}> in Slack ({exc})") from exc
        user = answer.get("user") or {}
        flag = bool(user.get("is_admin") or user.get("is_owner") or user.get("is_primary_owner"))
        self._admin_flags[user_id] = (time.monotonic(), flag)
        return flag

    async def group_members(self, group_id: str) -> frozenset[str]:
        """The user IDs of the user group `group_id`."""
        cached = self._groups.get(group_id)
        if cached is not None and time.monotonic() - cached[0] < self.ttl:
            return cached[1]
        try:
            answer = await self.client.usergroups_users_list(usergroup=group_id)
        except Exception as exc:  # noqa: BLE001
            raise DirectoryError(f"could not read the members of user group {group_id} from Slack ({exc})") from exc
        members = frozenset(answer.get("users") or ())
        self._groups[group_id] = (time.monotonic(), members)
        return members

    async def is_among(self, user_id: str, approvers: Iterable[str]) -> bool:
        """Whether `user_id` is one of `approvers` (user IDs), or a member of one of them (group IDs)."""
        approvers = list(approvers)
        if user_id in approvers:
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
