# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""An in-memory backend for unit and fault-injection tests; never a stand-in for real storage."""

from __future__ import annotations

import hashlib
import time
from typing import Callable, ContextManager, Iterable

from ansible_collections.distributor.core.plugins.module_utils._distributor.limits import LOCK_EXPIRY_SECONDS, LOCK_LIMIT
from ansible_collections.distributor.core.plugins.module_utils._distributor.paths import LOCK_NAME, join
from ansible_collections.distributor.core.plugins.module_utils._distributor.storage.base import Storage, temp_name, verdict
from ansible_collections.distributor.core.plugins.module_utils._distributor.storage.lease import Lease, LockFile, Seen, held


class MemoryStorage(Storage):
    """Files live in `files`, a dict shared by every MemoryStorage opened on the same `store`.

    `fault(op, path)` is called before every storage operation; a test makes it raise to cut a
    publish at exactly that step. A lock renewal is the operation `renew` (path LOCK_NAME), so a
    test can also fail a renewal, or replace the lock record there to steal the lock. `clock`
    (a StorageClock) dates lock records as a real storage does; without one, none is dated.
    `foreign` holds the keys of files another account owns (planted by a test, shared like
    `store`): doubt refuses them, and a write of distributor's replaces them with its own.
    """

    def __init__(self, store: dict, base: str = "", token: str = "t", fault: Callable[[str, str], None] | None = None,
                 clock: StorageClock | None = None, foreign: set | None = None):
        super().__init__(token)
        self.clock = clock
        self.files = store
        self.foreign = set() if foreign is None else foreign
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

    def measure(self, path: str, size: int, digest: bool) -> tuple[int, str | None] | None:
        self.fault("measure", path)
        data = self.files.get(self._key(path))
        if data is None:
            return None
        return len(data), "sha256:" + hashlib.sha256(data).hexdigest() if digest and len(data) == size else None

    def doubt(self, path: str, size: int | None = None, sha256: str | None = None) -> str | None:
        self.fault("doubt", path)
        if self._key(path) not in self.files:
            return "is gone"
        owner = "is owned by another account" if self._key(path) in self.foreign else None
        return verdict(None, owner, None, size, sha256, lambda: self.measure(path, size, True))

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
        self.foreign.discard(self._key(path))

    def resettle(self, path: str, sha256: str, size: int) -> bool:
        """Memory keeps no settings: the output is settled when it holds the recorded bytes."""
        self.fault("resettle", path)
        return self.measure(path, size, True) == (size, sha256)

    def delete(self, path: str) -> bool:
        self.fault("delete", path)
        self.foreign.discard(self._key(path))
        return self.files.pop(self._key(path), None) is not None

    def exists(self, path: str) -> bool:
        self.fault("exists", path)
        return self._key(path) in self.files

    def list_files(self) -> list[str]:
        self.fault("list", "")
        prefix = self.base + "/" if self.base else ""
        return sorted(k[len(prefix):] for k in self.files if k.startswith(prefix))

    def lock(self, timeout: float, expiry: float = LOCK_EXPIRY_SECONDS) -> ContextManager[Lease]:
        """The protocol of SFTP and S3 (lease.held), over the dict."""
        return held(MemoryLock(self), self.token, timeout, expiry)


class StorageClock:
    """The clock of a memory store, shared by the storages a test opens on it: `now()` is the
    time there, `stamps` when each lock record was written (with the record, so a record a test
    writes straight into the dict has no stamp). A store without one is a storage that dates
    nothing, whose locks are judged by watching them."""

    def __init__(self, now: Callable[[], float] = time.time):
        self.now = now
        self.stamps: dict[str, tuple[bytes, float]] = {}


class MemoryLock(LockFile):
    """The lock primitive over the dict; a renewal is the fault operation `renew`."""

    def __init__(self, storage: MemoryStorage):
        self.files = storage.files
        self.fault = storage.fault
        self.clock = storage.clock
        self.key = storage._key(LOCK_NAME)
        self.where = storage.describe(LOCK_NAME)

    def _put(self, record: bytes) -> bytes:
        self.files[self.key] = record
        if self.clock is not None:
            self.clock.stamps[self.key] = (record, self.clock.now())
        return record

    def create(self, record: bytes) -> object | None:
        return None if self.key in self.files else self._put(record)

    def read(self) -> Seen | None:
        raw = self.files.get(self.key)
        if raw is None:
            return None
        stamped = self.clock.stamps.get(self.key) if self.clock is not None else None
        return Seen(raw[:LOCK_LIMIT + 1], raw, stamped[1] if stamped and stamped[0] == raw else None)

    def replace(self, version: object, record: bytes) -> object | None:
        self.fault("renew", LOCK_NAME)
        return self._put(record) if self.files.get(self.key) == version else None

    def delete(self, version: object) -> bool:
        if self.files.get(self.key) == version:
            del self.files[self.key]
        return self.files.get(self.key) != version

    def now(self) -> float | None:
        return self.clock.now() if self.clock is not None else None
