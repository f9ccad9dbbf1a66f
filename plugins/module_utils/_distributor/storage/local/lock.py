# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The lock primitive of local storage: flock(2) on `.distributor.lock` (the protocol is
storage/lease.py, whose wait and Lease it uses).

The kernel releases a flock when its holder dies and never while it lives, so this lock neither
expires nor needs renewing (the record's `expires_at` only informs). It can still be lost: a lock
file deleted by hand lets the next publisher flock a new one. So the lease confirms that the file
at the lock's name is still the one this run holds, and the lock is removed at the end only then.
Every look at the lock's name is made in the bundle path's directory, held open by the caller for
the whole time.
"""

from __future__ import annotations

import fcntl
import os
import time
from contextlib import contextmanager
from typing import Callable, Iterator

from ...paths import LOCK_NAME
from ..judging import not_a_record
from .descriptors import NotRegular, open_regular_at
from ..lease import Lease, holder_record, wait_for_lock
from ..refusals import lock_not_ours, os_errors

FLOCK_ADVICE = "Retry later: the kernel releases this lock when its holder's run ends."
LOCK_FLAGS = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC


@contextmanager
def flocked(base: int, where: str, token: str, timeout: float, expiry: float,
            read_holder: Callable[[], bytes | None]) -> Iterator[Lease]:
    """The lock of the bundle path's directory `base`, waited for like every other lock
    (lease.wait_for_lock), with this attempt's holder record in it while the body runs."""
    lock = Flock(base, where)
    wait_for_lock(lock.take, read_holder, where, timeout, FLOCK_ADVICE)
    try:
        with os_errors("take the lock", where):
            os.ftruncate(lock.fd, 0)
            os.write(lock.fd, holder_record(time.time(), expiry, token))
        with Lease(lock.still_ours, read_holder, None, where) as lease:
            yield lease
    finally:
        lock.release()


class Flock:
    """A flock on the lock file in the open directory `base`: taken without blocking, so the
    wait stays lease.wait_for_lock's."""

    def __init__(self, base: int, where: str):
        self.base = base
        self.where = where
        self.fd: int | None = None

    def take(self) -> bool:
        """Whether the flock is ours now. A file its previous holder unlinked between our open
        and our flock is not the lock any more: it is opened again at once."""
        while True:
            fd = self._open()
            try:
                if not self._flock_at_once(fd):
                    return False
                if self._is_at_name(fd):
                    self.fd, fd = fd, None
                    return True
            finally:
                if fd is not None:
                    os.close(fd)

    def still_ours(self) -> bool:
        """The Lease's renewal: the file at the lock's name is the one this run flocked."""
        return self._is_at_name(self.fd)

    def release(self) -> None:
        """Remove the lock file only while it is ours (a lock deleted by hand may be the next
        publisher's by now), then let the kernel drop the flock."""
        try:
            if self._is_at_name(self.fd):
                with os_errors("release the lock", self.where):
                    os.unlink(LOCK_NAME, dir_fd=self.base)
        finally:
            os.close(self.fd)
            self.fd = None

    def _open(self) -> int:
        """The lock file, created if missing. It is reused, not created exclusively (a contender
        opens the holder's file to wait on its flock), so what is found at its name is judged on
        the open descriptor before anything is written or truncated: a regular file (a FIFO, a
        directory or a symbolic link is refused without blocking on it), with one name (a hard
        link planted there may be any file of the filesystem: see open_regular_at), and owned
        by this account. Such a file can only be one a publisher of this account made: a file
        of another name or owner is refused, and left as it was."""
        try:
            fd = open_regular_at(self.base, LOCK_NAME, self.where, LOCK_FLAGS, "open lock")
        except NotRegular as exc:
            raise not_a_record(exc.where, exc.kind) from None
        owner = os.fstat(fd).st_uid
        if owner != os.geteuid():
            os.close(fd)
            raise lock_not_ours(self.where, owner, os.geteuid())
        return fd

    def _flock_at_once(self, fd: int) -> bool:
        """flock without blocking: False while another publisher holds it."""
        with os_errors("take the lock", self.where):
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return False
        return True

    def _is_at_name(self, fd: int) -> bool:
        with os_errors("inspect", self.where):
            try:
                return os.fstat(fd).st_ino == os.stat(LOCK_NAME, dir_fd=self.base, follow_symlinks=False).st_ino
            except FileNotFoundError:
                return False
