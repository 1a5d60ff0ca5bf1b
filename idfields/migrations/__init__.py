"""Migration support: Django operations in ``idfields.migrations.django``, Alembic operations in
``idfields.migrations.alembic``, and the conversion plans both use in ``convert``.

Import only the submodule of the tool you use: this package imports neither Django nor Alembic.
"""

# Nothing here: the public names live in the submodule of each tool.
__all__: list[str] = []
