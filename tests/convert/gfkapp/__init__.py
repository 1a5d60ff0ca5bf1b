"""A stand-in for a third-party app (django-taggit's shape): a GenericForeignKey whose
``object_id`` is a PositiveIntegerField, with migrations of its own that we do not fork."""
