# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A directory on the machine that runs the module."""

from __future__ import annotations

import errno
import fcntl
import os
import stat
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager, suppress
from typing import Callable, Iterable, Iterator

from ..attributes import ownership, parse_mode
from ..errors import DistributorError
from ..limits import LOCK_LIMIT
from ..paths import LOCK_NAME, is_reserved, join
from ..regular import NotRegularFile, kind_of, open_regular
from .base import (
    LOCK_EXPIRY_SECONDS, LOCK_POLL_SECONDS, Lease, Storage, describe_holder, holder_record, not_a_record, staging_dir)
from .durability import FsyncEach, Staged, durability_for, fsync_path

SYNC_BATCH_BYTES = 64 * 1024 * 1024  # a batch also ends at this many staged bytes, so big files overlap their syncs
SYNC_WORKERS = 8


class LocalStorage(Storage):
    kind = "local"

    def __init__(self, root: str, base: str, token: str, storage: dict | None = None):
        super().__init__(token)
        storage = storage or {}
        self.file_mode = parse_mode(storage.get("file_mode"), "file_mode")
        self.directory_mode = parse_mode(storage.get("directory_mode"), "directory_mode")
        self.ids = ownership(storage)
        if not os.path.isabs(root):
            raise DistributorError("invalid_config", "storage.root %r must be an absolute path" % root)
        if os.path.realpath(root) == "/":
            raise DistributorError("invalid_config", "storage.root '/' is refused: publish into a directory of its own")
        self.root = root
        self.base = base
        self._root_is_directory = False
        self._staging_dirs: set[str] = set()

    def describe(self, path: str = "") -> str:
        return os.path.join(self.root, join(self.base, path))

    def _real(self, path: str, create_parents: bool = False) -> str:
        """The filesystem path of `path`, refusing any symlink between the root and it, and any
        file where a directory must be (the root included): those are reported here, naming the
        file in the way, rather than as whatever error the operation would meet below it."""
        current = self.root
        if create_parents and not os.path.lexists(current):
            self._call(os.makedirs, current, "create the root directory")
        parts = join(self.base, path).split("/") if join(self.base, path) else []
        self._check_root()
        for i, part in enumerate(parts):
            current = os.path.join(current, part)
            try:
                self._check_component(current, path, i < len(parts) - 1)
            except FileNotFoundError:
                if create_parents and i < len(parts) - 1:
                    self._call(os.mkdir, current, "create directory")
                    self._call(self._settle, current, "set the mode of", self.directory_mode)
                    continue
                return os.path.join(current, *parts[i + 1:])
        return current

    def _check_root(self) -> None:
        """The configured root may be a link (it is the user's own choice), but a directory;
        once seen to be one, it is not asked again."""
        if self._root_is_directory:
            return
        try:
            mode = os.stat(self.root).st_mode
        except FileNotFoundError:
            return
        except OSError as exc:
            raise DistributorError("storage_error", "cannot inspect %s: %s" % (self.root, exc.strerror or exc)) from exc
        if not stat.S_ISDIR(mode):
            raise DistributorError("storage_error", "storage.root %s is not a directory" % self.root)
        self._root_is_directory = True

    def _check_component(self, current: str, path: str, must_be_directory: bool) -> None:
        try:
            mode = os.lstat(current).st_mode
        except FileNotFoundError:
            raise
        except OSError as exc:
            raise DistributorError("storage_error", "cannot inspect %s: %s" % (current, exc.strerror or exc)) from exc
        if stat.S_ISLNK(mode):
            raise DistributorError(
                "storage_error",
                "%s is a symbolic link; distributor never follows links inside a destination root" % current,
            )
        if must_be_directory and not stat.S_ISDIR(mode):
            raise DistributorError(
                "storage_error",
                "%s is a file where %s needs a directory; move it away so distributor can publish there"
                % (current, self.describe(path)),
            )

    def _settle(self, real: str, mode: int | None) -> None:
        """Apply the configured mode and ownership: to a staged file before its rename, so an
        output never appears with other permissions, and to a directory distributor created."""
        if mode is not None:
            os.chmod(real, mode)
        if self.ids != (-1, -1):
            os.chown(real, *self.ids)

    @staticmethod
    def _call(func, target, action, *args):
        try:
            return func(target, *args)
        except FileExistsError:
            return None
        except OSError as exc:
            raise DistributorError("storage_error", "cannot %s %s: %s" % (action, target, exc.strerror or exc)) from exc

    def read_bytes(self, path: str, limit: int) -> bytes | None:
        real = self._real(path)
        try:
            with open_regular(real) as handle:
                return handle.read(limit + 1)
        except FileNotFoundError:
            return None
        except NotRegularFile as exc:
            raise not_a_record(real, exc.kind) from None
        except OSError as exc:
            raise DistributorError("storage_error", "cannot read %s: %s" % (real, exc.strerror)) from exc

    def write(self, path: str, chunks: Iterable[bytes]) -> None:
        try:
            item = self._stage(path, chunks)
            self._rename_synced([item], [fsync_path(item.staged)])
            FsyncEach.directories(self._directory_chain({os.path.dirname(item.real)}))
        finally:
            self._drop_staging()

    def write_many(self, items: Iterable[tuple[str, Callable[[], Iterable[bytes]]]]) -> None:
        """Durability in batches (see durability.py): a batch of staged files is made durable
        while the next batch is staged, and renamed once it is; then every directory written
        into (and its parents up to the root's parent) is made durable, so every output and
        every directory created is durable before the caller writes state."""
        durability = durability_for(self.root) if os.path.isdir(self.root) else FsyncEach()
        try:
            durability.directories(self._directory_chain(self._write_batches(durability, items)))
        finally:
            durability.close()

    def _write_batches(self, durability, items) -> set[str]:
        """Stage, sync and rename `items` batch by batch; the directories renamed into."""
        directories: set[str] = set()
        batch: list[Staged] = []
        size = 0
        pending: tuple[list, list] | None = None
        with ThreadPoolExecutor(SYNC_WORKERS) as pool:
            try:
                for path, factory in items:
                    batch.append(self._stage(path, factory()))
                    size += batch[-1].size
                    if len(batch) >= durability.batch_files or size >= SYNC_BATCH_BYTES:
                        if pending:
                            directories.update(self._rename_synced(pending[0], [f.result() for f in pending[1]]))
                        pending, batch, size = (batch, durability.submit(pool, batch)), [], 0
                if pending:
                    directories.update(self._rename_synced(pending[0], [f.result() for f in pending[1]]))
                pending = None
                if batch:
                    directories.update(self._rename_synced(batch, [f.result() for f in durability.submit(pool, batch)]))
                batch = []
            finally:
                for item in batch + (pending[0] if pending else []):
                    _unlink_quietly(item.staged)
                self._drop_staging()
        return directories

    def _stage(self, path: str, chunks: Iterable[bytes]) -> Staged:
        """`chunks` written to a new file in the attempt's staging directory, not yet durable.
        Created exclusively and never through a link (O_EXCL, O_NOFOLLOW); mode and ownership
        are set through the open file, so no name is resolved twice."""
        real = self._real(path, create_parents=True)
        staged = os.path.join(self._staging(path), os.path.basename(real))
        try:
            fd = os.open(staged, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        except OSError as exc:
            raise DistributorError("storage_error", "cannot stage %s at %s: %s" % (real, staged, exc.strerror or exc)) from exc
        try:
            size = 0
            with os.fdopen(fd, "wb") as handle:
                for chunk in chunks:
                    handle.write(chunk)
                    size += len(chunk)
                self._settle(handle.fileno(), 0o644 if self.file_mode is None else self.file_mode)
                ident = _identity(os.fstat(handle.fileno()))
        except BaseException as exc:
            _unlink_quietly(staged)
            if isinstance(exc, OSError):
                raise DistributorError("storage_error", "cannot write %s: %s" % (real, exc.strerror or exc)) from exc
            raise
        return Staged(path, staged, real, ident, size)

    def _staging(self, path: str) -> str:
        """This attempt's staging directory beside `path` (see base.staging_dir), made on first
        use. mkdir neither follows nor reuses what is already at the name: something there was
        put by someone else, and is refused."""
        real = self._real(staging_dir(path, self.token))
        if real not in self._staging_dirs:
            try:
                os.mkdir(real, 0o700)
            except FileExistsError:
                raise DistributorError("storage_error", "cannot stage files in %s: something already exists at that "
                                       "name, which only this attempt creates; remove it" % real) from None
            except OSError as exc:
                raise DistributorError("storage_error", "cannot create %s: %s" % (real, exc.strerror or exc)) from exc
            self._staging_dirs.add(real)
        return real

    def _drop_staging(self) -> None:
        """Remove the staging directories, empty once their files are renamed or removed."""
        for real in self._staging_dirs:
            with suppress(OSError):
                os.rmdir(real)
        self._staging_dirs.clear()

    def _verify(self, item: Staged) -> None:
        """Right before the rename: no directory on the way to the target has become a symbolic
        link, the staging directory beside it is still a directory, and the staged file is still
        the one this attempt created."""
        self._real(item.path)
        staging = os.path.dirname(item.staged)
        self._check_component(staging, item.path, True)
        info = _lstat_or_none(item.staged)
        if info is None or _identity(info) != item.ident:
            raise DistributorError("storage_error", "cannot write %s: its staged file %s was replaced or removed "
                                   "by someone else" % (item.real, item.staged))

    def _rename_synced(self, batch: list[Staged], results: list) -> set[str]:
        """Rename each staged file over its target, once every fsync of the batch succeeded
        (`results` are fsync_path's); what is not renamed is removed. The directories renamed into."""
        failed = next((r for r in results if r), None)
        done = 0
        try:
            if failed:
                raise DistributorError("storage_error", "cannot write %s: %s" % (failed[0], failed[1].strerror or failed[1])) from failed[1]
            for item in batch:
                self._verify(item)
                try:
                    os.replace(item.staged, item.real)
                except OSError as exc:
                    raise DistributorError("storage_error", "cannot write %s: %s" % (item.real, exc.strerror or exc)) from exc
                done += 1
        except DistributorError:
            for item in batch[done:]:
                _unlink_quietly(item.staged)
            raise
        return {os.path.dirname(item.real) for item in batch}

    def _directory_chain(self, directories: set[str]) -> list[str]:
        """Each directory and every parent up to the root's parent, deepest first: a created
        directory is an entry in its parent, and the root itself may have been created by this run."""
        stop = os.path.dirname(os.path.abspath(self.root))
        every = set()
        for directory in directories:
            while directory not in every and len(directory) > len(stop):
                every.add(directory)
                directory = os.path.dirname(directory)
        every.add(stop)
        return sorted(every, key=len, reverse=True)

    def delete(self, path: str) -> bool:
        """A staged file already gone still tidies its staging directory: an attempt that died
        after its renames left that directory empty, and recovery deletes staged names."""
        real = self._real(path)
        try:
            os.unlink(real)
        except FileNotFoundError:
            if is_reserved(path):
                self._remove_empty_parents(path)
            return False
        except OSError as exc:
            raise DistributorError("storage_error", "cannot delete %s: %s" % (real, exc.strerror)) from exc
        self._remove_empty_parents(path)
        return True

    def _remove_empty_parents(self, path: str) -> None:
        """Deleting the last file of a directory deletes the directory, up to (not including) the base."""
        head = path.rpartition("/")[0]
        while head:
            try:
                os.rmdir(self._real(head))
            except OSError as exc:
                if exc.errno in (errno.ENOTEMPTY, errno.EEXIST, errno.ENOENT):
                    return
                raise DistributorError("storage_error", "cannot remove directory %s: %s" % (self.describe(head), exc.strerror)) from exc
            head = head.rpartition("/")[0]

    def exists(self, path: str) -> bool:
        return os.path.lexists(self._real(path))

    def list_files(self) -> list[str]:
        """A directory that cannot be listed fails the listing: taken as empty, its files would
        be overwritten unseen. One removed while the walk runs is gone, which is no error."""
        top = self._real("")
        found = []
        for directory, dirs, files in os.walk(top, onerror=_unlistable, followlinks=False):
            rel = os.path.relpath(directory, top)
            prefix = "" if rel == "." else rel.replace(os.sep, "/") + "/"
            found.extend(prefix + name for name in files)
            found.extend(prefix + name for name in dirs if os.path.islink(os.path.join(directory, name)))
        return sorted(found)

    @contextmanager
    def lock(self, timeout: float, expiry: float = LOCK_EXPIRY_SECONDS) -> Iterator[Lease]:
        """flock on `.distributor.lock`: the kernel releases it when a holder dies and never while
        it lives, so the lock neither expires nor needs renewing (the record's `expires_at` only
        informs). It can still be lost: a lock file deleted by hand lets the next publisher flock
        a new one. So the lease confirms that the file at the lock's name is still the one this
        run holds, and the lock is removed at the end only then."""
        lock_path = self._real(LOCK_NAME, create_parents=True)
        deadline = time.monotonic() + timeout
        while True:
            fd = _open_lock_file(lock_path)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                if time.monotonic() >= deadline:
                    raise DistributorError(
                        "locked",
                        "%s is locked by %s; waited %gs (lock_timeout)"
                        % (self.describe(), describe_holder(self.read_bytes(LOCK_NAME, LOCK_LIMIT)), timeout),
                    ) from None
                time.sleep(LOCK_POLL_SECONDS)
                continue
            if _same_file(fd, lock_path):
                break
            os.close(fd)
        try:
            os.ftruncate(fd, 0)
            os.write(fd, holder_record(time.time(), expiry, self.token))
            with Lease(lambda: _same_file(fd, lock_path), lambda: self.read_bytes(LOCK_NAME, LOCK_LIMIT), None,
                       self.describe(LOCK_NAME)) as lease:
                yield lease
        finally:
            try:
                if _same_file(fd, lock_path):
                    os.unlink(lock_path)
            finally:
                os.close(fd)


def _unlistable(exc: OSError) -> None:
    if not isinstance(exc, FileNotFoundError):
        raise DistributorError("storage_error", "cannot list %s: %s; distributor does not write where it cannot see "
                               "what is there" % (exc.filename, exc.strerror or exc)) from exc


def _open_lock_file(lock_path: str) -> int:
    """The lock file, created if missing; what someone else put at its name (a FIFO, a
    directory, a link) is refused without blocking on it."""
    try:
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, 0o644)
    except OSError as exc:
        info = _lstat_or_none(lock_path)
        if info is not None and kind_of(info.st_mode):
            raise not_a_record(lock_path, kind_of(info.st_mode)) from None
        raise DistributorError("storage_error", "cannot open lock %s: %s" % (lock_path, exc.strerror or exc)) from exc
    kind = kind_of(os.fstat(fd).st_mode)
    if kind:
        os.close(fd)
        raise not_a_record(lock_path, kind)
    return fd


def _identity(info: os.stat_result) -> tuple[int, int]:
    return info.st_dev, info.st_ino


def _lstat_or_none(path: str):
    try:
        return os.lstat(path)
    except OSError:
        return None


def _unlink_quietly(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def _same_file(fd: int, path: str) -> bool:
    """After flock, the file may have been unlinked by its previous holder: then retry."""
    try:
        return os.fstat(fd).st_ino == os.stat(path).st_ino
    except FileNotFoundError:
        return False
