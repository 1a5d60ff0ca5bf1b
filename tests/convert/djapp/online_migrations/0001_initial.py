"""The same initial schema as the in-place path's."""

from importlib import import_module

Migration = import_module("tests.convert.djapp.migrations.0001_initial").Migration
