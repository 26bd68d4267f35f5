"""services.judging_turn: one task at a time decides what a decompose chunk sends to the judge
(pages read at the same moment once each sent a half-full call). Real threads, each with its
own database connection, on SQLite and on PostgreSQL (scripts/test.sh runs this file on both)."""

import threading
import time

import pytest
from django.db import connection

from verification import services

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_second_caller_for_the_same_chunk_waits_until_the_first_is_done():
    events: list[str] = []
    first_inside = threading.Event()
    release = threading.Event()

    def first():
        try:
            with services.judging_turn(41):
                events.append("first in")
                first_inside.set()
                release.wait(10)
                events.append("first out")
        finally:
            connection.close()

    def second():
        try:
            first_inside.wait(10)
            with services.judging_turn(41):
                events.append("second in")
        finally:
            connection.close()

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for thread in threads:
        thread.start()
    first_inside.wait(10)
    time.sleep(0.5)  # the second caller has had time to get in, were it not held back
    release.set()
    for thread in threads:
        thread.join(15)

    assert events == ["first in", "first out", "second in"]
