"""The directory methods of the Web API: who the bot is (auth.test), people and user groups, and
conversations (info, members, replies, history)."""

from __future__ import annotations

from typing import Any

from .checks import Answer, ApiMethods, SlackError, page_of, required
from .workspace import APP_ID, BOT_ID, BOT_USER_ID, TEAM_ID, TEAM_NAME


class DirectoryMethods(ApiMethods):
    def auth_test(self, p: dict[str, Any]) -> Answer:
        return {
            "ok": True,
            "url": "http://playground.local/",
            "team": TEAM_NAME,
            "user": "bot",
            "team_id": TEAM_ID,
            "user_id": BOT_USER_ID,
            "bot_id": BOT_ID,
            "app_id": APP_ID,
            "is_enterprise_install": False,
        }

    def users_info(self, p: dict[str, Any]) -> Answer:
        person = self.workspace.people.get(str(p.get("user") or ""))
        if person is None:
            raise SlackError("user_not_found")
        include_locale = str(p.get("include_locale") or "").lower() in ("1", "true")
        return {"ok": True, "user": person.to_json(include_locale=include_locale)}

    def usergroups_users_list(self, p: dict[str, Any]) -> Answer:
        group = self.workspace.usergroups.get(str(p.get("usergroup") or ""))
        if group is None:
            raise SlackError("no_such_subteam")
        return {"ok": True, "users": list(group.users)}

    def conversations_info(self, p: dict[str, Any]) -> Answer:
        channel = self.workspace.channels[self._channel(p, member=False)]
        info: dict[str, Any] = {"id": channel.id, "name": channel.name, "is_im": channel.is_im}
        info.update({"is_channel": not channel.is_im, "is_member": True, "is_private": channel.is_private})
        if channel.is_im:
            info["user"] = next(m for m in channel.members if m != BOT_USER_ID)
        return {"ok": True, "channel": info}

    def conversations_members(self, p: dict[str, Any]) -> Answer:
        """The members of a channel; one that lists none is open to every person of the workspace."""
        channel = self.workspace.channels[self._channel(p, member=False)]
        members = list(channel.members) or [person.id for person in self.workspace.people.values()]
        return {"ok": True, "members": members, "response_metadata": {"next_cursor": ""}}

    def conversations_open(self, p: dict[str, Any]) -> Answer:
        """The bot's DM with one person (`users`: their ID); a group DM of several is not emulated."""
        users = [user for user in str(p.get("users") or "").split(",") if user]
        if not users:
            raise SlackError("users_list_not_supplied")
        if len(users) > 1:
            raise SlackError("not_supported")
        dm = self.workspace.dm_of(users[0])
        if dm is None:
            raise SlackError("user_not_found")
        return {"ok": True, "channel": {"id": dm.id}}

    def conversations_replies(self, p: dict[str, Any]) -> Answer:
        channel = self._channel(p)
        ts = required(p, "ts")
        messages = self.workspace.thread(channel, ts)
        if not messages or messages[0].ts != ts:
            raise SlackError("thread_not_found")
        return page_of([m.to_api() for m in messages], p)

    def conversations_history(self, p: dict[str, Any]) -> Answer:
        channel = self._channel(p)
        top = [
            m
            for m in self.workspace.messages.values()
            if m.channel == channel and m.thread_ts in (None, m.ts) and m.ephemeral_to is None
        ]
        top.sort(key=lambda m: float(m.ts), reverse=True)
        return page_of([m.to_api() for m in top], p)
