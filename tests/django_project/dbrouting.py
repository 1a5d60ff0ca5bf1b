"""Requests of the test client pick their database: header ``X-Test-Db: mysql`` routes every
query of that request to that alias, so one view is tested on each backend."""

from __future__ import annotations

from collections.abc import Callable
from contextvars import ContextVar
from typing import Any

from django.http import HttpRequest, HttpResponse

_alias: ContextVar[str | None] = ContextVar("test_db_alias", default=None)


class HeaderRouter:
    def db_for_read(self, model: type, **hints: Any) -> str | None:
        return _alias.get()

    db_for_write = db_for_read


def use_header_database(get_response: Callable[[HttpRequest], HttpResponse]) -> Any:
    def middleware(request: HttpRequest) -> HttpResponse:
        token = _alias.set(request.headers.get("X-Test-Db"))
        try:
            return get_response(request)
        finally:
            _alias.reset(token)

    return middleware
