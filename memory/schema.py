"""Which tables a package owns and where its Alembic migrations live; applying them.

Every package that keeps tables in the bot's database (the runtime here in `memory`, the Slack
adapter, the demo, the playground) declares one `Schema`: its name, its folder of revision files,
and the SQLAlchemy `MetaData` of its tables. `Storage.migrate(*schemas)` brings the runtime's tables
up to date and then those of the schemas it is given, so a user of the runtime alone gets only the
runtime's tables. Adding a package is one line in its `migrations/__init__.py`:

    SCHEMA = Schema("playground", Path(__file__).parent / "versions", PlaygroundTable.metadata)

Each package keeps its own version table (`alembic_version_<name>`; the runtime keeps Alembic's
`alembic_version`, which databases made by v0.1.0 already have). Alembic supports this directly
(`version_table` in `context.configure`), and it keeps packages independent. The alternative, one
shared version table with a branch label per package, would oblige every process that migrates to
load every package's revision files: Alembic refuses a version table naming a revision it cannot
locate, so a runtime-only user (who never imports `bot`) could not migrate a database the bot also
uses. With one version table per package, each package's history is a plain linear chain that
only its own revisions touch.

All packages share one Alembic environment (`memory/migrations/env.py`) and one revision template;
a package contributes only its `versions/` folder.

Alembic is imported only to change a database: a process that finds every version table at its
package's head (`head()` reads the revision files' `revision = ...` lines, as the template writes them)
starts without it, which spares each start of the bot about 0.2 s of CPU.

Imports nothing from `bot`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy import MetaData

if TYPE_CHECKING:
    from alembic.config import Config
    from sqlalchemy import Connection

ENVIRONMENT = Path(__file__).parent / "migrations"
"""The Alembic environment (`env.py`, `script.py.mako`) every package's migrations run in."""


@dataclass(frozen=True)
class Schema:
    """One package's tables and the migrations that create and change them."""

    name: str
    """Short name of the owning package (`runtime`, `slack`, `demo`); names its version table."""
    versions: Path
    """The folder of this package's revision files: one linear chain, one head."""
    metadata: MetaData = field(compare=False, repr=False)
    """The package's tables as SQLAlchemy models (tests compare the migrated database with them)."""
    version_table: str = ""
    """Where Alembic records this package's revision; default `alembic_version_<name>`."""

    def __post_init__(self) -> None:
        if not self.version_table:
            object.__setattr__(self, "version_table", f"alembic_version_{self.name}")

    def config(self, connection: Connection | None = None) -> Config:
        """An Alembic `Config` for this package alone (run on `connection` when one is given)."""
        from alembic.config import Config

        config = Config()
        config.set_main_option("script_location", str(ENVIRONMENT))
        config.set_main_option("path_separator", "os")  # one folder, whatever characters its path holds
        config.set_main_option("version_locations", str(self.versions))
        config.attributes["version_table"] = self.version_table
        config.attributes["target_metadata"] = self.metadata
        if connection is not None:
            config.attributes["connection"] = connection
        return config

    def head(self) -> str:
        """The id of this package's newest revision: the one no other revision names as its `down_revision`.
        Read from the files' text, not by loading them through Alembic (`tests/migrations` checks both agree),
        once per process."""
        if self.versions in _HEADS:
            return _HEADS[self.versions]
        revisions: dict[str, str | None] = {}
        for path in self.versions.glob("*.py"):
            text = path.read_text(encoding="utf-8")
            revision, down = _REVISION.search(text), _DOWN_REVISION.search(text)
            if revision is None or down is None:
                raise RuntimeError(f"{path} does not say its revision and down_revision as the template writes them")
            revisions[revision.group(1)] = down.group(2)
        heads = sorted(set(revisions) - set(revisions.values()))
        if len(heads) != 1:
            raise RuntimeError(f"the {self.name} migrations must form one chain, found heads {heads}")
        _HEADS[self.versions] = heads[0]
        return heads[0]

    def new_revision(self, message: str) -> Path:
        """Write an empty revision file after the current head (`slack_0002_<slug>.py`); returns its path."""
        from alembic import command
        from alembic.script import ScriptDirectory

        heads = ScriptDirectory.from_config(self.config()).get_heads()
        number = re.search(r"\d+", self.head()) if heads else None
        if number:  # 0003_policies -> 0004, slack_0001 -> slack_0002
            revision_id = f"{self.head()[: number.start()]}{int(number.group()) + 1:0{len(number.group())}d}"
        else:
            revision_id = f"{self.name}_0001"
        script = command.revision(self.config(), message, rev_id=revision_id)
        _HEADS.pop(self.versions, None)  # the new file is the head now
        assert script is not None and not isinstance(script, list), "one revision file for one package"
        return Path(script.path)

    def upgrade(self, connection: Connection) -> None:
        """Apply this package's revisions that `connection`'s database lacks (a sync connection)."""
        from alembic import command

        command.upgrade(self.config(connection), "head")


_HEADS: dict[Path, str] = {}
"""Each versions folder's head, as `Schema.head` found it."""
_REVISION = re.compile(r'^revision = "([^"]+)"', re.MULTILINE)
_DOWN_REVISION = re.compile(r'^down_revision = (None|"([^"]+)")', re.MULTILINE)


__all__ = ["ENVIRONMENT", "Schema"]
