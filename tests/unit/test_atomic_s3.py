# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The S3 test server decides conditional writes one at a time, as S3 does: the lock tests
on S3 prove the protocol only if two creates of one lock can never both win."""

from __future__ import annotations

import io
import threading
import time

from atomic_s3 import one_change_at_a_time

CONTENDERS = 8


class CheckThenStore:
    """A WSGI application that, like moto, checks that a key is absent and stores it later,
    with a `pause` in between (by default wide enough for every contender to pass the check)."""

    def __init__(self, pause=lambda: time.sleep(0.05)):
        self.stored: dict = {}
        self.pause = pause

    def __call__(self, environ, start_response):
        key = environ["PATH_INFO"]
        if environ["REQUEST_METHOD"] == "GET":
            start_response("200 OK", [])
            return [self.stored.get(key, b"")]
        if key in self.stored:
            start_response("412 Precondition Failed", [])
            return [b""]
        self.pause()
        self.stored[key] = environ["wsgi.input"].read()
        start_response("200 OK", [])
        return [b""]


def change(method: str, path: str, body: bytes, stream=None) -> dict:
    return {"REQUEST_METHOD": method, "PATH_INFO": path, "CONTENT_LENGTH": str(len(body)),
            "wsgi.input": stream or io.BytesIO(body)}


def creates(app, method="PUT") -> list:
    """Each contender's status for one create of the same key, all sent at once."""
    statuses = []
    start = threading.Barrier(CONTENDERS)

    def contend(name):
        start.wait()
        app(change(method, "/bucket/.distributor.lock", name), lambda status, _headers: statuses.append(status))

    threads = [threading.Thread(target=contend, args=(b"run %d" % i,)) for i in range(CONTENDERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return statuses


def test_unserialised_a_check_then_store_lets_several_creates_win():
    """Every contender waits inside the window until all have passed the check: all win."""
    assert creates(CheckThenStore(threading.Barrier(CONTENDERS, timeout=10).wait)).count("200 OK") == CONTENDERS


def test_one_change_at_a_time_lets_exactly_one_create_win():
    for method in ("PUT", "POST", "DELETE"):
        statuses = creates(one_change_at_a_time(CheckThenStore()), method)
        assert statuses.count("200 OK") == 1, (method, statuses)
        assert statuses.count("412 Precondition Failed") == CONTENDERS - 1


def test_a_read_is_answered_while_a_change_is_under_way():
    checked, finish = threading.Event(), threading.Event()
    app = CheckThenStore(lambda: (checked.set(), finish.wait(10)))
    served = one_change_at_a_time(app)
    writer = threading.Thread(target=served, args=(change("PUT", "/bucket/key", b"x"), lambda *_: None))
    writer.start()
    assert checked.wait(10)
    statuses = []
    served({"REQUEST_METHOD": "GET", "PATH_INFO": "/bucket/key"}, lambda status, _headers: statuses.append(status))
    assert statuses == ["200 OK"] and "/bucket/key" not in app.stored, "the read was answered before the write ended"
    finish.set()
    writer.join()


class SlowBody(io.RawIOBase):
    """A request body whose client sends nothing until `sent` is set."""

    def __init__(self, body: bytes, sent: threading.Event):
        self.body, self.sent = io.BytesIO(body), sent
        self.reading = threading.Event()

    def readable(self):
        return True

    def readinto(self, buffer):
        self.reading.set()
        self.sent.wait(10)
        return self.body.readinto(buffer)


def test_a_change_whose_body_is_still_arriving_holds_up_no_other_and_is_stored_whole():
    app = CheckThenStore(pause=lambda: None)
    served = one_change_at_a_time(app)
    sent = threading.Event()
    body = SlowBody(b"a" * 100000, sent)
    slow = threading.Thread(target=served, args=(change("PUT", "/bucket/slow", b"a" * 100000, io.BufferedReader(body)), lambda *_: None))
    slow.start()
    assert body.reading.wait(10)
    statuses = []
    served(change("PUT", "/bucket/quick", b"quick"), lambda status, _headers: statuses.append(status))
    assert statuses == ["200 OK"] and app.stored == {"/bucket/quick": b"quick"}
    sent.set()
    slow.join()
    assert app.stored["/bucket/slow"] == b"a" * 100000
