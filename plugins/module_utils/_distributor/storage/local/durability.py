# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""How a local write becomes durable: file by file with fsync(2), or a whole batch at once with
one syncfs(2) where the filesystem and kernel make that equivalent. Paid once per batch, not
once per file: on ext4 a create waits for every journal commit that concurrent fsyncs force,
so per-file fsyncs slow the staging of the next files too."""

from __future__ import annotations

import ctypes
import functools
import os
import re
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager, suppress
from typing import Iterable, Iterator, NamedTuple

from ..refusals import failure, os_errors

# Filesystems whose syncfs(2) writes back every dirty file and commits the journal (or log, or
# transaction), so one call makes a batch of files and every rename and mkdir before it durable.
# Elsewhere (network, FUSE, overlay, unknown) each file and directory is fsynced instead.
SYNCFS_FILESYSTEMS = frozenset({"ext4", "xfs", "btrfs"})
SYNCFS_KERNEL = (5, 8)  # from Linux 5.8 syncfs(2) reports writeback errors; before, it returned 0 regardless


class Staged(NamedTuple):
    """A file staged and not yet renamed: what a batch syncs, renames or removes."""
    path: str  # the output's path under the bundle path
    name: str  # its file name, in the staging directory and in its target directory alike
    directory: str  # the target directory, relative to the storage root
    staging: int  # descriptor of the attempt's staging directory beside the target
    where: str  # the staged file's location, for messages
    ident: tuple[int, int]  # (st_dev, st_ino) of the staged file: which file, on which filesystem
    size: int

    def discard(self) -> None:
        """Best effort: the staging directory is removed at the end, and a name it still
        holds only keeps that directory, which the next attempt's recovery deletes."""
        with suppress(OSError):
            os.unlink(self.name, dir_fd=self.staging)


class Directory(NamedTuple):
    """An open directory whose entries a batch changed, to be made durable."""
    fd: int
    where: str


@contextmanager
def root_parent(root: str) -> Iterator[Directory]:
    """The directory holding the root: the operator's, outside the destination, so opened by
    name; it holds the root's entry, which this run may have created."""
    parent = os.path.dirname(os.path.abspath(root))
    with os_errors("open", parent):
        fd = os.open(parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        yield Directory(fd, parent)
    finally:
        os.close(fd)


class FsyncEach:
    """fsync(2) of every staged file from the pool (the filesystem folds concurrent fsyncs into
    shared journal commits), then of every directory."""

    batch_files = 512

    @staticmethod
    def submit(pool: ThreadPoolExecutor, batch: list[Staged]) -> list[Future]:
        """The syncs of a batch, started while the next batch is staged; each result is
        fsync_staged's (None or the failure)."""
        return [pool.submit(fsync_staged, item) for item in batch]

    @staticmethod
    def directories(chain: Iterable[Directory]) -> None:
        """Every directory renamed or made into, so that the entries themselves are durable."""
        for directory in chain:
            sync_directory(directory)

    def close(self) -> None:
        """Nothing to release; there to share SyncFs's interface."""


class SyncFs:
    """One syncfs(2) of the destination's filesystem makes a whole batch durable, and after the
    renames every rename and directory created. The descriptor is opened before the first file
    is staged: syncfs reports the writeback errors of its filesystem since then, so a failed
    writeback of a staged file fails the publish as a failed fsync does (an error of an
    unrelated file on the same filesystem fails it too, which errs on the safe side). A file or
    directory on another filesystem (a mount point below the root) is fsynced on its own."""

    batch_files = 4096

    def __init__(self, root: int, where: str):
        self.where = where
        self.fd = os.dup(root)
        self.device = os.fstat(self.fd).st_dev

    def _sync(self):
        try:
            syncfs(self.fd)
        except OSError as exc:
            return "%s (syncfs of its filesystem)" % self.where, exc
        return None

    def submit(self, pool: ThreadPoolExecutor, batch: list[Staged]) -> list[Future]:
        """One syncfs for the batch, and an fsync for each file on another filesystem."""
        elsewhere = [item for item in batch if item.ident[0] != self.device]
        return [pool.submit(self._sync)] + [pool.submit(fsync_staged, item) for item in elsewhere]

    def directories(self, chain: Iterable[Directory]) -> None:
        """One syncfs after the renames, and an fsync for each directory on another filesystem."""
        failed = self._sync()
        if failed:
            raise failure("sync directories of", *failed) from failed[1]
        for directory in chain:
            if os.fstat(directory.fd).st_dev != self.device:
                sync_directory(directory)

    def close(self) -> None:
        """The duplicate of the root's descriptor syncfs was called on."""
        os.close(self.fd)


def durability_for(root: int, where: str) -> FsyncEach | SyncFs:
    """The strategy for the filesystem of the open root directory `root`."""
    return SyncFs(root, where) if syncfs_usable(root) else FsyncEach()


@functools.lru_cache(maxsize=1)
def _libc_syncfs():
    try:
        function = ctypes.CDLL(None, use_errno=True).syncfs
    except (OSError, AttributeError):
        return None
    function.argtypes = [ctypes.c_int]
    function.restype = ctypes.c_int
    return function


def syncfs(fd: int) -> None:
    """syncfs(2), which Python's os module does not offer; its failure as an OSError."""
    if _libc_syncfs()(fd) != 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code))


def syncfs_usable(path: str | int) -> bool:
    """Whether one syncfs(2) makes everything written below `path` on its filesystem durable
    and reports the writeback errors: Linux 5.8 or later, and a filesystem in SYNCFS_FILESYSTEMS.
    os.sync() is no substitute: it reports no error, and POSIX lets it return before the writes."""
    if not hasattr(os, "uname") or os.uname().sysname != "Linux":
        return False
    release = re.match(r"(\d+)\.(\d+)", os.uname().release)
    if release is None or (int(release.group(1)), int(release.group(2))) < SYNCFS_KERNEL or _libc_syncfs() is None:
        return False
    return filesystem_type(path) in SYNCFS_FILESYSTEMS


def filesystem_type(path: str | int) -> str | None:
    """The type of the filesystem holding `path` or the open descriptor (`ext4`), from
    /proc/self/mountinfo; None when unknown."""
    device = os.stat(path).st_dev
    wanted = "%d:%d" % (os.major(device), os.minor(device))
    try:
        with open("/proc/self/mountinfo", encoding="utf-8", errors="replace") as handle:
            for line in handle:
                # id parent major:minor root mount-point options [optional fields] - type source ...
                fields = line.split()
                if len(fields) > 3 and fields[2] == wanted and "-" in fields[3:-1]:
                    return fields[fields.index("-", 3) + 1]
    except OSError:
        return None
    return None


def sync_directory(directory: Directory) -> None:
    """An entry renamed or made in a directory is durable only once the directory is."""
    with os_errors("sync directory", directory.where):
        os.fsync(directory.fd)


def fsync_staged(item: Staged):
    """None, or (location, error): run in worker threads, so errors travel back as values. The
    staged file is opened by name in the attempt's own staging directory, which only
    distributor's account can write."""
    try:
        fd = os.open(item.name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=item.staging)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError as exc:
        return item.where, exc
    return None
