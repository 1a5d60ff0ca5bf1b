"""Migration support: Alembic operations in ``idfields.migrations.alembic``.

Import only the submodule of the tool you use: this package imports neither Django nor Alembic.
"""
