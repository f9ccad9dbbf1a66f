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
from typing import Iterable, NamedTuple

from ..errors import DistributorError

# Filesystems whose syncfs(2) writes back every dirty file and commits the journal (or log, or
# transaction), so one call makes a batch of files and every rename and mkdir before it durable.
# Elsewhere (network, FUSE, overlay, unknown) each file and directory is fsynced instead.
SYNCFS_FILESYSTEMS = frozenset({"ext4", "xfs", "btrfs"})
SYNCFS_KERNEL = (5, 8)  # from Linux 5.8 syncfs(2) reports writeback errors; before, it returned 0 regardless


class Staged(NamedTuple):
    path: str  # the output's path under the bundle path
    name: str  # its file name, in the staging directory and in its target directory alike
    directory: str  # the target directory, relative to the storage root
    staging: int  # descriptor of the attempt's staging directory beside the target
    where: str  # the staged file's location, for messages
    ident: tuple[int, int]  # (st_dev, st_ino) of the staged file: which file, on which filesystem
    size: int


class Directory(NamedTuple):
    """An open directory whose entries a batch changed, to be made durable."""
    fd: int
    where: str


class FsyncEach:
    """fsync(2) of every staged file from the pool (the filesystem folds concurrent fsyncs into
    shared journal commits), then of every directory."""

    batch_files = 512

    @staticmethod
    def submit(pool: ThreadPoolExecutor, batch: list[Staged]) -> list[Future]:
        return [pool.submit(fsync_staged, item) for item in batch]

    @staticmethod
    def directories(chain: Iterable[Directory]) -> None:
        for directory in chain:
            sync_directory(directory)

    def close(self) -> None:
        """Holds nothing."""


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
        elsewhere = [item for item in batch if item.ident[0] != self.device]
        return [pool.submit(self._sync)] + [pool.submit(fsync_staged, item) for item in elsewhere]

    def directories(self, chain: Iterable[Directory]) -> None:
        failed = self._sync()
        if failed:
            raise DistributorError("storage_error", "cannot sync directories of %s: %s"
                                   % (failed[0], failed[1].strerror or failed[1])) from failed[1]
        for directory in chain:
            if os.fstat(directory.fd).st_dev != self.device:
                sync_directory(directory)

    def close(self) -> None:
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
    try:
        os.fsync(directory.fd)
    except OSError as exc:
        raise DistributorError("storage_error", "cannot sync directory %s: %s" % (directory.where, exc.strerror or exc)) from exc


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
