"""The bot: the agent runtime (`bot.agent`) and the adapters over it (Slack, HTTP API, playground, command line)."""
