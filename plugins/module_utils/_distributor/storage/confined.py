# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one check that keeps every storage operation inside the bundle path, and every change
inside the time the run holds its lock.

Paths reach storage from manifests, state records and journals, and the last two are read back
from the destination, where others can write. Each parser refuses bad paths with a message
naming its field; this wrapper is the backstop under all of them: root.opened applies it to every
backend, so publish, recovery, a failed attempt's clean-up, reconcile-state and prune cannot
read, write or delete anything but a clean relative path below the bundle path, whatever a
caller forgets.

It is also the backstop for storage errors: an OSError a backend did not turn into a reason
leaves as storage_error naming the location, never as a traceback.

For the same reason the lock's lease is checked here, not by each caller: under a lock, every
write and delete first asks the lease (see lease.Lease), and the state and the journal are
written only after a fresh look at the lock on storage. A run that lost its lock changes nothing
more, its failed attempt's clean-up included (the paths may be the next holder's by now).

Releases act on views of one storage (`at`: a release's home, each generation), confined to
their own base below the storage's and under the same lease: a lock taken through any of them
guards the changes made through all. A switch of the bundle path's link is the change readers
see, so it goes ahead only after a fresh look at the lock, as a record does.
"""

from __future__ import annotations

from contextlib import contextmanager
from itertools import chain
from typing import Callable, ContextManager, Iterable, Iterator, Mapping

from ..errors import DistributorError
from ..paths import JOURNAL_NAME, LOCK_NAME, STATE_NAME, all_clean, link_problem, path_problem
from ..limits import LOCK_EXPIRY_SECONDS
from .base import DirectorySeen, Lease, Storage
from .refusals import failure, os_errors

RECORDS = (STATE_NAME, JOURNAL_NAME)


class ConfinedStorage(Storage):
    """Delegates to `inner` after checking every path it is given. `held` is the lease holder
    shared with the views made by `at` (a one-item list: the Lease while a lock is held)."""

    def __init__(self, inner: Storage, held: list | None = None):
        shared = inner.shared_links
        self.inner = inner
        super().__init__(inner.token)
        self.shared_links = shared
        self._leases: list = [None] if held is None else held

    @property
    def _lease(self) -> Lease | None:
        return self._leases[0]

    @_lease.setter
    def _lease(self, lease: Lease | None) -> None:
        self._leases[0] = lease

    @property
    def shared_links(self) -> Mapping[str, tuple[str, ...]]:
        """The inner storage's, which its reads count against."""
        return self.inner.shared_links

    @shared_links.setter
    def shared_links(self, shared: Mapping[str, tuple[str, ...]]) -> None:
        """Given to the inner storage: its reads are the ones counted."""
        self.inner.shared_links = shared

    def _inside(self, path: str) -> str:
        problem = path_problem(path)
        if problem:
            raise DistributorError(
                "invalid_state",
                "refused to touch %r under %s: it %s, and distributor only reads, writes and deletes "
                "clean relative paths inside the bundle path" % (path, self.inner.describe(), problem),
            )
        return path

    def _all_inside(self, paths: list) -> None:
        """_inside for a batch: clean paths are told by a few passes over them all
        (paths.all_clean), and an unclean one is refused by _inside, naming it."""
        if not all_clean(paths):
            for path in paths:
                self._inside(path)

    def _reported(self, action: str, path: str = "") -> ContextManager[None]:
        return os_errors(action, self.inner.describe(path))

    def _held(self, what: str, record: bool = False) -> None:
        """Under a lock a change goes ahead only while the lease holds, and a record (state,
        journal) only after a look at the lock on storage just now."""
        lease = self._leases[0]
        if lease is not None:
            try:
                (lease.confirm if record else lease.check)(what)
            except OSError as exc:
                raise failure("check the lock", self.inner.describe(LOCK_NAME), exc) from exc

    def _writing(self, path: str) -> str:
        path = self._inside(path)
        self._held("writing " + path, path in RECORDS)
        return path

    def _held_chunks(self, path: str, factory: Callable[[], Iterable[bytes]]) -> Callable[[], Iterable[bytes]]:
        """A write of many asks the lease as each write starts, in whichever thread runs it."""
        def chunks() -> Iterable[bytes]:
            """The lease is asked when the write starts, not when the batch is planned."""
            self._held("writing " + path)
            return factory()
        return chunks

    def describe(self, path: str = "") -> str:
        """The inner storage's location: confinement adds no place of its own."""
        return self.inner.describe(path)

    def read_bytes(self, path: str, limit: int) -> bytes | None:
        """Reads are confined too: a record's path may come from a planted journal."""
        with self._reported("read", self._inside(path)):
            return self.inner.read_bytes(path, limit)

    def read_many(self, reads: list[tuple[str, int]]) -> list[bytes | None]:
        """Every path checked before the first is read."""
        checked = [(self._inside(path), limit) for path, limit in reads]
        with self._reported("read files under"):
            return self.inner.read_many(checked)

    def measure(self, path: str, size: int, digest: bool) -> tuple[int, str | None] | None:
        """Confined like a read."""
        with self._reported("inspect", self._inside(path)):
            return self.inner.measure(path, size, digest)

    def measure_many(self, asked: list[tuple[str, int]], digest: bool) -> dict:
        """Every path confined before the first is looked at."""
        self._all_inside([path for path, _size in asked])
        with self._reported("inspect files under"):
            return self.inner.measure_many(asked, digest)

    def doubt(self, path: str, size: int | None = None, sha256: str | None = None, own_build: bool = False) -> str | None:
        """Confined like a read: the path comes from a journal."""
        with self._reported("inspect", self._inside(path)):
            return self.inner.doubt(path, size, sha256, own_build)

    def doubt_many(self, asked: list[tuple[str, int | None, str | None]], own_build: bool = False) -> list[str | None]:
        """Every path checked before the first is looked at."""
        checked = [(self._inside(path), size, sha256) for path, size, sha256 in asked]
        with self._reported("inspect files under"):
            return self.inner.doubt_many(checked, own_build)

    def doubt_files(self, paths: list[str]) -> list[str | None]:
        """Every path checked before the first is looked at."""
        checked = [self._inside(path) for path in paths]
        with self._reported("inspect files under"):
            return self.inner.doubt_files(checked)

    def write(self, path: str, chunks: Iterable[bytes]) -> None:
        """Confined, under the lease, and a record only after a fresh look at the lock."""
        with self._reported("write", self._writing(path)):
            self.inner.write(path, chunks)

    def write_bytes(self, path: str, data: bytes) -> None:
        """As write: records are written with this call."""
        with self._reported("write", self._writing(path)):
            self.inner.write_bytes(path, data)

    def write_many(self, items: Iterable[tuple[str, Callable[[], Iterable[bytes]]]]) -> None:
        """Every path confined before the first write starts, as delete_many's: a bad one writes
        nothing. The lease is asked as each write starts, in whichever thread runs it."""
        items = list(items)
        self._all_inside([path for path, _factory in items])
        with self._reported("write outputs under"):
            self.inner.write_many([(path, self._held_chunks(path, factory)) for path, factory in items])

    def resettle_many(self, items: Iterable[tuple[str, str, int]]) -> list[str]:
        """Confined and under the lease, like a write: settings change what readers get."""
        checked = [(self._inside(path), sha256, size) for path, sha256, size in items]
        if checked:
            self._held("changing the settings of " + checked[0][0])
        with self._reported("change the settings of files under"):
            return self.inner.resettle_many(checked)

    def check_writable(self, directories: Iterable[str]) -> None:
        """Confined like a read: '' is the bundle path itself."""
        checked = [self._inside(d) if d else d for d in directories]
        with self._reported("inspect"):
            self.inner.check_writable(checked)

    def delete(self, path: str) -> bool:
        """Confined and under the lease: a path from a journal must not reach outside the bundle path."""
        path = self._inside(path)
        self._held("deleting " + path)
        with self._reported("delete", path):
            return self.inner.delete(path)

    def discard(self, path: str) -> None:
        """Confined and under the lease, as delete."""
        path = self._inside(path)
        self._held("deleting " + path)
        with self._reported("delete", path):
            self.inner.discard(path)

    def delete_many(self, paths: Iterable[str]) -> list[str]:
        """Every path is checked before the first is deleted: a bad one deletes nothing."""
        checked = list(paths)
        self._all_inside(checked)
        if checked:
            self._held("deleting " + checked[0] + (" and %d more" % (len(checked) - 1) if len(checked) > 1 else ""))
        with self._reported("delete files under"):
            return self.inner.delete_many(checked)

    def list_files(self) -> list[str]:
        """Lists only the bundle path (the inner storage's base); OSErrors reported like the others."""
        with self._reported("list"):
            return self.inner.list_files()

    @contextmanager
    def lock(self, timeout: float, expiry: float = LOCK_EXPIRY_SECONDS) -> Iterator[Lease]:
        """The lock file's name is the backend's own, never a caller's; its lease guards every
        change made while it is held. Only taking and releasing the lock are reported here as
        storage errors: what the body raises stays the body's."""
        held = self.inner.lock(timeout, expiry)
        with self._reported("take the lock", LOCK_NAME):
            lease = held.__enter__()
        self._lease = lease
        failure = None
        try:
            yield lease
        except BaseException as exc:
            failure = exc
            raise
        finally:
            self._lease = None
            with self._reported("release the lock", LOCK_NAME):
                held.__exit__(type(failure) if failure else None, failure, failure.__traceback__ if failure else None)

    # -- releases ---------------------------------------------------------------------------

    def at(self, base: str) -> Storage:
        """A view confined to `base` below this one, under the same lease ('' is this base)."""
        with self._reported("open", self._inside(base) if base else base):
            return ConfinedStorage(self.inner.at(base), self._leases)

    def entry(self, path: str) -> tuple[str, str | None]:
        """Confined like a read."""
        with self._reported("inspect", self._inside(path)):
            return self.inner.entry(path)

    def directory_at(self, path: str) -> DirectorySeen | None:
        """Confined like a read."""
        with self._reported("inspect", self._inside(path)):
            return self.inner.directory_at(path)

    def survey(self) -> tuple[DirectorySeen | None, list[tuple[str, str]]]:
        """Of the bundle path only, like list_files."""
        with self._reported("inspect"):
            return self.inner.survey()

    def prepare_switch(self, path: str, target: str, temporary: str) -> None:
        """Confined, the link's target too: a clean relative path, after as many `..` as lead
        up to the base at most (a shared path's link, releases.rules.shared_target), never out
        of the base. Under the lease, after a fresh look at the lock."""
        problem = link_problem(path, target)
        if problem:
            raise DistributorError("invalid_state", "refused to make %s a link to %r: the target %s, and distributor "
                                   "makes only links that lead below the storage they are made in"
                                   % (self.inner.describe(path), target, problem))
        self._inside(temporary)
        self._held("switching " + self._inside(path), True)
        with self._reported("switch", path):
            self.inner.prepare_switch(path, target, temporary)

    def finish_switch(self, path: str, temporary: str) -> None:
        """Both names confined, under the lease as the heartbeat knows it: prepare_switch looked at
        the lock on storage just before, and a fleet's renames follow one another without a round trip."""
        self._inside(temporary)
        self._held("switching " + self._inside(path))
        with self._reported("switch", path):
            self.inner.finish_switch(path, temporary)

    def require_switch(self) -> None:
        """Errors reported like the others'."""
        with self._reported("inspect"):
            self.inner.require_switch()

    def make_directory(self, path: str) -> None:
        """Confined, under the lease."""
        self._held("making " + self._inside(path))
        with self._reported("create directory", path):
            self.inner.make_directory(path)

    def rename(self, source: str, target: str) -> None:
        """Both names confined, under the lease."""
        self._inside(target)
        self._held("moving " + self._inside(source))
        with self._reported("move", source):
            self.inner.rename(source, target)

    def link_many(self, pairs: list[tuple[str, str]]) -> list[tuple[str, str]]:
        """Every name checked before the first link is made, under the lease."""
        checked = list(pairs)
        self._all_inside(list(chain.from_iterable(checked)))
        if checked:
            self._held("linking " + checked[0][1] + (" and %d more" % (len(checked) - 1) if len(checked) > 1 else ""))
        with self._reported("link files under"):
            return self.inner.link_many(checked)

    def close(self) -> None:
        """The inner storage's connections."""
        self.inner.close()

    @property
    def warnings(self) -> list[str]:
        """The inner storage's: confinement adds none."""
        return self.inner.warnings
