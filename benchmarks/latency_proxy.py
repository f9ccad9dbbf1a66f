# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A TCP proxy on 127.0.0.1 that gives a loopback server an internet's latency.

    python benchmarks/latency_proxy.py --target 127.0.0.1:PORT [--delay-ms 20] [--hold-ms 0] [--log-requests PATH]

Every chunk a client sends is held `--delay-ms` after it arrives, then forwarded to the target
in order; replies come back at once. So each request costs one delay more than on loopback, as
a server that far away would, while requests on different connections (or pipelined on one)
overlap like they would on a real network: a delay line, not a bandwidth limit. `--hold-ms`
holds each new connection that long before the target sees it (a server slow to answer), the
same for every connection however many arrive at once. It prints the port it listens on, on
one line (with `--log-accepts` then the epoch time of each connection it accepts, `accepted
<time>`), and serves until killed. It runs in a process of its own so that its CPU is never
counted as the client's.

With `--log-requests` it reads the HTTP/1.1 requests it forwards (not a server of its own: only
where each request ends, by Content-Length or chunked framing) and appends one JSON line per
request to PATH: the epoch times its first byte arrived (`sent`), an interim `100 Continue`
came back (`continued`, when the client asked for one) and the reply's first byte came back
(`answered`), the connection's number, the method, the target and the request headers that say
what kind of S3 request it is. A client on HTTP/1.1 without pipelining waits for each reply
before its next request on that connection, so the time from `sent` to `answered` is the
request's time in flight. s3_latency.py counts requests per phase and step from it.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import sys
import time

CHUNK = 64 * 1024
# The request headers logged: what tells one S3 request from another of the same method and key.
LOGGED_HEADERS = ("host", "if-match", "if-none-match", "range", "x-amz-copy-source", "expect", "content-length")


class RequestLog:
    """The requests of one connection as they pass, written to `out` once each is answered."""

    def __init__(self, out, connection: int):
        self.out = out
        self.connection = connection
        self.buffer = b""
        self.left = 0  # body bytes of the current request still to come; -1: chunked
        self.pending: list = []  # logged requests not yet answered, oldest first

    def client_bytes(self, data: bytes) -> None:
        """Find where requests start in what the client sends; note each as it starts."""
        self.buffer += data
        while self.buffer:
            if self.left > 0:
                taken = min(self.left, len(self.buffer))
                self.buffer, self.left = self.buffer[taken:], self.left - taken
            elif self.left < 0:
                if not self._chunk():
                    return
            else:
                end = self.buffer.find(b"\r\n\r\n")
                if end < 0:
                    return
                head, self.buffer = self.buffer[:end].decode("latin-1"), self.buffer[end + 4:]
                self._request(head)

    def _request(self, head: str) -> None:
        line, *fields = head.split("\r\n")
        method, target = (line.split(" ") + ["", ""])[:2]
        headers = {}
        for field in fields:
            name, _colon, value = field.partition(":")
            headers[name.strip().lower()] = value.strip()
        self.pending.append({"sent": time.time(), "connection": self.connection, "method": method, "target": target,
                             "headers": {k: headers[k] for k in LOGGED_HEADERS if k in headers}})
        if "chunked" in headers.get("transfer-encoding", "").lower():
            self.left = -1
        else:
            self.left = int(headers.get("content-length") or 0)

    def _chunk(self) -> bool:
        """Skip one chunk of a chunked body (False: not all of it is here yet)."""
        end = self.buffer.find(b"\r\n")
        if end < 0:
            return False
        size = int(self.buffer[:end].split(b";")[0], 16)
        if size == 0:
            trailer = self.buffer.find(b"\r\n\r\n", end)
            if trailer < 0 and self.buffer[end:end + 4] != b"\r\n\r\n":
                return False
            self.buffer, self.left = self.buffer[max(trailer, end) + 4:], 0
            return True
        if len(self.buffer) < end + 2 + size + 2:
            return False
        self.buffer = self.buffer[end + 2 + size + 2:]
        return True

    def server_bytes(self, data: bytes) -> None:
        """The first bytes after a request are its reply (or an interim 100 Continue)."""
        waiting = next((r for r in self.pending if "answered" not in r), None)
        if waiting is None:
            return
        if data.startswith(b"HTTP/1.1 100") and "continued" not in waiting:
            waiting["continued"] = time.time()
            return
        waiting["answered"] = time.time()
        self.flush()

    def flush(self) -> None:
        """Write the requests answered so far, oldest first."""
        while self.pending and "answered" in self.pending[0]:
            self.out.write(json.dumps(self.pending.pop(0)) + "\n")
        self.out.flush()

    def close(self) -> None:
        """The connection is gone: its unanswered requests are logged with `answered` null."""
        for request in self.pending:
            request.setdefault("answered", None)
        self.flush()


async def _delayed(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, delay: float, log: RequestLog | None) -> None:
    """Client to server: each chunk released `delay` seconds after it was read, in order."""
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue = asyncio.Queue()

    async def release() -> None:
        while True:
            due, data = await queue.get()
            wait = due - loop.time()
            if wait > 0:
                await asyncio.sleep(wait)
            if not data:
                break
            writer.write(data)
            await writer.drain()

    releasing = asyncio.ensure_future(release())
    try:
        while True:
            data = await reader.read(CHUNK)
            if log is not None:
                log.client_bytes(data)
            queue.put_nowait((loop.time() + delay, data))
            if not data:
                break
        await releasing
    finally:
        releasing.cancel()
        _close(writer)


async def _direct(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, log: RequestLog | None) -> None:
    """Server to client: as it comes."""
    try:
        while True:
            data = await reader.read(CHUNK)
            if not data:
                break
            if log is not None:
                log.server_bytes(data)
            writer.write(data)
            await writer.drain()
    finally:
        _close(writer)


def _close(writer: asyncio.StreamWriter) -> None:
    try:
        writer.close()
    except (OSError, RuntimeError):
        pass


async def serve(target_host: str, target_port: int, delay: float, hold: float = 0.0, log: bool = False,
                requests=None) -> None:
    """Accept on an ephemeral port of 127.0.0.1, print it, forward every connection; log the
    requests to the open file `requests` when given."""
    numbers = itertools.count(1)

    async def connection(client_reader, client_writer):
        if log:
            print("accepted %.3f" % time.time(), flush=True)
        await asyncio.sleep(hold)
        try:
            server_reader, server_writer = await asyncio.open_connection(target_host, target_port)
        except OSError:
            _close(client_writer)
            return
        seen = RequestLog(requests, next(numbers)) if requests is not None else None
        try:
            await asyncio.gather(_delayed(client_reader, server_writer, delay, seen), _direct(server_reader, client_writer, seen),
                                 return_exceptions=True)
        finally:
            if seen is not None:
                seen.close()

    server = await asyncio.start_server(connection, "127.0.0.1", 0)
    print(server.sockets[0].getsockname()[1], flush=True)
    async with server:
        await server.serve_forever()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--target", required=True, help="host:port of the server to forward to")
    parser.add_argument("--delay-ms", type=float, default=20.0, help="hold of each client chunk (default 20)")
    parser.add_argument("--hold-ms", type=float, default=0.0, help="hold of each new connection (default 0)")
    parser.add_argument("--log-accepts", action="store_true", help="print the time of each connection accepted")
    parser.add_argument("--log-requests", metavar="PATH", help="append a JSON line per HTTP request forwarded")
    args = parser.parse_args(argv)
    host, _colon, port = args.target.rpartition(":")
    requests = open(args.log_requests, "a", encoding="utf-8") if args.log_requests else None  # pylint: disable=consider-using-with
    try:
        asyncio.run(serve(host, int(port), args.delay_ms / 1000.0, args.hold_ms / 1000.0, args.log_accepts, requests))
    except KeyboardInterrupt:
        pass
    finally:
        if requests is not None:
            requests.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
