"""The Django app of idfields: add ``"idfields.django_app"`` to INSTALLED_APPS.

Fields in ``idfields.django_app.fields``; the ``IDFIELDS`` setting in ``conf``; node sources per
process in ``sources``; the lease, launch and counter tables in ``models`` and ``migrations``.
"""

# Django imports this package before its app registry is ready, so it imports nothing: the public
# names live in the modules named above (``from idfields.django_app.fields import ...``).
__all__: list[str] = []
