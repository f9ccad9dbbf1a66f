# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The bodies S3Storage sends and their SHA-256: a small body gathered whole, a large one read
part by part into the storage's part buffers, the ChecksumSHA256 S3 checks each against, the
digest S3 keeps of a whole object, and S3's refusal of bytes that changed on the way."""

from __future__ import annotations

import base64
import hashlib
from typing import Iterator

CHECKSUM_REFUSED = ("BadDigest", "InvalidDigest", "XAmzContentSHA256Mismatch")


def gather(stream: Iterator[bytes], chunks: list, size: int, limit: int) -> int:
    """Append chunks of `stream` to `chunks` until they hold more than `limit` bytes or the stream
    ends; the size they hold then."""
    while size <= limit:
        chunk = next(stream, None)
        if chunk is None:
            break
        chunks.append(chunk)
        size += len(chunk)
    return size


def full_object_digest(head: dict) -> str | None:
    """`sha256:<hex>` of the whole object from a HEAD's stored ChecksumSHA256; None when S3 keeps
    none, or only a multipart upload's composite "<digest>-<parts>"."""
    stored = head.get("ChecksumSHA256") or ""
    if stored and "-" not in stored and head.get("ChecksumType", "FULL_OBJECT") == "FULL_OBJECT":
        return "sha256:" + base64.b64decode(stored).hex()
    return None


def checksum(data) -> str:
    """The ChecksumSHA256 value S3 checks a body against: the base64 of its raw SHA-256. A
    single-part body was read whole through the bundle's verifying reader, so this is the digest
    the manifest (and the state record) carries; S3 refusing it means the bytes changed on the way."""
    return base64.b64encode(hashlib.sha256(data).digest()).decode("ascii")


def refused_checksum(response: dict) -> bool:
    """Whether S3 refused a request because a body did not match its checksum (AWS answers
    BadDigest; S3-compatible servers vary, some with an InvalidRequest about the checksum)."""
    error = response.get("Error", {})
    code = error.get("Code")
    return code in CHECKSUM_REFUSED or (code == "InvalidRequest" and "checksum" in str(error.get("Message", "")).lower())


class PartReader:
    """A stream of chunks read part by part into caller's buffers."""

    def __init__(self, chunks: Iterator[bytes]):
        self._chunks = chunks
        self._left = memoryview(b"")

    def fill(self, buffer: bytearray) -> int:
        """Copy the next len(buffer) bytes into `buffer`; how many (fewer only at the end)."""
        view = memoryview(buffer)
        filled = 0
        while filled < len(view) and self._more():
            count = min(len(self._left), len(view) - filled)
            view[filled:filled + count] = self._left[:count]
            self._left = self._left[count:]
            filled += count
        return filled

    def at_end(self) -> bool:
        """Whether the stream is exhausted. Asking reads ahead: a source that verifies its bytes
        after the last chunk (Bundle.chunks) fails here, before the upload completes."""
        return not self._more()

    def _more(self) -> bool:
        while not self._left:
            chunk = next(self._chunks, None)
            if chunk is None:
                return False
            self._left = memoryview(chunk)
        return True
