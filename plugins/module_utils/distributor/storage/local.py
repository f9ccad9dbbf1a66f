# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A directory on the machine that runs the module."""

from __future__ import annotations

import errno
import fcntl
import os
import stat
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Callable, Iterable, Iterator

from ..attributes import ownership, parse_mode
from ..errors import DistributorError
from ..paths import LOCK_NAME, join
from .base import LOCK_EXPIRY_SECONDS, LOCK_POLL_SECONDS, Lease, Storage, describe_holder, holder_record, temp_name

SYNC_BATCH = 512  # staged files written before their fsyncs and renames: bounds open work, not fds
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

    def describe(self, path: str = "") -> str:
        return os.path.join(self.root, join(self.base, path))

    def _real(self, path: str, create_parents: bool = False) -> str:
        """The filesystem path of `path`, refusing any symlink between the root and it."""
        current = self.root
        if create_parents and not os.path.isdir(current):
            self._call(os.makedirs, current, "create the root directory")
        parts = join(self.base, path).split("/") if join(self.base, path) else []
        for i, part in enumerate(parts):
            current = os.path.join(current, part)
            try:
                mode = os.lstat(current).st_mode
            except FileNotFoundError:
                if create_parents and i < len(parts) - 1:
                    self._call(os.mkdir, current, "create directory")
                    self._settle(current, self.directory_mode)
                    continue
                return os.path.join(current, *parts[i + 1:])
            if stat.S_ISLNK(mode):
                raise DistributorError(
                    "storage_error",
                    "%s is a symbolic link; distributor never follows links inside a destination root" % current,
                )
        return current

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

    def read_bytes(self, path: str) -> bytes | None:
        real = self._real(path)
        try:
            with open(real, "rb") as handle:
                return handle.read()
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise DistributorError("storage_error", "cannot read %s: %s" % (real, exc.strerror)) from exc

    def write(self, path: str, chunks: Iterable[bytes]) -> None:
        staged, real = self._stage(path, chunks)
        self._rename_synced([(staged, real)], [_fsync_path(staged)])
        self._sync_directories({os.path.dirname(real)})

    def write_many(self, items: Iterable[tuple[str, Callable[[], Iterable[bytes]]]]) -> None:
        """Durability in batches: a batch of staged files is fsynced from a small pool (the
        filesystem folds concurrent fsyncs into shared journal commits) while the next batch is
        staged, and renamed once all its fsyncs are done; every directory written into (and its
        parents up to the root) is fsynced once at the end, so every output and every directory
        created is durable before the caller writes state."""
        directories: set[str] = set()
        batch: list[tuple[str, str]] = []
        pending: tuple[list, list] | None = None
        with ThreadPoolExecutor(SYNC_WORKERS) as pool:
            try:
                for path, factory in items:
                    batch.append(self._stage(path, factory()))
                    if len(batch) >= SYNC_BATCH:
                        if pending:
                            directories.update(self._rename_synced(pending[0], [f.result() for f in pending[1]]))
                        pending, batch = (batch, [pool.submit(_fsync_path, staged) for staged, _real in batch]), []
                if pending:
                    directories.update(self._rename_synced(pending[0], [f.result() for f in pending[1]]))
                pending = None
                directories.update(self._rename_synced(batch, list(pool.map(_fsync_path, (staged for staged, _real in batch)))))
                batch = []
            finally:
                for staged, _real in batch + (pending[0] if pending else []):
                    _unlink_quietly(staged)
        self._sync_directories(directories)

    def _stage(self, path: str, chunks: Iterable[bytes]) -> tuple[str, str]:
        """(staged, real): `chunks` written to the staged name, not yet durable."""
        real = self._real(path, create_parents=True)
        staged = self._real(temp_name(path, self.token))
        try:
            with open(staged, "wb") as handle:
                for chunk in chunks:
                    handle.write(chunk)
            self._settle(staged, 0o644 if self.file_mode is None else self.file_mode)
        except BaseException as exc:
            _unlink_quietly(staged)
            if isinstance(exc, OSError):
                raise DistributorError("storage_error", "cannot write %s: %s" % (real, exc.strerror or exc)) from exc
            raise
        return staged, real

    def _rename_synced(self, batch: list[tuple[str, str]], results: list) -> set[str]:
        """Rename each staged file over its target, once every fsync of the batch succeeded
        (`results` are _fsync_path's); what is not renamed is removed. The directories renamed into."""
        failed = next((r for r in results if r), None)
        done = 0
        try:
            if failed:
                raise DistributorError("storage_error", "cannot write %s: %s" % (failed[0], failed[1].strerror or failed[1])) from failed[1]
            for staged, real in batch:
                try:
                    os.replace(staged, real)
                except OSError as exc:
                    raise DistributorError("storage_error", "cannot write %s: %s" % (real, exc.strerror or exc)) from exc
                done += 1
        except DistributorError:
            for staged, _real in batch[done:]:
                _unlink_quietly(staged)
            raise
        return {os.path.dirname(real) for _staged, real in batch}

    def _sync_directories(self, directories: set[str]) -> None:
        """fsync each directory and every parent up to the root's parent: a created directory is
        an entry in its parent, and the root itself may have been created by this run."""
        stop = os.path.dirname(os.path.abspath(self.root))
        every = set()
        for directory in directories:
            while directory not in every and len(directory) > len(stop):
                every.add(directory)
                directory = os.path.dirname(directory)
        every.add(stop)
        for directory in sorted(every, key=len, reverse=True):
            try:
                _fsync(directory, os.O_DIRECTORY)
            except OSError as exc:
                raise DistributorError("storage_error", "cannot sync directory %s: %s" % (directory, exc.strerror or exc)) from exc

    def delete(self, path: str) -> bool:
        real = self._real(path)
        try:
            os.unlink(real)
        except FileNotFoundError:
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
        top = self._real("")
        found = []
        for directory, dirs, files in os.walk(top, followlinks=False):
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
            fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                if time.monotonic() >= deadline:
                    raise DistributorError(
                        "locked",
                        "%s is locked by %s; waited %gs (lock_timeout)"
                        % (self.describe(), describe_holder(self.read_bytes(LOCK_NAME)), timeout),
                    ) from None
                time.sleep(LOCK_POLL_SECONDS)
                continue
            if _same_file(fd, lock_path):
                break
            os.close(fd)
        try:
            os.ftruncate(fd, 0)
            os.write(fd, holder_record(time.time(), expiry, self.token))
            with Lease(lambda: _same_file(fd, lock_path), lambda: self.read_bytes(LOCK_NAME), None,
                       self.describe(LOCK_NAME)) as lease:
                yield lease
        finally:
            try:
                if _same_file(fd, lock_path):
                    os.unlink(lock_path)
            finally:
                os.close(fd)


def _fsync(path: str, flags: int) -> None:
    fd = os.open(path, os.O_RDONLY | flags)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_path(path: str):
    """None, or (path, error): run in worker threads, so errors travel back as values."""
    try:
        _fsync(path, os.O_NOFOLLOW)
    except OSError as exc:
        return path, exc
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
