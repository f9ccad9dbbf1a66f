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
import os
import posixpath
import queue
import stat
import threading
import traceback
from contextlib import contextmanager, suppress
from typing import Callable, ContextManager, Iterable, Iterator, NamedTuple

from ..attributes import parse_mode
from ..errors import DistributorError, MissingLibrary
from ..paths import is_reserved, join
from ..regular import kind_of
from .base import Storage, in_parallel, mentions_secret, not_a_record, redact, staging_dir
from .lease import LOCK_EXPIRY_SECONDS, Lease, held
from .sftp_lock import SftpLock

CONNECT_TIMEOUT = 30.0
HOST_KEY_POLICIES = ("reject", "accept_new")
CHANNELS = 3  # SFTP channels writing at once; OpenSSH allows 10 sessions a connection by default
BATCH_FILES = 1024  # files staged before the first of them is renamed
AEAD_CIPHERS = ("aes128-gcm@openssh.com", "aes256-gcm@openssh.com")


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
        _check_config(self)
        try:
            import paramiko
        except ImportError:
            raise MissingLibrary("paramiko", "sftp storage", traceback.format_exc()) from None
        self._paramiko = paramiko
        self._sdk_errors = (OSError, EOFError, paramiko.SSHException)
        self._client = None
        self._session = None
        self._dirs: set[str] = set()
        self._staging_dirs: dict[str, int | None] = {}
        self._staging_lock = threading.Lock()
        self._worker = threading.local()

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
                    self._session = client.open_sftp()
            except BaseException:
                client.close()
                raise
            self._client = client
        return self._session

    def _trust_known_hosts(self, client) -> None:
        if self.known_hosts_file:
            path = os.path.expanduser(self.known_hosts_file)
            if os.path.exists(path):
                _check_known_hosts(path)
                client.get_host_keys().load(path)
        else:
            system = os.path.expanduser("~/.ssh/known_hosts")
            if os.path.exists(system):
                _check_known_hosts(system)
            client.load_system_host_keys()
        client.set_missing_host_key_policy(_HostKeyPolicy(self))

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
        link): a directory is created, and a file removed, only after _check_directories has
        looked at the whole way again; a staged file is renamed only from a staging directory
        beside its target (see base.staging_dir).
        """
        current = self.root
        if create_parents and current not in self._dirs:
            self._make_root()
        parts = [part for part in join(self.base, path).split("/") if part]
        for index, part in enumerate(parts):
            current = posixpath.join(current, part)
            if current in self._dirs:
                continue
            attrs = self._lstat(current)
            if attrs is None:
                if create_parents and index < len(parts) - 1:
                    self._check_directories(posixpath.dirname(current))
                    self._mkdir(current)
                    continue
                return posixpath.join(current, *parts[index + 1:])
            if stat.S_ISLNK(attrs.st_mode):
                raise _link_refused(self._url(current))
            if stat.S_ISDIR(attrs.st_mode):
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

    def _mkdir(self, remote: str) -> None:
        """Another publisher may create the same directory at the same moment, which is fine;
        SFTP reports 'already exists' only as a generic failure, so look before complaining."""
        try:
            with self._errors("create directory", remote):
                self._open().mkdir(_wire(remote))
        except DistributorError:
            attrs = self._lstat(remote)
            if attrs is None or not stat.S_ISDIR(attrs.st_mode):
                raise
        else:
            self._settle(remote, self.directory_mode)
        self._dirs.add(remote)

    def _settle(self, remote: str, mode: int | None, handle=None) -> None:
        """Apply the configured mode and numeric ownership: to a staged file before its rename
        (through its open `handle`, so no name is resolved again), so an output never appears
        with other permissions, and to a directory we created. An unset owner or group keeps
        the server's (-1 is not sent: SFTP sets both ids at once)."""
        sftp = self._open()
        target = handle or _PathAttributes(sftp, _wire(remote))
        with self._errors("set permissions of", remote):
            if mode is not None:
                target.chmod(mode)
            if self.ids != (-1, -1):
                uid, gid = self.ids
                if -1 in self.ids:
                    attrs = target.stat()
                    uid, gid = (attrs.st_uid if uid == -1 else uid), (attrs.st_gid if gid == -1 else gid)
                target.chown(uid, gid)

    # -- files ----------------------------------------------------------------------------

    def _read(self, remote: str, limit: int) -> bytes | None:
        """Prefetching requests every block at once; read block by block, a large file would
        take one round trip per 32 KiB. Both stop at `limit + 1` bytes: the server sends no more,
        whatever the file's size. Only the reserved names and managed outputs are read, and what
        is there is looked at first: the server would block opening a FIFO, and the whole
        session with it. (SFTP has no non-blocking open: docs/operations.md states the window
        left.)"""
        attrs = self._lstat(remote)
        if attrs is None:
            return None
        kind = kind_of(attrs.st_mode or 0)
        if kind:
            raise not_a_record(self._url(remote), kind)
        with self._errors("read", remote):
            try:
                with self._open().open(_wire(remote), "rb") as handle:
                    handle.prefetch(min(attrs.st_size or 0, limit + 1))
                    return _read_up_to(handle, limit + 1)
            except FileNotFoundError:
                return None

    def read_bytes(self, path: str, limit: int) -> bytes | None:
        return self._read(self._remote(path), limit)

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
        staging, owner = self._staging(path)
        staged = posixpath.join(staging, posixpath.basename(target))
        try:
            return _Staged(staged, target, self._upload(staged, chunks), owner)
        except BaseException:
            self._discard(staged)
            raise

    def _commit(self, item: _Staged) -> None:
        """The staged file checked once more, then renamed over its target."""
        try:
            self._verify(item.staged, item.written, item.owner)
            with self._errors("rename into place", item.target):
                self._open().posix_rename(_wire(item.staged), _wire(item.target))
        except BaseException:
            self._discard(item.staged)
            raise

    def _staging(self, path: str) -> tuple[str, int | None]:
        """(remote, uid): this attempt's staging directory beside `path` (see base.staging_dir),
        made on first use. mkdir neither follows nor reuses what is at the name; the way to it is
        checked right before and right after, so it is never made behind a directory that was
        swapped for a link, even one cached as checked earlier in the run."""
        remote = posixpath.join(self.root, join(self.base, staging_dir(path, self.token)))
        if remote not in self._staging_dirs:
            with self._staging_lock:
                if remote not in self._staging_dirs:
                    self._make_staging(remote)
        return remote, self._staging_dirs[remote]

    def _make_staging(self, remote: str) -> None:
        """Under _staging_lock: write_many's workers meet the same new directory at once, and
        only one of them may make its staging directory."""
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
            raise DistributorError("storage_error", "%s disappeared right after it was made; something else "
                                   "changed the destination during this run" % self._url(remote))
        attrs = self._lstat(remote)
        self._staging_dirs[remote] = attrs.st_uid if attrs is not None else None

    def _drop_staging(self) -> None:
        """Remove the staging directories, empty once their files are renamed or removed."""
        for remote in self._staging_dirs:
            with suppress(Exception):
                self._open().rmdir(_wire(remote))
        self._staging_dirs.clear()

    def _upload(self, staged: str, chunks: Iterable[bytes]) -> int:
        """Stream `chunks` to a new file `staged` (exclusive create: never opened through a name
        that exists, link or not); the chunk iterator's own exceptions pass unchanged. The
        number of bytes sent."""
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
        except BaseException:
            with suppress(Exception):
                handle.close()
            raise
        with self._errors("write", staged):
            handle.close()
        return written

    def _verify(self, staged: str, written: int, owner: int | None) -> None:
        """Right before the rename: the staged name still holds a regular file owned as this
        attempt made it, of every byte sent. Pipelined writes are not acknowledged one by one
        and paramiko drops the errors of unacknowledged writes at close, so a short file (a full
        disk, say) is caught here, before the rename publishes it."""
        attrs = self._lstat(staged)
        expected_owner = owner if self.ids[0] == -1 else self.ids[0]
        if attrs is None or not stat.S_ISREG(attrs.st_mode or 0) or attrs.st_uid != expected_owner:
            raise DistributorError("storage_error", "cannot write %s: the staged file was replaced or removed by "
                                   "someone else" % self._url(staged))
        if attrs.st_size != written:
            raise DistributorError(
                "storage_error",
                "cannot write %s: only %d of %d bytes arrived (is the disk full?)" % (self._url(staged), attrs.st_size, written),
            )

    def _discard(self, remote: str) -> None:
        """Best effort: a staged name is reserved and derived from the token, so recovery finds
        whatever this leaves behind."""
        with suppress(Exception):
            self._open().remove(_wire(remote))

    def _remove(self, remote: str, action: str) -> bool:
        with self._errors(action, remote):
            try:
                self._open().remove(_wire(remote))
            except FileNotFoundError:
                return False
        return True

    def delete(self, path: str) -> bool:
        """The way to the file is checked again right before the remove, so a directory swapped
        for a link since it was first seen does not lead the remove out of the root. A staged
        file already gone still tidies its staging directory: an attempt that died after its
        renames left that directory empty, and recovery deletes staged names."""
        remote = self._remote(path)
        if not (self._check_directories(posixpath.dirname(remote)) and self._remove(remote, "delete")):
            if is_reserved(path):
                self._remove_empty_parents(path)
            return False
        self._remove_empty_parents(path)
        return True

    def _remove_empty_parents(self, path: str) -> None:
        """Remove directories the delete emptied, up to (not including) the base.

        SFTP reports a non-empty directory only as a generic failure, so any failure ends the
        tidy-up: a leftover empty directory is harmless.
        """
        head = path.rpartition("/")[0]
        while head:
            remote = self._remote(head)
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
        found: list[str] = []
        self._walk(self._remote(""), "", found)
        return sorted(found)

    def _walk(self, remote: str, prefix: str, found: list[str]) -> None:
        """Directory entries carry lstat attributes, so symlinks are listed, never followed. A
        directory that cannot be listed fails the listing (storage_error): taken as empty, its
        files would be overwritten unseen."""
        with self._errors("list", remote):
            try:
                entries = _listdir_attr(self._open(), remote)
            except FileNotFoundError:
                return
        for entry in entries:
            if stat.S_ISDIR(entry.st_mode or 0):
                self._walk(posixpath.join(remote, entry.filename), prefix + entry.filename + "/", found)
            else:
                found.append(prefix + entry.filename)

    # -- lock -----------------------------------------------------------------------------

    def lock(self, timeout: float, expiry: float = LOCK_EXPIRY_SECONDS) -> ContextManager[Lease]:
        """The protocol of lease.held over SftpLock."""
        return held(SftpLock(self), self.token, timeout, expiry)


class _Staged(NamedTuple):
    staged: str
    target: str
    written: int
    owner: int | None


def _read_up_to(handle, size: int) -> bytes:
    """At most `size` bytes of an open file, a request's worth at a time: paramiko's own
    read(size) grows one bytes object by each reply it gets, copying it again every time."""
    chunks, left = [], size
    while left:
        chunk = handle.read(min(left, handle.MAX_REQUEST_SIZE))
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


class _PathAttributes:
    """A remote path with the attribute calls of an open paramiko file (chmod, chown, stat),
    so _settle treats a directory and an open staged file alike."""

    def __init__(self, sftp, wire: bytes):
        self.sftp = sftp
        self.wire = wire

    def chmod(self, mode: int) -> None:
        self.sftp.chmod(self.wire, mode)

    def chown(self, uid: int, gid: int) -> None:
        self.sftp.chown(self.wire, uid, gid)

    def stat(self):
        return self.sftp.lstat(self.wire)


def _wire(remote: str) -> bytes:
    """A remote path as sent to the server. paramiko encodes text as strict UTF-8, but a name
    read from a listing may not be UTF-8: it is carried as surrogate escapes (like the local
    backend, see _listdir_attr) and goes back out as the same bytes."""
    return remote.encode("utf-8", "surrogateescape")


def _listdir_attr(sftp, remote: str) -> list:
    """paramiko's SFTPClient.listdir_attr, but names that are not UTF-8 are kept as surrogate
    escapes instead of raising UnicodeDecodeError (paramiko decodes them strictly, and has no
    option): the same requests, through its request helper."""
    from paramiko.sftp import CMD_CLOSE, CMD_HANDLE, CMD_NAME, CMD_OPENDIR, CMD_READDIR, SFTPError
    from paramiko.sftp_attr import SFTPAttributes

    kind, message = sftp._request(CMD_OPENDIR, _wire(remote))
    if kind != CMD_HANDLE:
        raise SFTPError("Expected handle")
    handle = message.get_binary()
    entries = []
    try:
        while True:
            try:
                kind, message = sftp._request(CMD_READDIR, handle)
            except EOFError:
                return entries
            if kind != CMD_NAME:
                raise SFTPError("Expected name response")
            for _index in range(message.get_int()):
                name = message.get_string().decode("utf-8", "surrogateescape")
                longname = message.get_string().decode("utf-8", "surrogateescape")
                entry = SFTPAttributes._from_msg(message, name, longname)
                if name not in (".", ".."):
                    entries.append(entry)
    finally:
        sftp._request(CMD_CLOSE, handle)


def _link_refused(where: str) -> DistributorError:
    return DistributorError("storage_error", "%s is a symbolic link; distributor never follows links inside a "
                            "destination root" % where)


class _HostKeyPolicy:
    """What paramiko asks about a server key missing from known_hosts (duck-typed like
    paramiko.MissingHostKeyPolicy, so paramiko stays a lazy import)."""

    def __init__(self, storage: SftpStorage):
        self.storage = storage

    def missing_host_key(self, client, hostname: str, key) -> None:
        storage = self.storage
        if storage.host_key_policy != "accept_new":
            raise DistributorError(
                "storage_error",
                "the host key of %s:%d (%s %s) is not in %s; add it there (for example "
                "`ssh-keyscan -p %d %s >> %s`) or set host_key_policy: accept_new to trust it on "
                "first use"
                % (
                    storage.host,
                    storage.port,
                    key.get_name(),
                    key.fingerprint,
                    storage.known_hosts_file or "~/.ssh/known_hosts",
                    storage.port,
                    storage.host,
                    storage.known_hosts_file or "~/.ssh/known_hosts",
                ),
            )
        client.get_host_keys().add(hostname, key.get_name(), key)
        if storage.known_hosts_file:
            _remember_host_key(os.path.expanduser(storage.known_hosts_file), hostname, key)


def _remember_host_key(path: str, hostname: str, key) -> None:
    """Append, as OpenSSH does, so comments and hashed entries in the file survive."""
    if os.path.dirname(path):
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    with open(path, "a") as handle:
        handle.write("%s %s %s\n" % (hostname, key.get_name(), key.get_base64()))


def _check_config(storage: SftpStorage) -> None:
    if not storage.host:
        raise DistributorError("invalid_config", "storage.host is required for sftp storage")
    if not posixpath.isabs(storage.root):
        raise DistributorError("invalid_config", "storage.root %r must be an absolute remote path" % storage.root)
    if posixpath.normpath(storage.root) in ("/", "//"):
        raise DistributorError("invalid_config", "storage.root '/' is refused: publish into a directory of its own")
    if storage.host_key_policy not in HOST_KEY_POLICIES:
        raise DistributorError(
            "invalid_config",
            "storage.host_key_policy %r must be one of %s" % (storage.host_key_policy, ", ".join(HOST_KEY_POLICIES)),
        )


def _check_known_hosts(path: str) -> None:
    """paramiko skips lines of key types it does not know but raises on a damaged line, and on
    a file that is not text, with no word of where: name the file and line instead."""
    from paramiko.hostkeys import HostKeyEntry, InvalidHostKey
    from paramiko.ssh_exception import SSHException

    try:
        with open(path, "rb") as handle:
            lines = handle.read().decode("utf-8").splitlines()
    except UnicodeDecodeError as exc:
        raise DistributorError("invalid_config", "%s is not a known_hosts file: it is not UTF-8 text (byte %d)"
                               % (path, exc.start)) from None
    for number, line in enumerate(lines, 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        try:
            HostKeyEntry.from_line(line, number)
        except SSHException:
            continue
        except (InvalidHostKey, ValueError, TypeError) as exc:
            raise DistributorError("invalid_config", "%s line %d is not a valid known_hosts entry (%s); fix or "
                                   "remove that line" % (path, number, type(exc).__name__)) from None


def _not_a_directory(where: str, needed_by: str) -> DistributorError:
    return DistributorError(
        "storage_error",
        "%s is a file where %s needs a directory; move it away so distributor can publish there" % (where, needed_by),
    )


def _cause(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        return "%s: %s" % (exc.strerror, exc.filename) if exc.filename else exc.strerror
    return str(exc) or type(exc).__name__
