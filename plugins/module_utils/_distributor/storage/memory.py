# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""An in-memory backend for unit and fault-injection tests; never a stand-in for real storage."""

from __future__ import annotations

import time
from contextlib import contextmanager
from typing import Callable, Iterable, Iterator

from ..paths import LOCK_NAME, join
from .base import LOCK_EXPIRY_SECONDS, Lease, Storage, holder_record, holds, lock_is_expired, temp_name, wait_for_lock


class MemoryStorage(Storage):
    """Files live in `files`, a dict shared by every MemoryStorage opened on the same `store`.

    `fault(op, path)` is called before every storage operation; a test makes it raise to cut a
    publish at exactly that step. A lock renewal is the operation `renew` (path LOCK_NAME), so a
    test can also fail a renewal, or replace the lock record there to steal the lock.
    """

    kind = "memory"

    def __init__(self, store: dict, base: str = "", token: str = "t", fault: Callable[[str, str], None] | None = None):
        super().__init__(token)
        self.files = store
        self.base = base
        self.fault = fault or (lambda op, path: None)

    def _key(self, path: str) -> str:
        return join(self.base, path)

    def describe(self, path: str = "") -> str:
        return "memory:/" + self._key(path)

    def read_bytes(self, path: str, limit: int) -> bytes | None:
        self.fault("read", path)
        data = self.files.get(self._key(path))
        return None if data is None else data[:limit + 1]

    def write(self, path: str, chunks: Iterable[bytes]) -> None:
        staged = self._key(temp_name(path, self.token))
        self.fault("write", path)
        self.files[staged] = b""
        try:
            for chunk in chunks:
                self.files[staged] += chunk
            self.fault("rename", path)
        except BaseException:
            self.files.pop(staged, None)
            raise
        self.files[self._key(path)] = self.files.pop(staged)

    def delete(self, path: str) -> bool:
        self.fault("delete", path)
        return self.files.pop(self._key(path), None) is not None

    def exists(self, path: str) -> bool:
        self.fault("exists", path)
        return self._key(path) in self.files

    def list_files(self) -> list[str]:
        self.fault("list", "")
        prefix = self.base + "/" if self.base else ""
        return sorted(k[len(prefix):] for k in self.files if k.startswith(prefix))

    @contextmanager
    def lock(self, timeout: float, expiry: float = LOCK_EXPIRY_SECONDS) -> Iterator[Lease]:
        """The same exclusive-create protocol as SFTP and S3, over the dict, renewed the same way."""
        key = self._key(LOCK_NAME)
        acquired_at = 0.0

        def try_acquire() -> bool:
            nonlocal acquired_at
            if key in self.files and not lock_is_expired(self.files[key], time.time()):
                return False
            acquired_at = time.time()
            self.files[key] = holder_record(acquired_at, expiry, self.token)
            return True

        def renew() -> bool:
            self.fault("renew", LOCK_NAME)
            if not holds(self.files.get(key), self.token):
                return False
            self.files[key] = holder_record(time.time(), expiry, self.token, acquired_at)
            return True

        wait_for_lock(try_acquire, lambda: self.files.get(key), timeout, self.describe())
        try:
            with Lease(renew, lambda: self.files.get(key), expiry, self.describe(LOCK_NAME)) as lease:
                yield lease
        finally:
            if holds(self.files.get(key), self.token):
                del self.files[key]
