# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A directory on an SSH server, reached over SFTP with paramiko.

One connection serves the whole run (sftp/connect.py). Files are written in batches whose requests
are sent ahead of their replies, over a few channels of that connection (sftp/batch.py). Every path
is found and checked by sftp/paths.py; SFTP acts by path, so what that leaves open is said in
sftp/private.py and docs/untrusted-destinations.md.
"""

from __future__ import annotations

import posixpath
import socket
import stat
import traceback
from typing import Callable, ContextManager

from ...records.attributes import parse_mode, trusted_owners
from ...errors import DistributorError, MissingLibrary, Unreadable
from ...limits import LOCK_EXPIRY_SECONDS
from ...paths import RECORD_NAMES, is_reserved, is_staging
from ...regular import ForeignLinks, UnprovenLinks, kind_of, links_not_ours
from ..base import Storage, hash_stream
from ..judging import not_a_record, owner_doubt, trusted_accounts, untrusted_record, verdict
from ..lease import Lease, held
from ..refusals import link_refused
from .chain import Chain, endpoints
from .connect import SftpConnection, check_config
from .links import SftpLinks
from .lock import SftpLock
from .batch import WINDOW, SftpBatch
from .paths import SftpPaths
from .wire import Pipe, identity, link_count, listdir_attr, read_ahead
from .wire import wire as _wire

READ_ATTEMPTS = 3  # looks at a file that changed between the look and the open (see read_bytes)
COUNTED_DIRECTORIES = 4  # listings kept for their link counts (see _alone): measured outputs come sorted by path
OPEN_TIMEOUT = 30.0  # seconds the server has to answer an open for reading (see _open_for_reading)


class SftpStorage(SftpConnection, SftpPaths, SftpBatch, SftpLinks, Storage):
    """The file operations of SFTP storage; the lock is sftp.lock's.

    Its parts are mixins, a file each: the connection (sftp.connect.SftpConnection), the way to
    each path (sftp.paths.SftpPaths), the batched writes (sftp.batch.SftpBatch) and the links and
    renames of releases (sftp.links.SftpLinks). They stay mixins rather than helpers it holds
    because every request of each goes through the one connection (`_open`, `_errors`) and reads
    and updates what the run has learnt of the tree (`_dirs`, `_judged`, `_staging_dirs`,
    `_counted`), on every call, and a view (`at`) is a copy of this object sharing both. Every
    attribute they use is set by __init__ here."""
    def __init__(self, storage: dict, base: str, token: str):
        super().__init__(token)
        self.endpoints = endpoints(storage)
        server = self.endpoints[-1]
        self.host, self.port, self.username = server.host, server.port, server.username
        self.root = storage.get("root") or ""
        self.base = base
        self.file_mode = parse_mode(storage.get("file_mode"), "file_mode")
        self.directory_mode = parse_mode(storage.get("directory_mode"), "directory_mode")
        self.ids = tuple(int(storage[f]) if storage.get(f) is not None else -1 for f in ("owner", "group"))
        self.trusted = trusted_owners(storage)
        self.require_private_directories = bool(storage.get("require_private_directories"))
        check_config(self)
        try:
            import paramiko
        except ImportError:
            raise MissingLibrary("paramiko", "sftp storage", traceback.format_exc()) from None
        self._paramiko = paramiko
        self._sdk_errors = (OSError, EOFError, paramiko.SSHException)
        self._chain = Chain(paramiko, self.endpoints)
        self._origin: SftpStorage | None = None  # the storage whose connection a view (at) uses
        self._client = None
        self._session = None
        self._dirs: set[str] = set()
        self._judged: set[str] = set()  # directories judged ("" once the root and the settings are)
        self._shared: list[tuple[str, str]] = []
        self._notices: list[str] = []  # warnings of what the server lacks (SftpLinks.require_switch)
        self._names: dict[int, str | None] = {}
        self._extensions: frozenset = frozenset()
        self._staging_dirs: set[str] = set()
        self._counted: dict[str, dict] = {}

    def close(self) -> None:
        """The run's one connection chain is closed with the storage, and what it remembered of
        the tree; a view (at) only lets go of it."""
        if self._origin is not None:
            self._client = self._session = None
            return
        self._chain.close()
        self._client = self._session = None
        self._dirs.clear()
        self._staging_dirs.clear()
        self._counted.clear()

    # -- files ----------------------------------------------------------------------------

    def _read(self, remote: str, limit: int, output: str | None, record: bool = False) -> bytes | None:
        """Every block is asked for at once (read_ahead); read block by block, a large file would
        take one round trip per 32 KiB. It stops at `limit + 1` bytes: the server sends no more,
        whatever the file's size. An `output`'s links are counted (see _alone); a `record`'s
        owner is judged (untrusted_record) on the attributes the opened file is checked against."""
        attrs = self._looked_at(remote, output)
        doubt = self._foreign(attrs.st_uid) if record and attrs is not None else None
        if doubt:
            raise untrusted_record(self._url(remote), doubt)
        handle = None if attrs is None else self._open_as_seen(remote, attrs)
        if handle is None:
            return None
        with self._errors("read", remote), handle:
            return b"".join(read_ahead(handle.sftp, handle.handle, attrs.st_size or 0, limit + 1))

    def _looked_at(self, remote: str, output: str | None, reading: bool = True):
        """The attributes of a regular file at `remote` whose way there is still the checked one;
        None when absent. Only the reserved names and managed outputs are read, and what is there
        is looked at first: anything else at the name is refused rather than opened (the server
        would block opening a FIFO, and the whole session with it; SFTP has no non-blocking open:
        docs/untrusted-destinations.md states the window left). For an `output` (its path under the base), a
        file with more than one name is refused too (_alone), unless nothing of it is `reading`."""
        return self._as_looked_at(remote, self._lstat(remote), lambda: self._check_directories(posixpath.dirname(remote)),
                                  output, reading)

    def _as_looked_at(self, remote: str, attrs, way_holds: Callable[[], bool], output: str | None, reading: bool):
        """_looked_at's verdict on the attributes `attrs` the lstat of `remote` gave, the way
        looked at after it (`way_holds`: whether every directory on it is there, judged)."""
        if attrs is None:
            return None
        kind = kind_of(attrs.st_mode or 0)
        if kind:
            raise not_a_record(self._url(remote), kind)
        if not way_holds():
            return None
        if output is not None:
            self._alone(remote, attrs, output, reading)
        return attrs

    def _alone(self, remote: str, attrs, output: str, reading: bool) -> None:
        """ForeignLinks unless the file looked at (`attrs`) has one name. SFTP has no inode
        numbers, so the names release generations give a file they share (Storage.shared_links)
        cannot be told from names planted beside them with the same count: a file with no more
        names than they gave is not read (UnprovenLinks), and a look at its attributes alone (a
        size, `reading` false: a release checked whole before a switch) reads nothing of it and
        takes it; one with more is refused as any other (ForeignLinks).
        SFTP version 3 attributes carry no link count; OpenSSH's server writes it into each entry
        of a directory listing (sftp.wire.link_count). So the count is the one of the entry at
        the name whose attributes are the file's, in a listing of its directory kept for the run
        (COUNTED_DIRECTORIES of them) and read afresh when the entry differs. The file opened next
        is compared with the same attributes (_open_as_seen): the file read is the file counted.
        A server whose listing gives no count has every output refused (ForeignLinks, None)."""
        links = self._links(remote, attrs)
        shared = self.shared_links.get(output, ()) if links is not None and links_not_ours(links) else ()
        if shared and not links_not_ours(links, 1 + len(shared)):
            if reading:
                raise UnprovenLinks(self._url(remote), links)
            return
        if links is None or links_not_ours(links):
            raise ForeignLinks(self._url(remote), links)

    def _links(self, remote: str, attrs) -> int | None:
        """The link count of the file looked at as `attrs` (see _alone), None when the listing
        does not give it; _NotAsSeen when the entry listed at its name is another file."""
        directory, name = posixpath.split(remote)
        for fresh in (False, True):
            links, seen = self._counted_in(directory, fresh).get(name, (None, None))
            if seen == identity(attrs):
                return links
        raise _NotAsSeen("storage_error", "cannot read %s: the file listed at that name is not the one looked at; "
                         "something else changed the destination during this run" % self._url(remote))

    def _counted_in(self, directory: str, fresh: bool) -> dict:
        """name -> (link count or None, identity) of every entry of `directory`, as listed now
        when `fresh` or not yet listed this run."""
        if fresh or directory not in self._counted:
            with self._errors("list", directory):
                [(_remote, entries)] = listdir_attr(self._open(), [directory])
                if isinstance(entries, Exception):
                    raise entries
            self._counted.pop(directory, None)
            if len(self._counted) >= COUNTED_DIRECTORIES:
                del self._counted[next(iter(self._counted))]
            self._counted[directory] = {entry.filename: (link_count(getattr(entry, "longname", None)), identity(entry))
                                        for entry in entries or ()}
        return self._counted[directory]

    def _open_as_seen(self, remote: str, attrs):
        """The file at `remote` opened for reading, when it is the one `attrs` were looked at
        (see _identity); None when it is gone. The way is looked at again right before the open
        (_looked_at), and a directory swapped for a link in between would otherwise show another
        file's content: a diff or a digest of a file outside the root (_NotAsSeen)."""
        with self._errors("read", remote):
            try:
                handle = self._open_for_reading(remote)
            except FileNotFoundError:
                return None
            try:
                seen = handle.stat()
            except BaseException:
                handle.close()
                raise
        if identity(seen) != identity(attrs):
            handle.close()
            raise _NotAsSeen("storage_error", "cannot read %s: another file was there when it was opened; something "
                             "else changed the destination during this run" % self._url(remote))
        return handle

    def _open_for_reading(self, remote: str, session=None):
        """The server opens by name, and its open of a FIFO blocks until someone writes into it:
        one swapped in between the look (_looked_at, SftpLock.read) and the open would hold the
        session, and the run, for good (SFTP has no non-blocking open). So the open has
        OPEN_TIMEOUT seconds to be answered; past them the session (the run's, or the one given)
        is closed (its server process still waits on the FIFO, and a later reply must not be taken
        for another request's) and the run fails naming the file."""
        session = session or self._open()
        channel = session.get_channel()
        channel.settimeout(OPEN_TIMEOUT)
        try:
            return session.open(_wire(remote), "rb")
        except socket.timeout:
            session.close()
            raise DistributorError(
                "storage_error", "cannot read %s: the server did not open it within %d seconds. Something other than a "
                "regular file (a FIFO) was probably put at that name after distributor looked at it, and the server "
                "waits on it; find out who changes this destination (docs/untrusted-destinations.md, SFTP: what a path-based "
                "protocol leaves open)" % (self._url(remote), OPEN_TIMEOUT)) from None
        finally:
            channel.settimeout(None)

    def read_bytes(self, path: str, limit: int) -> bytes | None:
        """A file rewritten in place between the look and the open (the lock, which its holder
        renews while distributor_state_info reads it) is looked at again, a few times. An
        output's links are counted (_alone); distributor's records are not (a listing of the
        bundle path for every record read would cost a skip more than the rest of it)."""
        remote = self._remote(path)
        output = None if is_reserved(path) else path
        record = path in RECORD_NAMES
        for _attempt in range(READ_ATTEMPTS - 1):
            try:
                return self._read(remote, limit, output, record)
            except _NotAsSeen:
                continue
        return self._read(remote, limit, output, record)

    def measure(self, path: str, size: int, digest: bool) -> tuple[int, str | None] | None:
        """The lstat gives the size, once the way to it is checked as _read checks it (a directory
        swapped for a link must not report a file outside the root). Only a file of the recorded
        `size` is opened, and no more than it and one byte is asked for: a planted file of any
        size is never buffered. A file with more than one name is not measured at all (_alone):
        it counts as drifted, a file release generations share too when its digest is asked (a
        publish's verify writes it again)."""
        remote = self._remote(path)
        attrs = self._looked_at(remote, path, digest)
        return None if attrs is None else self._measured(remote, attrs, size, digest)

    def measure_many(self, asked: list[tuple[str, int]], digest: bool) -> dict:
        """measure's looks, WINDOW files a round trip: the lstat of each name and then of each
        directory on their ways (once a window), sent at once and answered in that order, as
        measure looks at them one by one. Each file is then judged in turn as measure judges it
        (a link at the name or on the way refused, the names counted: _as_looked_at) and, for a
        digest, read as measure reads it."""
        from paramiko.sftp import CMD_LSTAT

        found: dict = {}
        for first in range(0, len(asked), WINDOW):
            window = asked[first:first + WINDOW]
            remotes = [self._remote(path, look_at_name=False) for path, _size in window]
            pipe = Pipe(self._open())
            looks = [pipe.send(CMD_LSTAT, _wire(remote)) for remote in remotes]
            ways = {directory: None for remote in remotes for directory in self._way(posixpath.dirname(remote))}
            ways = {directory: pipe.send(CMD_LSTAT, _wire(directory)) for directory in ways}
            names = []
            for remote, number in zip(remotes, looks):
                with self._errors("inspect", remote):
                    names.append(pipe.attributes(number, missing_ok=True))
            with self._errors("inspect", posixpath.dirname(remotes[0])):
                seen = {directory: pipe.attributes(number, missing_ok=True) for directory, number in ways.items()}
            for (path, size), remote, attrs in zip(window, remotes, names):
                try:
                    found[path] = self._measured_as_seen(path, remote, attrs, seen, size, digest)
                except (ForeignLinks, Unreadable) as refused:
                    found[path] = refused
        return found

    def _measured_as_seen(self, path: str, remote: str, attrs, seen: dict, size: int, digest: bool):
        """measure's answer for `path` from the lstat of its name (`attrs`) and of the directories
        on its way (`seen`, by remote path); the name is judged as _remote judges it."""
        if attrs is not None and stat.S_ISLNK(attrs.st_mode or 0):
            raise link_refused(self._url(remote))
        if attrs is not None and stat.S_ISDIR(attrs.st_mode or 0):
            self._judge(remote, attrs)
        way = self._way(posixpath.dirname(remote))
        attrs = self._as_looked_at(remote, attrs, lambda: self._judge_way(way, [seen[directory] for directory in way]), path, digest)
        return None if attrs is None else self._measured(remote, attrs, size, digest)

    def _measured(self, remote: str, attrs, size: int, digest: bool) -> tuple[int, str | None] | None:
        """measure's answer for the file looked at as `attrs`: only that file is opened."""
        found = attrs.st_size or 0
        if not digest or found != size:
            return found, None
        handle = self._open_as_seen(remote, attrs)
        if handle is None:
            return None
        with self._errors("read", remote), handle:
            chunks = read_ahead(handle.sftp, handle.handle, size, size + 1)
            return found, hash_stream(lambda _count: next(chunks, b""), size + 1)

    def resettle(self, path: str, sha256: str, size: int) -> bool:
        """Hashed and settled through one handle opened as it was looked at (FSETSTAT: no name
        resolved between the digest and the change), counted like a measured output (_alone): a
        file with names distributor did not make, or a count the server does not give, is not."""
        remote = self._remote(path)
        try:
            attrs = self._looked_at(remote, path)
        except ForeignLinks:
            return False
        if attrs is None or (attrs.st_size or 0) != size:
            return False
        handle = self._open_as_seen(remote, attrs)
        if handle is None:
            return False
        with self._errors("change the settings of", remote), handle:
            chunks = read_ahead(handle.sftp, handle.handle, size, size + 1)
            if hash_stream(lambda _count: next(chunks, b""), size + 1) != sha256:
                return False
            pipe = Pipe(handle.sftp)
            for number in self._settle(pipe, handle.handle):
                pipe.status(number)
        return True

    def doubt(self, path: str, size: int | None = None, sha256: str | None = None, own_build: bool = False) -> str | None:
        """From the lstat of the name, the way to it checked as _read checks it. The content is
        read as measure reads it, from that file only, and only when it has one name: SFTP has no
        inode numbers, so a name planted beside a file of the SFTP account (any file it can reach,
        with the recorded size) would otherwise have distributor read that file. Its names are
        counted as an output's are (_alone), once everything else agrees. A file of the recorded
        size with more than one name is vouched for without its content only in a dead release
        build of distributor's own (`own_build`): its names there are links distributor made,
        and removing one destroys no bytes, its other names keep them. Anywhere else (in-place
        recovery) the other names may be anyone's, say a name planted at an unmanaged file of the
        SFTP account, and distributor cannot tell: the file stays, and the caller names it. One
        whose names the server does not count (no long names in its listing) is not read and not
        vouched for: it stays, and the caller reports it (a dead release build is then kept
        whole, every run, until removed by hand)."""
        remote = self._remote(path, look_at_name=False)
        attrs = self._lstat(remote)
        if attrs is None or not self._check_directories(posixpath.dirname(remote)):
            return "is gone"
        kind, owner = kind_of(attrs.st_mode or 0), self._foreign(attrs.st_uid)
        if kind is None and owner is None and sha256 is not None and (attrs.st_size or 0) == size:
            try:
                links = self._links(remote, attrs)
            except _NotAsSeen:
                return "changed while distributor looked at it"
            if links is None:
                return ("may have other names (hard links): the server's listing does not say how many, and "
                        "distributor reads no file that may have a name elsewhere")
            if links_not_ours(links):
                return None if own_build else "has %d links, and over SFTP distributor cannot tell whether the other names are its own" % links
        return verdict(kind, owner, None, size, sha256, lambda: self._measured(remote, attrs, size, True))

    def _foreign(self, uid: int | None) -> str | None:
        """None for the accounts whose files distributor acts on here: the SFTP account (the uid
        the server names so), storage.owner and storage.trusted_owners (by id, or by the name the
        server gives the uid)."""
        if uid is not None and (uid == self.ids[0] or str(uid) in self.trusted
                                or self._name_of(uid) in (self.username, *self.trusted)):
            return None
        accounts = trusted_accounts(self.username, self.ids[0], self.trusted)
        unnamed = uid is not None and self._name_of(uid) is None
        return owner_doubt(uid, accounts) + (" (the server does not name uid %d, so distributor cannot tell it is %s)"
                                             % (uid, self.username) if unnamed else "")

    def delete(self, path: str) -> bool:
        """One file, parked and removed like a batch of one (see delete_many)."""
        return bool(self.delete_many([path]))

    def _remove_empty_parents(self, head: str) -> None:
        """Remove the directory `head` and its parents while the deletes left them empty, up to
        (not including) the base; the way to each is looked at again before its rmdir (which
        never follows a link at the name).

        SFTP reports a non-empty directory only as a generic failure, so any failure ends the
        tidy-up: a leftover empty directory is harmless.
        """
        while head:
            remote = self._remote(head)
            if not self._check_directories(posixpath.dirname(remote)):
                return
            with self._errors("remove directory", remote):
                try:
                    self._open().rmdir(_wire(remote))
                except OSError:
                    return
            self._dirs.discard(remote)
            head = head.rpartition("/")[0]

    def exists(self, path: str) -> bool:
        """An lstat, never a stat: a link at the path counts as present and is not followed.
        The storage contract tests observe every backend through it."""
        return self._lstat(self._remote(path)) is not None

    def list_files(self) -> list[str]:
        """Directory entries carry lstat attributes, so symlinks are listed, never followed (the
        walk: SftpPaths._walk). Empty staging directories are listed too (see Storage.list_files)."""
        found: list[str] = []
        for remote, prefix, entries in self._walk():
            if entries == [] and is_staging(posixpath.basename(remote)) and prefix:
                found.append(prefix[:-1])  # an empty staging directory: no file below shows it
            found.extend(prefix + entry.filename for entry in entries or () if not stat.S_ISDIR(entry.st_mode or 0))
        return sorted(found)

    # -- lock -----------------------------------------------------------------------------

    def lock(self, timeout: float, expiry: float = LOCK_EXPIRY_SECONDS) -> ContextManager[Lease]:
        """The protocol of lease.held over SftpLock."""
        return held(SftpLock(self), self.token, timeout, expiry)


class _NotAsSeen(DistributorError):
    """The file opened is not the one looked at (see _read)."""
