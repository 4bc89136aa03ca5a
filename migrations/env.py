"""Alembic environment for seqbench. Configured in code by seqbench.store.migrate; there is no
alembic.ini. Runs online only, on the connection that seqbench hands over."""

from alembic import context

from seqbench.store.migrate import VERSION_TABLE
from seqbench.store.schema import Base

config = context.config
connection = config.attributes["connection"]

context.configure(
    connection=connection,
    target_metadata=Base.metadata,
    version_table=VERSION_TABLE,
    # SQLite cannot ALTER most things; batch mode rebuilds tables instead.
    render_as_batch=connection.dialect.name == "sqlite",
    compare_type=True,
)
with context.begin_transaction():
    context.run_migrations()
