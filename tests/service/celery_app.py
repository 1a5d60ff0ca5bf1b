"""A Celery app as the worker test runs it (``celery -A celery_app worker``), configured by the
environment like ``service_app`` plus ``IDFIELDS_CELERY_URL`` (a Redis URL: broker and results).

The recipe under test: each pool process sets up its leases when it starts
(``worker_process_init``) and gives its nodes back when it stops (``worker_process_shutdown``):
billiard ends its pool processes with ``os._exit``, so ``atexit`` never runs there.
"""

from __future__ import annotations

import os
from typing import Any

import sqlalchemy as sa
from celery import Celery
from celery.signals import worker_process_init, worker_process_shutdown
from service_app import LAYOUT, URL, served

from idfields.coordination import LeaseSource
from idfields.shutdown import release_nodes
from idfields.sqlalchemy_ext import SQLAlchemyDatabase, configure
from idfields.sqlalchemy_ext._coordination import sync_url

app = Celery("celery_app", broker=os.environ["IDFIELDS_CELERY_URL"])
app.conf.result_backend = os.environ["IDFIELDS_CELERY_URL"]


@worker_process_init.connect
def lease_in_this_process(**kwargs: Any) -> None:
    engine = sa.create_engine(sync_url(URL))
    configure(source=LeaseSource(SQLAlchemyDatabase(engine)), layouts=[LAYOUT])


@worker_process_shutdown.connect
def give_nodes_back(**kwargs: Any) -> None:
    release_nodes()


@app.task(name="celery_app.new_id")
def new_id() -> str:
    return served()
