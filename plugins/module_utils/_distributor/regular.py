# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Opening a file for reading that can neither hang nor follow a link.

Reading a FIFO blocks until someone writes into it, and a device may block or never end. Anyone
who can write into a bundle or a destination can put one where distributor reads a regular file
(a bundle file, manifest.json, `.distributor.json`, the journal, the lock), also after the
manifest was checked. So the name is looked at first (lstat: refused without being opened), and
what the open then returns is checked again (fstat): a FIFO swapped in between is opened without
blocking (O_NONBLOCK) and refused unread.

A hard link is not followed, it is the file: O_NOFOLLOW does not stop it. Whoever can write a
destination directory can give any file of that filesystem a name there (where the kernel lets
them: fs.protected_hardlinks), and a root-run publish would then read it into a diff or truncate
it as its lock. So a destination file with more names than distributor made is neither read nor
written (links_not_ours, ForeignLinks).
"""

from __future__ import annotations

import errno
import os
import stat
from typing import BinaryIO

from .errors import DistributorError

_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISLNK, "a symbolic link"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
)


def kind_of(mode: int) -> str | None:
    """What a file of this st_mode is, for messages; None for a regular file."""
    if stat.S_ISREG(mode):
        return None
    return next((kind for test, kind in _KINDS if test(mode)), "not a regular file")


def links_not_ours(links: int, ours: int = 1) -> bool:
    """Whether a destination file whose link count is `links` has names distributor did not make:
    the one place that decides it. Every file distributor writes it creates itself and renames
    into place, so it has one name; `ours` is for names distributor makes on purpose (release
    generations sharing a file), each counted by the storage only where it is the very same file
    (Storage.shared_links). Fewer than `ours` is not foreign: a name removed leaves no other way
    to the file."""
    return links > ours


FIND_THE_NAME = "Find out who made it, then remove that name (the file keeps its other names)"


class ForeignLinks(DistributorError):
    """A destination file with names distributor did not make (see links_not_ours), or whose
    names it cannot count (`links` None: an SFTP server that does not say). Neither read nor
    written: a diff shows why, `verify` counts it as drifted and replaces it by a rename (which
    never writes into the file), a record or the lock is refused (storage_error)."""

    def __init__(self, where: str, links: int | None, why: str | None = None, advice: str = FIND_THE_NAME):
        """`why` and `advice` word a refusal of its own (releases.home.NotVouched, UnprovenLinks)."""
        if why is None and links is None:
            why = ("cannot tell how many names (hard links) %s has: the server's listing does not say, and "
                   "distributor reads or writes no file that may have a name elsewhere" % where)
        elif why is None:
            why = ("%s has %d links: the same file has another name, which distributor did not make; a hard link "
                   "planted at a destination can lead to any file of its filesystem, so distributor neither reads "
                   "nor writes through it" % (where, links))
        super().__init__("storage_error", why + ". " + advice)
        self.where = where
        self.links = links

    @property
    def shown(self) -> str:
        """Why the content is not shown, in a diff's words."""
        if self.links is None:
            return "the server does not say how many links the file has, so distributor does not read it"
        return "the file has %d links (another name of it exists), so distributor does not read it" % self.links


class UnprovenLinks(ForeignLinks):
    """A file release generations share (Storage.shared_links), on a storage that cannot tell
    whether its other names are those generations' very file or names planted beside them with
    the same count: SFTP version 3 has no inode numbers. The count alone vouches for nothing
    (anyone who can write the destination can give a file of theirs as many names), so such a
    file is never read: a diff says why, `verify` counts it as drifted and writes it again."""

    def __init__(self, where: str, links: int):
        super().__init__(where, links, "%s has %d links, and over SFTP distributor cannot tell whether they are the "
                         "release generations' own (the protocol gives no inode numbers), so it reads no file with "
                         "more than one name" % (where, links),
                         "Nothing needs doing: a publish with verify writes it again, and over SFTP a diff cannot "
                         "show it")

    @property
    def shown(self) -> str:
        """Why the content is not shown, in a diff's words."""
        return ("the file has %d links (the releases share it) and SFTP cannot tell they are distributor's own, so "
                "distributor does not read it" % self.links)


class NotRegularFile(OSError):
    """Raised instead of opening something that is not a regular file; `kind` says what it is."""

    def __init__(self, path: str, kind: str):
        super().__init__(errno.EINVAL, "it is %s, not a regular file" % kind, path)
        self.kind = kind


def open_regular(path: str) -> BinaryIO:
    """`path` opened for binary reading; NotRegularFile when it is anything but a regular file
    (a symbolic link included: callers resolve the links they allow first)."""
    return os.fdopen(open_regular_fd(path), "rb")


def open_regular_fd(path: str) -> int:
    """As open_regular, as a bare descriptor: a file object costs three more system calls (a
    stat, an ioctl and a seek), which a read of every file of a bundle need not pay."""
    kind = kind_of(os.lstat(path).st_mode)
    if kind:
        raise NotRegularFile(path, kind)
    return open_looked_at(path)


def open_looked_at(path: str) -> int:
    """open_regular_fd without its look: for a name this run has already looked at (a bundle's
    file, lstat'ed when the bundle was loaded). What the open returns is checked as ever, so
    anything swapped in since is opened without blocking and refused unread."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise NotRegularFile(path, "a symbolic link") from None
        raise
    try:
        kind = kind_of(os.fstat(fd).st_mode)
    except BaseException:
        os.close(fd)
        raise
    if kind:
        os.close(fd)
        raise NotRegularFile(path, kind)
    # O_NONBLOCK stays set: it changes nothing for a regular file, and clearing it would
    # cost two more system calls for every file read.
    return fd
