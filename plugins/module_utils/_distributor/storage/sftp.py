# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A directory on an SSH server, reached over SFTP with paramiko.

One connection serves the whole run (opened on first use) because an SSH handshake costs far
more than the operations of a publish. Within a file, writes are pipelined so throughput is not
bound by the round-trip time; across files, several SFTP channels of that connection work at
once, because each small file still waits for five round trips. The server's host key is
checked against known_hosts like OpenSSH does: an unknown key is refused unless the operator
chose trust-on-first-use (`accept_new`).
"""

from __future__ import annotations

import getpass
import hashlib
import os
import posixpath
import queue
import stat
import threading
import time
import traceback
from contextlib import contextmanager, suppress
from functools import partial
from typing import Callable, Iterable, Iterator, NamedTuple

from ..attributes import parse_mode
from ..errors import DistributorError, MissingLibrary
from ..limits import DEPTH_LIMIT
from ..paths import LOCK_NAME, is_reserved, join
from ..regular import kind_of
from .base import (
    LOCK_EXPIRY_SECONDS, Lease, Storage, holder_record, holds, in_parallel, lock_is_expired, mentions_secret,
    not_a_record, redact, staging_dir, wait_for_lock)
from .sftp_connect import HostKeyPolicy, check_config, check_known_hosts
from .sftp_private import foreign_owner, shared_refusal, shared_warning, writable_by_others
from .sftp_wire import LSETSTAT, USERS_GROUPS_BY_ID, listdir_attr, lsetstat, session_class, user_names
from .sftp_wire import wire as _wire

CONNECT_TIMEOUT = 30.0
LOCK_CREATE_ATTEMPTS = 3
BREAK_GUARD_EXPIRY = 60.0
CHANNELS = 3  # SFTP channels writing at once; OpenSSH allows 10 sessions a connection by default
BATCH_FILES = 1024  # files staged before the first of them is renamed
AEAD_CIPHERS = ("aes128-gcm@openssh.com", "aes256-gcm@openssh.com")
DEFAULT_DIRECTORY_MODE = 0o777  # asked of mkdir without a directory_mode: the server's umask applies, as for mkdir(1)


class SftpStorage(Storage):
    kind = "sftp"

    def __init__(self, storage: dict, base: str, token: str):
        super().__init__(token)
        self.host = storage.get("host") or ""
        self.port = int(storage.get("port") or 22)
        self.username = storage.get("username") or getpass.getuser()
        self.root = storage.get("root") or ""
        self.base = base
        self.known_hosts_file = storage.get("known_hosts_file")
        self.host_key_policy = storage.get("host_key_policy") or "reject"
        self._password = storage.get("password")
        self._private_key_file = storage.get("private_key_file")
        self.file_mode = parse_mode(storage.get("file_mode"), "file_mode")
        self.directory_mode = parse_mode(storage.get("directory_mode"), "directory_mode")
        self.ids = tuple(int(storage[f]) if storage.get(f) is not None else -1 for f in ("owner", "group"))
        self.require_private_directories = bool(storage.get("require_private_directories"))
        check_config(self)
        try:
            import paramiko
        except ImportError:
            raise MissingLibrary("paramiko", "sftp storage", traceback.format_exc()) from None
        self._paramiko = paramiko
        self._sdk_errors = (OSError, EOFError, paramiko.SSHException)
        self._client = None
        self._session = None
        self._dirs: set[str] = set()
        self._judged: set[str] = set()
        self._shared: list[tuple[str, str]] = []
        self._names: dict[int, str | None] = {}
        self._extensions: frozenset = frozenset()
        self._staging_dirs: set[str] = set()
        self._staging_lock = threading.RLock()  # also held while a missing directory is made (see _create)
        self._worker = threading.local()
        self._acquired_at: float | None = None
        self._beat_session = None

    # -- locations and errors -------------------------------------------------------------

    def _url(self, remote: str) -> str:
        return "sftp://%s@%s:%d%s" % (self.username, self.host, self.port, remote)

    def describe(self, path: str = "") -> str:
        relative = join(self.base, path)
        return self._url(posixpath.join(self.root, relative) if relative else self.root)

    @contextmanager
    def _errors(self, action: str, remote: str) -> Iterator[None]:
        """paramiko and socket errors leave as storage_error naming the remote location."""
        try:
            yield
        except self._paramiko.BadHostKeyException as exc:
            raise DistributorError(
                "storage_error",
                "the host key of %s:%d does not match the one in %s; if the server's key really "
                "changed, replace its line there" % (self.host, self.port, self.known_hosts_file or "~/.ssh/known_hosts"),
            ) from exc
        except self._sdk_errors as exc:
            message = "cannot %s %s: %s" % (action, self._url(remote), _cause(exc))
            error = DistributorError("storage_error", self._redact(message))
            # A cause quoting the password would print it in a traceback: the message says enough.
            raise error from (None if mentions_secret(exc, [self._password]) else exc)

    def _redact(self, text: str) -> str:
        return redact(text, [self._password])

    # -- connection -----------------------------------------------------------------------

    def _open(self):
        """The SFTP session, connecting on first use; in a write_many worker, that worker's."""
        lent = getattr(self._worker, "session", None)
        if lent is not None:
            return lent
        if self._session is None:
            client = self._paramiko.SSHClient()
            try:
                with self._errors("connect to", self.root):
                    self._trust_known_hosts(client)
                    client.connect(**self._connect_options())
                    self._session = self._new_session(client)
                    self._extensions = self._session.extensions
            except BaseException:
                client.close()
                raise
            self._client = client
        return self._session

    def _new_session(self, client):
        """The run's SFTP channel, which learns the server's extensions (see
        sftp_wire.session_class); the same server's other channels offer the same."""
        session = session_class(self._paramiko).from_transport(client.get_transport())
        if session is None:
            raise self._paramiko.SSHException("the server refused an SFTP session")
        return session

    def _trust_known_hosts(self, client) -> None:
        if self.known_hosts_file:
            path = os.path.expanduser(self.known_hosts_file)
            if os.path.exists(path):
                check_known_hosts(path)
                client.get_host_keys().load(path)
        else:
            system = os.path.expanduser("~/.ssh/known_hosts")
            if os.path.exists(system):
                check_known_hosts(system)
            client.load_system_host_keys()
        client.set_missing_host_key_policy(HostKeyPolicy(self))

    def _connect_options(self) -> dict:
        """Explicit credentials are used alone; without any, ssh-agent and ~/.ssh keys are
        tried, as the ssh command would."""
        explicit = bool(self._password or self._private_key_file)
        return {
            "hostname": self.host,
            "port": self.port,
            "username": self.username,
            "password": self._password or None,
            "key_filename": os.path.expanduser(self._private_key_file) if self._private_key_file else None,
            "look_for_keys": not explicit,
            "allow_agent": not explicit,
            "timeout": CONNECT_TIMEOUT,
            "banner_timeout": CONNECT_TIMEOUT,
            "auth_timeout": CONNECT_TIMEOUT,
            "transport_factory": self._transport,
        }

    def _transport(self, sock, **options):
        """paramiko offers AES-CTR with a separate HMAC first; AES-GCM authenticates as it
        encrypts, which saves CPU on every packet of its pure-Python packet layer, and a
        publish of small files is bound by that CPU. So GCM is offered first; the server's own
        cipher list still decides, and the other ciphers stay on offer."""
        transport = self._paramiko.Transport(sock, **options)
        security = transport.get_security_options()
        offered = [name for name in AEAD_CIPHERS if name in security.ciphers]
        security.ciphers = tuple(offered) + tuple(name for name in security.ciphers if name not in offered)
        return transport

    def close(self) -> None:
        self._close_beat_session()
        if self._client is not None:
            self._client.close()
        self._client = self._session = None
        self._dirs.clear()
        self._staging_dirs.clear()

    # -- paths ----------------------------------------------------------------------------

    def _remote(self, path: str, create_parents: bool = False) -> str:
        """The remote path of `path`, refusing any symlink between the root and it.

        Directories already checked on this connection are remembered: a publish touches the
        same few directories for every file, and each check is a round trip. Where a path is
        acted on, that memory is not trusted (a directory may since have been swapped for a
        link): every rename, delete and attribute change is preceded by _check_directories,
        which looks at the whole way again, and files are staged and parked only in a staging
        directory beside their target (see base.staging_dir). Each directory is judged (see
        _judge) the first time it is seen, before anything is done in it.
        """
        if not self._judged:
            self._look_at_root()
        current = self.root
        if create_parents and current not in self._dirs:
            self._make_root()
        parts = [part for part in join(self.base, path).split("/") if part]
        above_base = len([part for part in self.base.split("/") if part])
        for index, part in enumerate(parts):
            current = posixpath.join(current, part)
            if current in self._dirs:
                continue
            attrs = self._lstat(current)
            if attrs is None:
                if create_parents and index < len(parts) - 1:
                    self._create(current, "/".join(parts[above_base:index + 1]) if index >= above_base else None)
                    continue
                return posixpath.join(current, *parts[index + 1:])
            if stat.S_ISLNK(attrs.st_mode):
                raise _link_refused(self._url(current))
            if stat.S_ISDIR(attrs.st_mode):
                self._judge(current, attrs)
                self._dirs.add(current)
            elif index < len(parts) - 1:
                raise _not_a_directory(self._url(current), self.describe(path))
        return current

    def _check_directories(self, remote_dir: str) -> bool:
        """Whether every directory from below the root down to `remote_dir` exists, looked at
        right now (one round trip each, nothing remembered); storage_error when one is a
        symbolic link or not a directory."""
        current = self.root
        for part in [p for p in remote_dir[len(self.root):].split("/") if p]:
            current = posixpath.join(current, part)
            attrs = self._lstat(current)
            if attrs is None:
                return False
            if stat.S_ISLNK(attrs.st_mode):
                raise _link_refused(self._url(current))
            if not stat.S_ISDIR(attrs.st_mode):
                raise DistributorError("storage_error", "%s is not a directory; something else changed the "
                                       "destination during this run" % self._url(current))
            self._judge(current, attrs)
        return True

    def _make_root(self) -> None:
        """Like the local backend, a missing root is created (its parents too) on first write."""
        missing = []
        current = self.root
        while current not in ("/", ""):
            attrs = self._lstat(current)
            if attrs is not None:
                if not stat.S_ISDIR(attrs.st_mode):
                    raise _not_a_directory(self._url(current), "storage.root " + self._url(self.root))
                break
            missing.append(current)
            current = posixpath.dirname(current)
        for directory in reversed(missing):
            self._mkdir(directory)
        self._dirs.add(self.root)

    def _lstat(self, remote: str):
        with self._errors("inspect", remote):
            try:
                return self._open().lstat(_wire(remote))
            except FileNotFoundError:
                return None

    # -- directories others can write -------------------------------------------------------

    @property
    def warnings(self) -> list[str]:
        return [shared_warning(self._shared, self.username)] if self._shared else []

    def _look_at_root(self) -> None:
        """Before the first read or write: the root (whatever its path leads to: the operator
        chose it, links included) and the directories this run's settings would create."""
        with self._errors("inspect", self.root):
            try:
                attrs = self._open().stat(_wire(self.root))
            except FileNotFoundError:
                attrs = None
        self._judged.add("")
        if attrs is not None and stat.S_ISDIR(attrs.st_mode or 0):
            self._judge(self.root, attrs)
        created = "the directories distributor creates"
        if self.directory_mode is not None:
            self._found_shared("%s (storage.directory_mode)" % created, writable_by_others(self.directory_mode))
        if self.ids[0] != -1:
            self._found_shared("%s (storage.owner)" % created,
                               foreign_owner(self.ids[0], self._name_of(self.ids[0]), self.username))

    def _judge(self, remote: str, attrs) -> None:
        """A directory distributor walks, seen for the first time this run: noted (a warning)
        when another account than the SFTP user can write in it, refused with
        require_private_directories. Writable by its group or by all, or owned by another uid
        (an owner can always make it writable), see sftp_private."""
        if remote in self._judged:
            return
        self._judged.add(remote)
        why = writable_by_others(attrs.st_mode or 0)
        if why is None and attrs.st_uid is not None:
            why = foreign_owner(attrs.st_uid, self._name_of(attrs.st_uid), self.username)
        self._found_shared(self._url(remote), why)

    def _found_shared(self, where: str, why: str | None) -> None:
        if why is None:
            return
        if self.require_private_directories:
            raise DistributorError("storage_error", self._redact(shared_refusal(where, why, self.username)))
        self._shared.append((where, why))

    def _name_of(self, uid: int) -> str | None:
        """The account name the server gives `uid` (None when it cannot say), asked once a run."""
        if uid not in self._names:
            name = None
            if USERS_GROUPS_BY_ID in self._extensions:
                with self._errors("look up the account of uid %d at" % uid, self.root):
                    name = user_names(self._open(), [uid])[0] or None
            self._names[uid] = name
        return self._names[uid]

    # -- directories distributor creates ------------------------------------------------------

    def _create(self, remote: str, path: str | None) -> None:
        """The missing directory `remote`: of the bundle path when `path` (relative to it) is
        given, else of the base or root. write_many's workers may both find it missing, and one
        of them makes it."""
        with self._staging_lock:
            if remote in self._dirs:
                return
            self._check_directories(posixpath.dirname(remote))
            if path is None:
                self._mkdir(remote)
            else:
                self._make_directory(path, remote)

    def _mkdir(self, remote: str) -> None:
        """A directory of the root or of the bundle path itself (below it, _make_directory).
        mkdir asks for the configured mode and neither follows nor reuses what is at the name;
        the way to it is looked at again right after, so a mkdir that a directory swapped for a
        link led elsewhere stops the run. Another publisher may create the same directory at the
        same moment, which is fine; SFTP reports 'already exists' only as a generic failure, so
        look before complaining."""
        try:
            with self._errors("create directory", remote):
                self._open().mkdir(_wire(remote), DEFAULT_DIRECTORY_MODE if self.directory_mode is None
                                   else self.directory_mode)
        except DistributorError:
            attrs = self._lstat(remote)
            if attrs is None or not stat.S_ISDIR(attrs.st_mode):
                raise
        else:
            if not self._check_directories(remote):
                raise _disappeared(self._url(remote))
            self._settle_directory(remote, check=True)
        self._dirs.add(remote)

    def _make_directory(self, path: str, remote: str) -> None:
        """A directory below the bundle path, `path` relative to it: made in this attempt's
        staging directory beside it, given its mode and owner there, and renamed into place.
        In the staging directory, which exists only where this attempt made it, no swapped link
        can lead the attribute change to another directory."""
        made = posixpath.join(self._staging(path), posixpath.basename(remote))
        with self._errors("create directory", made):
            self._open().mkdir(_wire(made), DEFAULT_DIRECTORY_MODE if self.directory_mode is None else self.directory_mode)
        try:
            self._settle_directory(made, check=False)
            self._check_directories(posixpath.dirname(made))
            with self._errors("create directory", remote):
                self._open().posix_rename(_wire(made), _wire(remote))
        except BaseException:
            with suppress(Exception):
                self._open().rmdir(_wire(made))
            raise
        self._dirs.add(remote)

    def _settle_directory(self, remote: str, check: bool) -> None:
        """The configured mode (when the server's umask took bits of it) and owner, set with
        lsetstat@openssh.com, which does not follow a link at the name: SETSTAT would. With
        `check`, the way is looked at again right before (a directory outside the staging
        directory). A server without lsetstat gets no attributes set on directories: storage_error."""
        if self.directory_mode is None and self.ids == (-1, -1):
            return
        attrs = self._lstat(remote)
        if attrs is None:
            raise _disappeared(self._url(remote))
        mode = self.directory_mode if self.directory_mode not in (None, stat.S_IMODE(attrs.st_mode)) else None
        ids = tuple(attrs.st_uid if want == -1 else want for want in self.ids) if self.ids != (-1, -1) else None
        ids = None if ids == (attrs.st_uid, attrs.st_gid) else ids
        if mode is None and ids is None:
            return
        if LSETSTAT not in self._extensions:
            raise DistributorError(
                "storage_error", "cannot set the mode or owner of %s: the server does not offer %s, and distributor "
                "never sets attributes with SETSTAT, which follows a symbolic link planted at the name; remove "
                "storage.directory_mode, owner and group, or use an OpenSSH server (8.0 or later)" % (self._url(remote), LSETSTAT))
        if check and not self._check_directories(remote):
            raise _disappeared(self._url(remote))
        with self._errors("set permissions of", remote):
            lsetstat(self._open(), remote, mode, ids)

    def _settle(self, remote: str, mode: int | None, handle) -> None:
        """Apply the configured mode and numeric ownership to a staged file before its rename,
        through its open `handle` (FSETSTAT: no name is resolved), so an output never appears
        with other permissions. An unset owner or group keeps the server's (-1 is not sent:
        SFTP sets both ids at once)."""
        with self._errors("set permissions of", remote):
            if mode is not None:
                handle.chmod(mode)
            if self.ids != (-1, -1):
                uid, gid = self.ids
                if -1 in self.ids:
                    attrs = handle.stat()
                    uid, gid = (attrs.st_uid if uid == -1 else uid), (attrs.st_gid if gid == -1 else gid)
                handle.chown(uid, gid)

    # -- files ----------------------------------------------------------------------------

    def _read(self, remote: str) -> bytes | None:
        """Prefetching requests every block at once; read block by block, a large file would
        take one round trip per 32 KiB. Only the reserved names are read, and what is there is
        looked at first: the server would block opening a FIFO, and the whole session with it.
        (SFTP has no non-blocking open: docs/operations.md states the window left.)"""
        attrs = self._lstat(remote)
        if attrs is None:
            return None
        kind = kind_of(attrs.st_mode or 0)
        if kind:
            raise not_a_record(self._url(remote), kind)
        with self._errors("read", remote):
            try:
                with self._open().open(_wire(remote), "rb") as handle:
                    handle.prefetch()
                    return handle.read()
            except FileNotFoundError:
                return None

    def read_bytes(self, path: str) -> bytes | None:
        return self._read(self._remote(path))

    def write(self, path: str, chunks: Iterable[bytes]) -> None:
        try:
            self._commit(self._stage(path, chunks))
        finally:
            self._drop_staging()

    def write_many(self, items: Iterable[tuple[str, Callable[[], Iterable[bytes]]]]) -> None:
        """Like local storage, a batch of files is all staged before any of them is renamed, so
        a failure while staging (a directory that refuses writes, a source that changed) leaves
        every old output of the batch as it was. Both steps run up to CHANNELS files at once,
        each worker on an SFTP channel lent to it for that file (one SFTPClient is not safe for
        concurrent use); every file takes the same checked path as write()."""
        work = list(items)
        if not work:
            return
        sessions = [self._open()] + self._extra_sessions(min(CHANNELS, len(work)) - 1)
        idle: queue.SimpleQueue = queue.SimpleQueue()
        for session in sessions:
            idle.put(session)

        def on_a_channel(task: Callable) -> Callable:
            def run(argument) -> None:
                session = self._worker.session = idle.get()
                try:
                    task(argument)
                finally:
                    self._worker.session = None
                    idle.put(session)
            return run

        try:
            for first in range(0, len(work), BATCH_FILES):
                staged: list[_Staged] = []
                try:
                    in_parallel(len(sessions), on_a_channel(lambda item: staged.append(self._stage(item[0], item[1]()))),
                                work[first:first + BATCH_FILES])
                    in_parallel(len(sessions), on_a_channel(self._commit), staged)
                except BaseException:
                    for item in staged:
                        self._discard(item.staged)
                    raise
        finally:
            for session in sessions[1:]:
                with suppress(Exception):
                    session.close()
            self._drop_staging()

    def _extra_sessions(self, wanted: int) -> list:
        """Channels beyond the run's own, as many of `wanted` as the server grants: one that
        limits sessions (MaxSessions) refuses the rest, and fewer channels are only slower."""
        opened = []
        for _number in range(wanted):
            try:
                opened.append(self._client.open_sftp())
            except self._sdk_errors:
                break
        return opened

    def _stage(self, path: str, chunks: Iterable[bytes]) -> _Staged:
        """`chunks` uploaded to a new file in the attempt's staging directory beside `path`."""
        target = self._remote(path, create_parents=True)
        staged = posixpath.join(self._staging(path), posixpath.basename(target))
        try:
            return _Staged(staged, target, *self._upload(staged, chunks))
        except BaseException:
            self._discard(staged)
            raise

    def _commit(self, item: _Staged) -> None:
        """The staged file checked to be the one this attempt wrote, the way to it looked at
        again, then renamed over its target. Source and target share every directory but the
        staging one, which exists only where this attempt made it: a directory swapped for a
        link since the check leads the rename's source to a name that does not exist."""
        try:
            self._verify(item)
            if not self._check_directories(posixpath.dirname(item.staged)):
                raise _disappeared(self._url(posixpath.dirname(item.staged)))
            with self._errors("rename into place", item.target):
                self._open().posix_rename(_wire(item.staged), _wire(item.target))
        except BaseException:
            self._discard(item.staged)
            raise

    def _staging(self, path: str) -> str:
        """This attempt's staging directory beside `path` (see base.staging_dir), made on first
        use; write_many's workers meet the same new directory at once, and only one of them may
        make it."""
        remote = posixpath.join(self.root, join(self.base, staging_dir(path, self.token)))
        if remote not in self._staging_dirs:
            with self._staging_lock:
                if remote not in self._staging_dirs:
                    self._make_staging(remote)
        return remote

    def _make_staging(self, remote: str) -> None:
        """mkdir neither follows nor reuses what is at the name; the way to it is checked right
        before and right after, and what is there must be a private directory of the SFTP
        account: one that someone who read the attempt's token from the journal made first, while
        a swapped link led the mkdir elsewhere, is refused."""
        self._check_directories(posixpath.dirname(remote))
        with self._errors("create staging directory", remote):
            try:
                self._open().mkdir(_wire(remote), 0o700)
            except OSError:
                if self._lstat(remote) is not None:
                    raise DistributorError(
                        "storage_error",
                        "cannot stage files in %s: something already exists at that name, which only this "
                        "attempt creates; remove it" % self._url(remote)) from None
                raise
        if not self._check_directories(remote):
            raise _disappeared(self._url(remote))
        attrs = self._lstat(remote)
        if attrs is None or stat.S_IMODE(attrs.st_mode or 0) & 0o077 or (
                attrs.st_uid != 0 and self._name_of(attrs.st_uid) not in (None, self.username)):
            raise DistributorError("storage_error", "%s is not the private directory this attempt made; something "
                                   "else changed the destination during this run" % self._url(remote))
        self._staging_dirs.add(remote)

    def _drop_staging(self) -> None:
        """Remove the staging directories, empty once their files are renamed or removed."""
        for remote in self._staging_dirs:
            with suppress(Exception):
                self._open().rmdir(_wire(remote))
        self._staging_dirs.clear()

    def _upload(self, staged: str, chunks: Iterable[bytes]) -> tuple[int, tuple]:
        """Stream `chunks` to a new file `staged` (exclusive create: never opened through a name
        that exists, link or not); the chunk iterator's own exceptions pass unchanged. The
        number of bytes sent, and the file as its handle sees it once written and settled."""
        sftp = self._open()
        with self._errors("write", staged):
            handle = sftp.open(_wire(staged), "wx")
            handle.set_pipelined(True)
        written = 0
        try:
            for chunk in chunks:
                with self._errors("write", staged):
                    handle.write(chunk)
                written += len(chunk)
            self._settle(staged, self.file_mode, handle)
            with self._errors("write", staged):
                handle.flush()
                identity = _identity(handle.stat())
        except BaseException:
            with suppress(Exception):
                handle.close()
            raise
        with self._errors("write", staged):
            handle.close()
        return written, identity

    def _verify(self, item: _Staged) -> None:
        """Right before the rename: the staged name still holds the file this attempt wrote,
        as its handle last saw it (type, mode, owner, size, time), of every byte sent. Pipelined
        writes are not acknowledged one by one and paramiko drops the errors of unacknowledged
        writes at close, so a short file (a full disk, say) is caught here, before the rename
        publishes it."""
        attrs = self._lstat(item.staged)
        if attrs is None or not stat.S_ISREG(attrs.st_mode or 0) or _identity(attrs) != item.identity:
            raise DistributorError("storage_error", "cannot write %s: the staged file was replaced or removed by "
                                   "someone else" % self._url(item.staged))
        if attrs.st_size != item.written:
            raise DistributorError(
                "storage_error", "cannot write %s: only %d of %d bytes arrived (is the disk full?)"
                % (self._url(item.staged), attrs.st_size, item.written))

    def _discard(self, remote: str) -> None:
        """Best effort: a staged name is reserved and derived from the token, so recovery finds
        whatever this leaves behind."""
        with suppress(Exception):
            self._open().remove(_wire(remote))

    def _remove(self, remote: str, action: str) -> bool:
        """Remove a file by name, the way to it looked at again right before: True when it was there."""
        if not self._check_directories(posixpath.dirname(remote)):
            return False
        with self._errors(action, remote):
            try:
                self._open().remove(_wire(remote))
            except FileNotFoundError:
                return False
        return True

    def delete(self, path: str) -> bool:
        return bool(self.delete_many([path]))

    def delete_many(self, paths: Iterable[str]) -> list[str]:
        """An output is parked before it is removed: renamed into this attempt's staging
        directory beside it, then removed there. Through a directory swapped for a link since
        the way was checked, the rename finds no staging directory (it exists only where this
        attempt made it) and moves nothing. distributor's own names (records, the staged files
        of a dead attempt) are removed by name once the way is looked at again. Directories
        the deletes emptied are removed at the end, below the base; a staged file already gone
        still tidies its staging directory (an attempt that died after its renames left it
        empty, and recovery deletes staged names)."""
        removed, tidy = [], []
        try:
            for path in paths:
                if self._delete(path):
                    removed.append(path)
                    tidy.append(path)
                elif is_reserved(path):
                    tidy.append(path)
        finally:
            self._drop_staging()
        for head in sorted({path.rpartition("/")[0] for path in tidy}, key=lambda head: (-head.count("/"), head)):
            self._remove_empty_parents(head)
        return removed

    def _delete(self, path: str) -> bool:
        remote = self._remote(path)
        attrs = self._lstat(remote)
        if attrs is None:
            return False
        if is_reserved(path) or stat.S_ISDIR(attrs.st_mode or 0):
            return self._remove(remote, "delete")
        parked = posixpath.join(self._staging(path), posixpath.basename(remote))
        if not self._check_directories(posixpath.dirname(remote)):
            return False
        with self._errors("delete", remote):
            try:
                self._open().posix_rename(_wire(remote), _wire(parked))
            except FileNotFoundError:
                return False
            self._open().remove(_wire(parked))
        return True

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
        return self._lstat(self._remote(path)) is not None

    def list_files(self) -> list[str]:
        """Directory entries carry lstat attributes, so symlinks are listed, never followed. The
        walk keeps its own stack, so a planted tree of any depth is refused past DEPTH_LIMIT
        levels (storage_error) instead of exhausting Python's recursion. A directory that cannot
        be listed fails the listing (storage_error): taken as empty, its files would be
        overwritten unseen. Each directory is judged (see _judge) before it is listed."""
        found: list[str] = []
        pending = [(self._remote(""), "")]
        while pending:
            remote, prefix = pending.pop()
            with self._errors("list", remote):
                try:
                    entries = listdir_attr(self._open(), remote)
                except FileNotFoundError:
                    continue
            for entry in entries:
                if not stat.S_ISDIR(entry.st_mode or 0):
                    found.append(prefix + entry.filename)
                    continue
                child = posixpath.join(remote, entry.filename)
                if prefix.count("/") + 1 > DEPTH_LIMIT:
                    raise DistributorError("storage_error", "%s is more than %d directories deep; distributor lists "
                                           "trees at most that deep (limits.DEPTH_LIMIT)" % (self._url(child), DEPTH_LIMIT))
                self._judge(child, entry)
                pending.append((child, prefix + entry.filename + "/"))
        return sorted(found)

    # -- lock -----------------------------------------------------------------------------

    @contextmanager
    def lock(self, timeout: float, expiry: float = LOCK_EXPIRY_SECONDS) -> Iterator[Lease]:
        """Exclusive create of `.distributor.lock`; nothing releases it when a holder dies, so a
        record past its expiry is broken by the next publisher. A live holder renews it."""
        remote = self._remote(LOCK_NAME, create_parents=True)
        wait_for_lock(lambda: self._try_lock(remote, expiry), lambda: self._read(remote), timeout, self.describe())
        try:
            with Lease(partial(self._renew, remote, expiry), lambda: self._read(remote), expiry,
                       self.describe(LOCK_NAME)) as lease:
                yield lease
        except BaseException:
            with suppress(DistributorError):
                self._release(remote)
            raise
        finally:
            self._close_beat_session()
        self._release(remote)

    def _try_lock(self, remote: str, expiry: float) -> bool:
        if self._create_lock(remote, expiry):
            return True
        attrs = self._lstat(remote)
        raw = self._read(remote) if attrs is not None else None
        if raw is None:
            # Its holder released it since our create failed: the way is free, not broken.
            return self._create_lock(remote, expiry)
        # An empty or partial record is a lock being created: judged by the file's age.
        if not lock_is_expired(raw, time.time(), (attrs.st_mtime or 0) + expiry):
            return False
        return self._break_lock(remote, raw) and self._create_lock(remote, expiry)

    def _create_lock(self, remote: str, expiry: float) -> bool:
        """Exclusive create, then the holder record. SFTP reports an existing file only as a
        generic failure, so a failed create is judged by looking: a file there is another
        holder's lock; none there means it was released in the meantime (try again) or the
        failure is real (it repeats, and is raised)."""
        for attempt in range(LOCK_CREATE_ATTEMPTS):
            try:
                with self._errors("create lock", remote):
                    handle = self._open().open(remote, "wx")
            except DistributorError:
                if self._lstat(remote) is not None:
                    return False
                if attempt == LOCK_CREATE_ATTEMPTS - 1:
                    raise
                continue
            acquired_at = time.time()
            try:
                with self._errors("write lock", remote):
                    with handle:
                        handle.write(holder_record(acquired_at, expiry, self.token))
            except BaseException:
                # Our own empty lock would otherwise block everyone until its age expires it.
                with suppress(Exception):
                    self._open().remove(remote)
                raise
            self._acquired_at = acquired_at
            return True
        return False

    def _renew(self, remote: str, expiry: float) -> bool:
        """Rewrite our holder record with a later expiry, only while the lock is still ours.

        In place, never by create or rename: a lock broken and taken by another publisher is a
        new file, which a handle opened on ours never writes into, and a lock that is gone is
        not created again. A reader that meets a record half rewritten judges it by the file's
        age, which the write has just refreshed. On an SFTP channel of its own: the heartbeat
        runs beside the run's pipelined uploads, and one SFTPClient is not safe for concurrent use.
        """
        with self._errors("renew lock", remote):
            if self._beat_session is None:
                self._beat_session = self._client.open_sftp()
            try:
                handle = self._beat_session.open(remote, "r+")
            except FileNotFoundError:
                return False
            with handle:
                if not holds(handle.read(), self.token):
                    return False
                record = holder_record(time.time(), expiry, self.token, self._acquired_at)
                handle.seek(0)
                handle.write(record)
                handle.flush()
                handle.truncate(len(record))
        return True

    def _close_beat_session(self) -> None:
        if self._beat_session is not None:
            with suppress(Exception):
                self._beat_session.close()
            self._beat_session = None

    def _break_lock(self, remote: str, expired: bytes) -> bool:
        """Remove an expired lock, True when it is gone.

        Publishers waiting on the same dead holder all find its lock expired at once, and SFTP
        has no conditional delete (S3 uses If-Match): a slower one must not remove the lock a
        faster one has just created. So breaking that record takes a guard named after it,
        created exclusively, and the lock is read again under the guard: whoever gets the guard
        later finds a different record there and leaves it alone. A guard older than
        BREAK_GUARD_EXPIRY was left by a publisher that died while breaking, and is removed.
        """
        guard = "%s.break.%s" % (remote, hashlib.sha256(expired).hexdigest()[:16])
        try:
            with self._errors("break expired lock", guard):
                self._open().open(guard, "wx").close()
        except DistributorError:
            attrs = self._lstat(guard)
            if attrs is None:
                return False  # another publisher has just broken it: retry the create
            if (attrs.st_mtime or 0) + BREAK_GUARD_EXPIRY < time.time():
                self._remove(guard, "remove abandoned guard")
            return False
        try:
            current = self._read(remote)
            if current == expired:
                self._remove(remote, "break expired lock")
            return current is None or current == expired
        finally:
            self._remove(guard, "remove guard")

    def _release(self, remote: str) -> None:
        """Remove the lock only while it is still ours: a holder that lost it (see Lease) must
        leave the next publisher's lock alone."""
        if self._acquired_at is not None and holds(self._read(remote), self.token):
            self._remove(remote, "release lock")
        self._acquired_at = None


class _Staged(NamedTuple):
    staged: str
    target: str
    written: int
    identity: tuple  # the staged file as its own handle saw it last (see _identity)


def _identity(attrs) -> tuple:
    """What SFTP version 3 tells of a file that can single it out: it has no inode number."""
    return attrs.st_mode, attrs.st_uid, attrs.st_gid, attrs.st_size, attrs.st_mtime


def _link_refused(where: str) -> DistributorError:
    return DistributorError("storage_error", "%s is a symbolic link; distributor never follows links inside a "
                            "destination root" % where)


def _not_a_directory(where: str, needed_by: str) -> DistributorError:
    return DistributorError(
        "storage_error",
        "%s is a file where %s needs a directory; move it away so distributor can publish there" % (where, needed_by),
    )


def _disappeared(where: str) -> DistributorError:
    return DistributorError("storage_error", "%s is not where distributor just made it; something else changed the "
                            "destination during this run" % where)


def _cause(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        return "%s: %s" % (exc.strerror, exc.filename) if exc.filename else exc.strerror
    return str(exc) or type(exc).__name__
