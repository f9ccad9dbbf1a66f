# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""An in-memory backend for unit and fault-injection tests; never a stand-in for real storage."""

from __future__ import annotations

import hashlib
import time
from contextlib import suppress
from typing import Callable, ContextManager, Iterable

from ansible_collections.distributor.core.plugins.module_utils._distributor.limits import LOCK_EXPIRY_SECONDS, LOCK_LIMIT
from ansible_collections.distributor.core.plugins.module_utils._distributor.paths import LOCK_NAME, RECORD_NAMES, is_reserved, join
from ansible_collections.distributor.core.plugins.module_utils._distributor.regular import ForeignLinks, links_not_ours
from ansible_collections.distributor.core.plugins.module_utils._distributor.storage.base import DirectorySeen, Storage, temp_name
from ansible_collections.distributor.core.plugins.module_utils._distributor.storage.judging import untrusted_record, verdict
from ansible_collections.distributor.core.plugins.module_utils._distributor.storage.lease import Lease, LockFile, Seen, held
from ansible_collections.distributor.core.plugins.module_utils._distributor.storage.refusals import (
    already_there, link_refused, missing, no_atomic_switch, not_a_link, not_linkable)


class Symlink:
    """A symbolic link in a memory store: the value at its key, holding `target`, never followed."""

    def __init__(self, target: str):
        self.target = target

    def __repr__(self) -> str:
        return "Symlink(%r)" % self.target


class Written(bytes):
    """A file's content as a write leaves it: an object of its own whatever its bytes (Python
    shares equal constants and the empty and one-byte ones), as a file written is an inode of
    its own, so that the files a directory holds tell it (MemoryStorage.directory_at)."""


class Linked(bytes):
    """The content of a file with several names: the same object at each key that names it (a
    hard link), so it shares its bytes and its link count. Written again, a name gets new bytes
    (a new file, as a rename into place gives) and leaves the others."""

    names: set

    def links(self, files: dict) -> int:
        """How many keys of `files` name this very file."""
        return sum(1 for name in self.names if files.get(name) is self)


def hard_link(files: dict, source: str, target: str) -> None:
    """`target` made another name of the file at `source` (both store keys), as a test plants one."""
    data = files[source]
    if not isinstance(data, Linked):
        data = Linked(data)
        data.names = {source}
        files[source] = data
    data.names.add(target)
    files[target] = data


class MemoryStorage(Storage):
    """Files live in `files`, a dict shared by every MemoryStorage opened on the same `store`.
    A key holds bytes, a Symlink or a Linked file (hard links: see hard_link); directories are
    the prefixes of keys, as in S3.

    `fault(op, path)` is called before every storage operation; a test makes it raise to cut a
    publish at exactly that step. A lock renewal is the operation `renew` (path LOCK_NAME), so a
    test can also fail a renewal, or replace the lock record there to steal the lock. The
    release primitives are the operations `entry`, `symlink` (the temporary link of a switch),
    `switch` (its rename over the path; a failure there removes the temporary link through a
    `delete`, which a killed run never makes), `rename` (path: the source), `mkdir`, `link` (each
    target of link_many), `directory` (directory_at) and `survey`. `clock` (a StorageClock) dates lock records as a real storage does;
    without one, none is dated. `foreign` holds the keys of files another account owns (planted
    by a test, shared like `store`; a key with files below it is a directory of that account):
    doubt refuses them, and a write of distributor's replaces them with its own. `lacks` names the means this storage goes without, as an SFTP server may:
    "link" (link_many links nothing), "switch" (no atomic switch).
    """

    def __init__(self, store: dict, base: str = "", token: str = "t", fault: Callable[[str, str], None] | None = None,
                 clock: StorageClock | None = None, foreign: set | None = None, lacks: frozenset = frozenset()):
        super().__init__(token)
        self.clock = clock
        self.files = store
        self.foreign = set() if foreign is None else foreign
        self.base = base
        self.fault = fault or (lambda op, path: None)
        self.lacks = lacks

    def _key(self, path: str) -> str:
        """The store key of `path`; a link on the way is refused, never followed."""
        key = join(self.base, path)
        end = key.find("/")
        while end > 0:
            if isinstance(self.files.get(key[:end]), Symlink):
                raise link_refused(self.describe_key(key[:end]))
            end = key.find("/", end + 1)
        return key

    @staticmethod
    def describe_key(key: str) -> str:
        return "memory:/" + key

    def describe(self, path: str = "") -> str:
        return self.describe_key(join(self.base, path))

    def _file(self, path: str) -> bytes | None:
        """The bytes of the regular file at `path` (None when absent), as a read finds them: a
        link is refused, and so is a file with more names than distributor made (_names_made)."""
        data = self.files.get(self._key(path))
        if isinstance(data, Symlink):
            raise link_refused(self.describe(path))
        if isinstance(data, Linked) and links_not_ours(data.links(self.files), self._names_made(path, data)):
            raise ForeignLinks(self.describe(path), data.links(self.files))
        return data

    def _names_made(self, path: str, data) -> int:
        """As local storage counts them (LocalLinks._names_made): one, and one for each sibling
        generation named in shared_links that holds this very file (the same object) at `path`;
        the count of names alone vouches for nothing."""
        if not isinstance(data, Linked) or data.links(self.files) == 1:
            return 1
        beside = self.base.rpartition("/")[0]
        siblings = self.shared_links.get(path, ())
        return 1 + sum(1 for sibling in siblings if self.files.get(join(beside, sibling, path)) is data)

    def read_bytes(self, path: str, limit: int) -> bytes | None:
        self.fault("read", path)
        if path in RECORD_NAMES and self._key(path) in self.foreign:
            raise untrusted_record(self.describe(path), "is owned by another account")
        data = self._file(path)
        return None if data is None else bytes(data[:limit + 1])

    def measure(self, path: str, size: int, digest: bool) -> tuple[int, str | None] | None:
        self.fault("measure", path)
        data = self._file(path)
        if data is None:
            return None
        return len(data), "sha256:" + hashlib.sha256(data).hexdigest() if digest and len(data) == size else None

    def doubt(self, path: str, size: int | None = None, sha256: str | None = None, own_build: bool = False) -> str | None:
        self.fault("doubt", path)
        data = self.files.get(self._key(path))
        return "is gone" if data is None else self._verdict(path, data, size, sha256)

    def doubt_files(self, paths: list[str]) -> list[str | None]:
        """As doubt without a digest, an output (a name not reserved) a regular file; nothing
        to doubt where nothing is. One storage operation, as the batch it is elsewhere."""
        self.fault("doubt_files", paths[0] if paths else "")
        answers = []
        for path in paths:
            data = self.files.get(self._key(path))
            answers.append(None if data is None else self._verdict(path, data, None, None, not is_reserved(path)))
        return answers

    def _verdict(self, path: str, data, size: int | None, sha256: str | None, output: bool = False) -> str | None:
        """A key in `foreign` is another account's file, a Symlink no regular file."""
        owner = "is owned by another account" if self._key(path) in self.foreign else None
        kind = "a symbolic link" if isinstance(data, Symlink) else None
        links = data.links(self.files) if isinstance(data, Linked) else 1
        return verdict(kind, owner, links, size, sha256, lambda: self.measure(path, size, True),
                       self._names_made(path, data), output)

    def write(self, path: str, chunks: Iterable[bytes]) -> None:
        staged = self._key(temp_name(path, self.token))
        self.fault("write", path)
        if isinstance(self.files.get(self._key(path)), Symlink):
            raise link_refused(self.describe(path))
        self.files[staged] = b""
        try:
            for chunk in chunks:
                self.files[staged] += chunk
            self.fault("rename", path)
        except BaseException:
            self.files.pop(staged, None)
            raise
        self.files[self._key(path)] = Written(self.files.pop(staged))
        self.foreign.discard(self._key(path))

    def resettle(self, path: str, sha256: str, size: int) -> bool:
        """Memory keeps no settings: the output is settled when it holds the recorded bytes."""
        self.fault("resettle", path)
        try:
            return self.measure(path, size, True) == (size, sha256)
        except ForeignLinks:
            return False

    def delete(self, path: str) -> bool:
        self.fault("delete", path)
        self.foreign.discard(self._key(path))
        return self.files.pop(self._key(path), None) is not None

    def exists(self, path: str) -> bool:
        self.fault("exists", path)
        return self._key(path) in self.files

    def list_files(self) -> list[str]:
        """A link is listed, never followed: what its target holds sits under the target's keys."""
        self.fault("list", "")
        if isinstance(self.files.get(self.base), Symlink):
            raise link_refused(self.describe())
        self._key("")
        prefix = self.base + "/" if self.base else ""
        return sorted(k[len(prefix):] for k in self.files if k.startswith(prefix))

    # -- releases ---------------------------------------------------------------------------

    def at(self, base: str) -> MemoryStorage:
        """A view on the same store, sharing its fault, clock, foreign files and what it lacks."""
        return MemoryStorage(self.files, join(self.base, base), self.token, self.fault, self.clock, self.foreign,
                             self.lacks)

    def _kind(self, key: str) -> tuple[str, str | None]:
        data = self.files.get(key)
        if isinstance(data, Symlink):
            return "link", data.target
        if data is not None:
            return "file", None
        inside = key + "/" if key else ""
        return ("directory", None) if any(k.startswith(inside) for k in self.files) else ("absent", None)

    def entry(self, path: str) -> tuple[str, str | None]:
        self.fault("entry", path)
        return self._kind(self._key(path))

    def directory_at(self, path: str) -> DirectorySeen | None:
        """A directory is the files below it: its identity, the very objects they are (a rename
        moves them, a directory swapped in holds others: see Written)."""
        self.fault("directory", path)
        key = self._key(path)
        if self._kind(key)[0] != "directory":
            return None
        inside = key + "/" if key else ""
        held = tuple(sorted((k[len(inside):], id(data)) for k, data in self.files.items() if k.startswith(inside)))
        return DirectorySeen(held, "is owned by another account" if key in self.foreign else None)

    def survey(self) -> tuple[DirectorySeen | None, list[tuple[str, str]]]:
        base = self.directory_at("")
        self.fault("survey", "")
        prefix = self.base + "/" if self.base else ""
        below = {k[len(prefix):] for k in self.files if k.startswith(prefix)} if base is not None else set()
        below |= {path[:end] for path in below for end in range(len(path)) if path[end] == "/"}
        strangers = []
        for path in sorted(below):
            if isinstance(self.files.get(prefix + path), Symlink):
                strangers.append((path, "is a symbolic link"))
            elif prefix + path in self.foreign:
                strangers.append((path, "is owned by another account"))
        return base, strangers

    def require_switch(self) -> None:
        if "switch" in self.lacks:
            raise no_atomic_switch(self.describe(), "posix-rename@openssh.com")

    def prepare_switch(self, path: str, target: str, temporary: str) -> None:
        self.require_switch()
        key, made = self._key(path), self._key(temporary)
        kind = self._kind(key)[0]
        if kind not in ("absent", "link"):
            raise not_a_link(self.describe(path), "a " + kind)
        if self._kind(made)[0] != "absent":
            raise already_there("create link", self.describe(temporary))
        self.fault("symlink", temporary)
        self.files[made] = Symlink(target)

    def finish_switch(self, path: str, temporary: str) -> None:
        key, made = self._key(path), self._key(temporary)
        try:
            kind = self._kind(key)[0]
            if kind not in ("absent", "link"):
                raise not_a_link(self.describe(path), "a " + kind)
            self.fault("switch", path)
            self.files[key] = self.files.pop(made)
            self.fault("switched", path)  # a rename that took effect, then failed (a lost reply)
        except BaseException:
            with suppress(BaseException):
                self.fault("delete", temporary)
                self.files.pop(made, None)
            raise

    def make_directory(self, path: str) -> None:
        """Directories are the prefixes of keys, as in S3: an empty one is nothing to make."""
        self.fault("mkdir", path)

    def rename(self, source: str, target: str) -> None:
        old, new = self._key(source), self._key(target)
        if self._kind(new)[0] != "absent":
            raise already_there("move %s to" % self.describe(source), self.describe(target))
        if self._kind(old)[0] == "absent":
            raise missing("move", self.describe(source))
        self.fault("rename", source)
        for key in [k for k in self.files if k == old or k.startswith(old + "/")]:
            data = self.files.pop(key)
            moved = new + key[len(old):]
            if isinstance(data, Linked):
                data.names.add(moved)
            self.files[moved] = data
            if key in self.foreign:
                self.foreign.discard(key)
                self.foreign.add(moved)

    def link_many(self, pairs: list[tuple[str, str]]) -> list[tuple[str, str]]:
        pairs = list(pairs)
        if "link" in self.lacks:
            return pairs
        for source, target in pairs:
            old, new = self._key(source), self._key(target)
            kind = self._kind(old)[0]
            if kind == "absent":
                raise missing("link", self.describe(source))
            if kind == "link":
                raise link_refused(self.describe(source))
            if kind != "file":
                raise not_linkable(self.describe(source), "a " + kind)
            if self._kind(new)[0] != "absent":
                raise already_there("link %s to" % self.describe(source), self.describe(target))
            self.fault("link", target)
            hard_link(self.files, old, new)
        return []

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
