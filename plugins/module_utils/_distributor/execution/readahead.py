# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Reading a large source one chunk ahead of its writer.

A large copy alternates reading and hashing a chunk of the bundle with writing it out; hashlib
and file or socket I/O release the GIL, so on two cores the next chunk can be read and hashed
while the previous one is written. A small source (one short chunk) gains nothing from a thread
and gets none.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Iterable, Iterator

from ..records.bundle import READ_CHUNK_SIZE


def read_ahead(chunks: Iterable[bytes]) -> Iterator[bytes]:
    """`chunks`, each produced while the consumer handles the one before. The source's own
    exceptions (a verification failure after the last chunk) reach the consumer where they
    would without the thread: when it asks for the chunk that failed. A consumer that stops
    early waits at most for the one chunk being read, and the source is closed."""
    source = iter(chunks)
    try:
        first = next(source, None)
        if first is None:
            return
        if len(first) < READ_CHUNK_SIZE:
            yield first
            yield from source
            return
        with ThreadPoolExecutor(max_workers=1) as reader:
            ahead = reader.submit(next, source, None)
            chunk = first
            while chunk is not None:
                yield chunk
                chunk = ahead.result()
                if chunk is not None:
                    ahead = reader.submit(next, source, None)
    finally:
        close = getattr(source, "close", None)
        if close is not None:
            close()
