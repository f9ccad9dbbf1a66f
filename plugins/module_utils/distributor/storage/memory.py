# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""An in-memory backend for unit and fault-injection tests; never a stand-in for real storage."""

from __future__ import annotations

import json
import time
from contextlib import contextmanager
from typing import Callable, Iterable, Iterator

from ..paths import LOCK_NAME, join
from .base import LOCK_EXPIRY_SECONDS, Storage, holder_record, lock_is_expired, temp_name, wait_for_lock


class MemoryStorage(Storage):
    """Files live in `files`, a dict shared by every MemoryStorage opened on the same `store`.

    `fault(op, path)` is called before every storage operation; a test makes it raise to cut a
    publish at exactly that step.
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

    def read_bytes(self, path: str) -> bytes | None:
        self.fault("read", path)
        return self.files.get(self._key(path))

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
    def lock(self, timeout: float, expiry: float = LOCK_EXPIRY_SECONDS) -> Iterator[None]:
        """The same exclusive-create protocol as SFTP and S3, over the dict."""
        key = self._key(LOCK_NAME)
        record = json.dumps(holder_record(time.time(), expiry)).encode()

        def try_acquire() -> bool:
            if key in self.files and not lock_is_expired(self.files[key], time.time()):
                return False
            self.files[key] = record
            return True

        wait_for_lock(try_acquire, lambda: self.files.get(key), timeout, self.describe())
        try:
            yield
        finally:
            if self.files.get(key) == record:
                del self.files[key]
