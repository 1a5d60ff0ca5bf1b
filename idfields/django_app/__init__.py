"""The Django app of idfields: add ``"idfields.django_app"`` to INSTALLED_APPS.

Fields in ``idfields.django_app.fields``; the ``IDFIELDS`` setting in ``conf``; node sources per
process in ``sources``; the lease, launch and counter tables in ``models`` and ``migrations``.
"""
