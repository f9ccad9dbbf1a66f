# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The lock primitive of SFTP storage (the protocol is storage/lease.py).

SFTP has an exclusive create (open with O_EXCL) but no conditional write or delete, and no way to
ask the server for the time. So:

- the server's clock is read from the modification time of a file created there just now (a
  reserved probe name of this attempt beside the lock, created, looked at and removed), and a
  lock's age is that time minus the lock file's own modification time: two stamps of one clock;
- replace-if-unchanged rewrites the record in place, through a handle whose content was just
  read and found to be the version expected: a lock broken and created again by another
  publisher is a new file, which a handle opened on ours never writes into;
- delete-if-unchanged takes a guard named after the version, created exclusively, and reads the
  lock again under it before removing it (see `delete`).

Every call runs on an SFTP channel of the lock's own: the heartbeat renews beside the run's
pipelined uploads, and one SFTPClient is not safe for concurrent use.
"""

from __future__ import annotations

import hashlib
import posixpath
from contextlib import suppress

from ...errors import DistributorError
from ...limits import LOCK_LIMIT
from ...paths import LOCK_NAME, RESERVED_PREFIX
from ...regular import kind_of
from ..judging import not_a_record
from ..lease import LockFile, Seen

LOCK_CREATE_ATTEMPTS = 3
BREAK_GUARD_EXPIRY = 60.0


class SftpLock(LockFile):
    """`.distributor.lock` in the bundle path of one SftpStorage, whose connection, path checks
    and error translation it uses."""

    def __init__(self, storage):
        self.storage = storage
        self.remote = storage._remote(LOCK_NAME, create_parents=True)
        self.directory = posixpath.dirname(self.remote)
        self.where = storage.describe(LOCK_NAME)
        self._probe = posixpath.join(self.directory, "%s.clock.%s" % (RESERVED_PREFIX, storage.token))
        self._channel = None
        self._account: int | None = None  # the uid the server gave the lock this attempt created

    def _sftp(self):
        if self._channel is None:
            self.storage._open()
            with self.storage._errors("open a channel for", self.remote):
                self._channel = self.storage._client.open_sftp()
        return self._channel

    def _lstat(self, remote: str):
        with self.storage._errors("inspect", remote):
            try:
                return self._sftp().lstat(remote)
            except FileNotFoundError:
                return None

    def _way_checked(self) -> None:
        """Right before a create or a remove by name, every directory down to the lock's is looked
        at again: a directory swapped for a link since must not lead the act out of the root."""
        if not self.storage._check_directories(self.directory):
            raise DistributorError("storage_error", "%s is gone; something else changed the destination during "
                                   "this run" % self.storage._url(self.directory))

    def _create(self, remote: str, action: str):
        """An exclusive create (never through a link planted at the name); None when something is
        there. SFTP reports an existing file only as a generic failure, so a failed create is judged
        by looking. One with nothing there may have met a name removed in between (a lock released,
        the guard of another publisher breaking the same dead lock), so it is tried again a few
        times; a failure with nothing there each time is raised."""
        self._way_checked()
        for attempt in range(LOCK_CREATE_ATTEMPTS):
            try:
                with self.storage._errors(action, remote):
                    return self._sftp().open(remote, "wx")
            except DistributorError:
                if self._lstat(remote) is not None:
                    return None
                if attempt == LOCK_CREATE_ATTEMPTS - 1:
                    raise
        return None

    def _remove(self, remote: str, action: str) -> None:
        self._way_checked()
        with self.storage._errors(action, remote):
            with suppress(FileNotFoundError):
                self._sftp().remove(remote)

    def create(self, record: bytes) -> object | None:
        """Exclusive create (_create), then the record."""
        handle = self._create(self.remote, "create lock")
        if handle is None:
            return None
        try:
            with self.storage._errors("write lock", self.remote):
                with handle:
                    handle.write(record)
                    self._account = handle.stat().st_uid
        except BaseException:
            # Our own empty lock would otherwise block everyone until its age expires it.
            with suppress(Exception):
                self._sftp().remove(self.remote)
            raise
        return record

    def read(self) -> Seen | None:
        """At most LOCK_LIMIT + 1 bytes. The name is looked at first: the server would block
        opening a FIFO, and the whole session with it. The stamp is taken from the open handle
        after the read, so it is never older than the content read."""
        attrs = self._lstat(self.remote)
        if attrs is None:
            return None
        kind = kind_of(attrs.st_mode or 0)
        if kind:
            raise not_a_record(self.storage._url(self.remote), kind)
        with self.storage._errors("read lock", self.remote):
            try:
                with self.storage._open_for_reading(self.remote, self._sftp()) as handle:
                    raw = handle.read(LOCK_LIMIT + 1)
                    stamp = handle.stat().st_mtime
            except FileNotFoundError:
                return None
        return Seen(raw, raw, float(stamp) if stamp is not None else None)

    def replace(self, version: object, record: bytes) -> object | None:
        """In place, never by create or rename, into a file it did not create by that open: so
        the open handle is judged before a byte is written, as local storage judges its lock. It
        must be a regular file of the account that created this lock (its handle's fstat), and
        hold exactly `version`. SFTP version 3 cannot show a file's link count through a handle;
        the content stands in for it: a file holding this attempt's own record, token and
        renewal count included, is this attempt's lock, under whatever other name (a hard link
        planted since, or a directory swapped for a link) it is also reached."""
        with self.storage._errors("renew lock", self.remote):
            try:
                handle = self._sftp().open(self.remote, "r+")
            except FileNotFoundError:
                return None
            with handle:
                seen = handle.stat()
                if kind_of(seen.st_mode or 0) or seen.st_uid != self._account:
                    raise DistributorError(
                        "storage_error", "cannot renew the lock %s: the file there is %s, not the lock this attempt "
                        "created (uid %s); someone replaced it, and nothing was written into it"
                        % (self.where, kind_of(seen.st_mode or 0) or "owned by uid %s" % seen.st_uid, self._account))
                if handle.read(LOCK_LIMIT + 1) != version:
                    return None
                handle.seek(0)
                handle.write(record)
                handle.flush()
                handle.truncate(len(record))
        return record

    def delete(self, version: object) -> bool:
        """Remove the lock while it holds `version`; True when no lock of that version is left.

        Publishers waiting on the same dead holder all find its lock stale at once, and SFTP has no
        conditional delete: a slower one must not remove the lock a faster one has just created.
        So removing that version takes a guard named after it, created exclusively, and the lock is
        read again under the guard: whoever gets the guard later finds a different record there and
        leaves it alone. A guard older than BREAK_GUARD_EXPIRY on the server's clock was left by a
        publisher that died while breaking, and is removed.
        """
        guard = "%s.break.%s" % (self.remote, hashlib.sha256(version).hexdigest()[:16])
        handle = self._create(guard, "guard lock")
        if handle is None:
            attrs, now = self._lstat(guard), self.now()
            if attrs is None:
                return True  # another publisher has just removed it under its guard
            if now is not None and attrs.st_mtime is not None and now - attrs.st_mtime > BREAK_GUARD_EXPIRY:
                self._remove(guard, "remove abandoned guard")
            return False
        handle.close()
        try:
            current = self.read()
            if current is not None and current.raw == version:
                self._remove(self.remote, "remove lock")
            return True
        finally:
            self._remove(guard, "remove guard")

    def now(self) -> float | None:
        """The modification time the server gives a file created now: the attempt's own probe
        name (reserved, so never an output), removed again at once. None when the server gives
        none, or something is already at that name."""
        handle = self._create(self._probe, "read the clock of")
        if handle is None:
            return None
        try:
            with self.storage._errors("read the clock of", self._probe):
                with handle:
                    stamp = handle.stat().st_mtime
        finally:
            self._remove(self._probe, "remove")
        return float(stamp) if stamp is not None else None

    def close(self) -> None:
        """The lock's own channel, opened for the heartbeat beside the run's uploads."""
        if self._channel is not None:
            with suppress(Exception):
                self._channel.close()
            self._channel = None
