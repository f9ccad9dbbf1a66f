# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A TCP proxy on 127.0.0.1 that gives a loopback server an internet's latency.

    python benchmarks/latency_proxy.py --target 127.0.0.1:PORT [--delay-ms 20] [--hold-ms 0]

Every chunk a client sends is held `--delay-ms` after it arrives, then forwarded to the target
in order; replies come back at once. So each request costs one delay more than on loopback, as
a server that far away would, while requests on different connections (or pipelined on one)
overlap like they would on a real network: a delay line, not a bandwidth limit. `--hold-ms`
holds each new connection that long before the target sees it (a server slow to answer), the
same for every connection however many arrive at once. It prints the port it listens on, on
one line (with `--log-accepts` then the epoch time of each connection it accepts, `accepted
<time>`), and serves until killed. It runs in a process of its own so that its CPU is never
counted as the client's.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time

CHUNK = 64 * 1024


async def _delayed(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, delay: float) -> None:
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
            queue.put_nowait((loop.time() + delay, data))
            if not data:
                break
        await releasing
    finally:
        releasing.cancel()
        _close(writer)


async def _direct(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Server to client: as it comes."""
    try:
        while True:
            data = await reader.read(CHUNK)
            if not data:
                break
            writer.write(data)
            await writer.drain()
    finally:
        _close(writer)


def _close(writer: asyncio.StreamWriter) -> None:
    try:
        writer.close()
    except (OSError, RuntimeError):
        pass


async def serve(target_host: str, target_port: int, delay: float, hold: float = 0.0, log: bool = False) -> None:
    """Accept on an ephemeral port of 127.0.0.1, print it, forward every connection."""
    async def connection(client_reader, client_writer):
        if log:
            print("accepted %.3f" % time.time(), flush=True)
        await asyncio.sleep(hold)
        try:
            server_reader, server_writer = await asyncio.open_connection(target_host, target_port)
        except OSError:
            _close(client_writer)
            return
        await asyncio.gather(_delayed(client_reader, server_writer, delay), _direct(server_reader, client_writer),
                             return_exceptions=True)

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
    args = parser.parse_args(argv)
    host, _colon, port = args.target.rpartition(":")
    try:
        asyncio.run(serve(host, int(port), args.delay_ms / 1000.0, args.hold_ms / 1000.0, args.log_accepts))
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
