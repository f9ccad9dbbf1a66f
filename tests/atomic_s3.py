# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""moto's S3 server, with S3's conditional writes as atomic as S3 makes them.

S3 decides between conditional writes to one key itself: of two `If-None-Match: *` creates, the
first to finish wins and the other gets 412. The lock protocol (storage/lease.py) relies on
that. moto checks the condition and then stores, as separate steps, on a threaded server: two
creates of one lock that arrive together can both pass the check and both succeed (measured on
moto 5.2.6: two contenders creating 200 keys in step, one key won twice), so two publishers
each believe they hold the lock and the later one's record silently replaces the earlier's.

This serves moto's own application, unchanged, with every request that changes storage run one
at a time, so moto's check and its store are one step, as on S3. Reads still run concurrently.
Run as `python atomic_s3.py HOST PORT`.
"""

from __future__ import annotations

import io
import sys
import threading

from werkzeug.wsgi import get_input_stream

CHANGES = frozenset(("PUT", "POST", "DELETE"))


def one_change_at_a_time(app):
    """`app` (a WSGI application) with no two requests that change storage running at once.
    moto's view has stored the object by the time it returns, so the lock covers check and store.
    The body is read before the lock is taken: a client sending slowly (or waiting on `100
    Continue`, or through the benchmarks' latency proxy) must not hold up every other change."""
    lock = threading.Lock()

    def serve(environ, start_response):
        if environ["REQUEST_METHOD"] not in CHANGES:
            return app(environ, start_response)
        environ["wsgi.input"] = io.BytesIO(get_input_stream(environ).read())
        with lock:
            return app(environ, start_response)

    return serve


def main(host: str, port: str) -> None:
    from moto.moto_server.werkzeug_app import DomainDispatcherApplication, MotoRequestHandler, create_backend_app
    from werkzeug.serving import run_simple

    run_simple(host, int(port), one_change_at_a_time(DomainDispatcherApplication(create_backend_app)),
               threaded=True, request_handler=MotoRequestHandler)


if __name__ == "__main__":
    main(*sys.argv[1:])
