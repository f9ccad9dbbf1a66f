# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A local destination reached through directory descriptors only.

A path that is checked and then handed to the kernel again by name can be swapped for a symbolic
link in between: anyone who can write into a web root wins that race within seconds, and a root-run
publish then creates, chmods, chowns, reads or deletes where the link points. So no name is ever
resolved from the root twice. Each directory is opened relative to the one before it with
`O_DIRECTORY | O_NOFOLLOW`, and every act names one component relative to a descriptor distributor
holds (`dir_fd=`; attributes with `fchmod`/`fchown` on what it opened), as rsync's receiver does
since its symlink CVEs. A swap can make an operation fail; it cannot move one outside the tree the
descriptors were opened in. Every OSError of these acts leaves through refusals.os_errors, worded
as SFTP words the same refusal.
"""

from __future__ import annotations

import errno
import os
import stat
from typing import Callable, Iterator

from ...limits import DEPTH_LIMIT
from ...paths import is_staging
from ...regular import ForeignLinks, kind_of, links_not_ours
from ..refusals import disappeared, link_refused, not_a_directory, not_writable, os_errors, too_deep

DIRECTORY_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
# Reading what is found at a destination: never through a link, never blocking on a FIFO, never
# taking a terminal planted there as the run's controlling one (a device is refused once opened).
READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
CREATE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


def entry_mode(parent: int, name: str) -> int | None:
    """The st_mode of `name` in the directory `parent`, without following it; None when absent."""
    try:
        return os.stat(name, dir_fd=parent, follow_symlinks=False).st_mode
    except FileNotFoundError:
        return None


def open_directory(parent: int, name: str, where: str, needed_by: str) -> int | None:
    """`name` in `parent` opened as a directory, never through a link; None when absent. What is
    there instead is named: a link or a file in the way are refusals, not errors of the act below."""
    with os_errors("open directory", where):
        try:
            return os.open(name, DIRECTORY_FLAGS, dir_fd=parent)
        except FileNotFoundError:
            return None
        except OSError as exc:
            if exc.errno not in (errno.ELOOP, errno.ENOTDIR):
                raise
        mode = entry_mode(parent, name)
    if mode is not None and stat.S_ISLNK(mode):
        raise link_refused(where)
    raise not_a_directory(where, needed_by)


def make_directory(parent: int, name: str, where: str, needed_by: str, mode: int = 0o777) -> tuple[int, bool]:
    """(descriptor, created): `name` in `parent`, made when absent. `created` is true only for a
    directory this call made and then opened as its own account's: only such a one may be given
    the configured mode and owner (anything else found there was put by someone else)."""
    with os_errors("create directory", where):
        try:
            os.mkdir(name, mode, dir_fd=parent)
            made = True
        except FileExistsError:
            made = False
    fd = open_directory(parent, name, where, needed_by)
    if fd is None:
        raise disappeared(where)
    return fd, made and os.fstat(fd).st_uid == os.geteuid()


def identity_at(top: int, parts: list[str], where: Callable[[int], str]) -> tuple[int, int] | None:
    """(st_dev, st_ino) of the directory `parts` below `top`, walked afresh without following a
    link; None when it is not (or no longer) there as a directory. `where(i)` names the i-th
    component's location for messages."""
    fd = os.dup(top)
    try:
        for index, name in enumerate(parts):
            with os_errors("open directory", where(index)):
                try:
                    child = os.open(name, DIRECTORY_FLAGS, dir_fd=fd)
                except OSError as exc:
                    if exc.errno in (errno.ENOENT, errno.ELOOP, errno.ENOTDIR):
                        return None
                    raise
            os.close(fd)
            fd = child
        info = os.fstat(fd)
        return info.st_dev, info.st_ino
    finally:
        os.close(fd)


def open_regular_at(parent: int, name: str, where: str, flags: int = READ_FLAGS, action: str = "read",
                    ours: Callable[[os.stat_result], int] | None = None) -> int | None:
    """A regular file in `parent` opened with `flags` (reading, by default); None when absent.
    Anything else (a FIFO, a device, a directory: NotRegular) is refused unread, without blocking
    on it: `flags` must hold O_NOFOLLOW and O_NONBLOCK. A link is refused as links are everywhere
    in a destination, whatever name it holds. So is a file with a name distributor did not make
    (ForeignLinks; `ours(fstat)` says how many names of that very file it made, asked only of a
    file with more than one: LocalLinks._names_made): judged on the open descriptor, by the fstat
    that tells its kind, so a name swapped after the check cannot lead the read or write that
    follows elsewhere."""
    with os_errors(action, where):
        try:
            fd = os.open(name, flags, 0o644, dir_fd=parent)
        except FileNotFoundError:
            return None
        except OSError as exc:
            mode = entry_mode(parent, name) if exc.errno in (errno.ELOOP, errno.ENXIO, errno.EISDIR) else None
            if mode is not None and stat.S_ISLNK(mode):
                raise link_refused(where) from None
            if mode is not None and kind_of(mode):
                raise NotRegular(where, kind_of(mode)) from None
            raise
    try:
        info = os.fstat(fd)
        kind = kind_of(info.st_mode)
        foreign = not kind and info.st_nlink > 1 and links_not_ours(info.st_nlink, ours(info) if ours else 1)
    except BaseException:
        os.close(fd)
        raise
    if kind or foreign:
        os.close(fd)
        raise NotRegular(where, kind) if kind else ForeignLinks(where, info.st_nlink)
    return fd


def rmdir_at(parent: int, name: str) -> bool:
    """rmdir of `name` in `parent`; False when what is there is not an empty directory (not
    empty, gone, or swapped for a link or a file), which stays."""
    try:
        os.rmdir(name, dir_fd=parent)
    except OSError as exc:
        if exc.errno in (errno.ENOTEMPTY, errno.EEXIST, errno.ENOENT, errno.ENOTDIR):
            return False
        raise
    return True


def refuse_unwritable(fd: int, where: str) -> None:
    """not_writable unless the kernel lets this account (its effective ids) create files in the
    directory `fd` (check mode's look ahead: LocalStorage.check_writable)."""
    with os_errors("inspect", where):
        if os.access(".", os.W_OK | os.X_OK, dir_fd=fd, effective_ids=True):
            return
        if os.fstatvfs(fd).f_flag & os.ST_RDONLY:
            raise not_writable(where, "is on a read-only file system")
        found = os.fstat(fd)
    raise not_writable(where, "does not let uid %d create files in it (mode %04o, owner uid %d)" % (
        os.geteuid(), stat.S_IMODE(found.st_mode), found.st_uid))


class NotRegular(Exception):
    """Something other than a regular file where distributor reads one; `kind` says what."""

    def __init__(self, where: str, kind: str):
        super().__init__(where, kind)
        self.where = where
        self.kind = kind


def read_at_most(fd: int, limit: int) -> bytearray:
    """At most `limit + 1` bytes: enough for a caller to tell a file over its bound, never more.
    Read into one buffer sized from the file, and returned as it is: a planted record of any
    size costs the bound once, not once more for joining chunks or copying them into bytes."""
    buffer = bytearray(min(os.fstat(fd).st_size, limit) + 1)
    view = memoryview(buffer)
    got = 0
    while got < len(buffer):
        count = os.readv(fd, [view[got:]])
        if not count:
            break
        got += count
    view.release()
    del buffer[got:]
    return buffer


def write_fully(fd: int, data: bytes) -> None:
    """os.write may write less than asked; a file object would cost a buffer and three system
    calls more per file."""
    written = os.write(fd, data)
    if written == len(data):
        return
    view = memoryview(data)[written:]
    while view:
        view = view[os.write(fd, view):]


def list_tree(top: int, where: Callable[[str], str], seen: Callable[[int, str, list], None] | None = None) -> Iterator[str]:
    """Every entry below the directory `top` that is not a directory (links included, never
    followed), and every empty staging directory (paths.is_staging: a dead attempt's, which no
    file below shows), as slash-separated relative paths, depth first and without recursion: a
    planted tree of any depth is refused past DEPTH_LIMIT levels, and only that many directories
    are open at once. A directory that cannot be listed fails the listing (taken as empty, its
    files would be overwritten unseen); one removed while the walk runs is gone, which is no error.
    `seen(descriptor, path, entries)`, when given, is shown each directory's entries as they are
    read, through the directory's own descriptor (LocalStorage.survey looks at each there)."""
    def entries_of(fd: int, rel: str) -> list[tuple[str, bool]]:
        entries = _subdirectories_of(fd, rel, where)
        if seen is not None:
            seen(fd, rel, entries)
        return entries
    stack = [(os.dup(top), "", iter(entries_of(top, "")))]
    try:
        while stack:
            fd, prefix, pending = stack[-1]
            entry = next(pending, None)
            if entry is None:
                os.close(stack.pop()[0])
                continue
            name, is_directory = entry
            if not is_directory:
                yield prefix + name
                continue
            if len(stack) > DEPTH_LIMIT:
                raise too_deep(where(prefix + name))
            with os_errors("list", where(prefix + name)):
                try:
                    child = os.open(name, DIRECTORY_FLAGS, dir_fd=fd)
                except FileNotFoundError:
                    continue
                except OSError as exc:
                    if exc.errno not in (errno.ELOOP, errno.ENOTDIR):
                        raise
                    child = None  # swapped for a link or a file since it was listed
            if child is None:
                yield prefix + name
                continue
            entries = entries_of(child, prefix + name)
            if not entries and is_staging(name):
                os.close(child)
                yield prefix + name
                continue
            stack.append((child, prefix + name + "/", iter(entries)))
    finally:
        for fd, _prefix, _pending in stack:
            os.close(fd)


def _subdirectories_of(fd: int, rel: str, where: Callable[[str], str]) -> list[tuple[str, bool]]:
    """(name, is a directory) of each entry of the open directory `fd`, read at once so that the
    walk holds one descriptor per level, not one per directory seen."""
    with os_errors("list", where(rel), "distributor does not write where it cannot see what is there"):
        try:
            with os.scandir(fd) as entries:
                return [(entry.name, entry.is_dir(follow_symlinks=False)) for entry in entries]
        except FileNotFoundError:
            return []
