"""The Alembic environment every package's migrations run in (see `memory.schema`).

`Schema.upgrade` hands over the connection (inside `Storage.migrate`'s locked transaction), the
package's version table and its tables' metadata.
"""

from alembic import context

config = context.config
context.configure(
    connection=config.attributes["connection"],
    target_metadata=config.attributes.get("target_metadata"),
    version_table=config.attributes["version_table"],
    render_as_batch=True,
)
with context.begin_transaction():
    context.run_migrations()
