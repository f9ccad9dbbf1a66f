# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The SFTP connection: the server's host key, looked up in known_hosts like OpenSSH does, the
credentials, the ciphers, and paramiko's errors turned into storage_error naming the location.

One connection serves the whole run (opened on first use) because an SSH handshake costs far
more than the operations of a publish.
"""

from __future__ import annotations

import os
import posixpath
from contextlib import contextmanager
from typing import Iterator

from ..errors import DistributorError
from ..paths import join
from ..vocabulary import HOST_KEY_POLICIES
from .base import mentions_secret, redact
from .refusals import relative_root, root_refused
from .sftp_wire import session_class

CONNECT_TIMEOUT = 30.0
AEAD_CIPHERS = ("aes128-gcm@openssh.com", "aes256-gcm@openssh.com")


class SftpConnection:
    """The connection half of SftpStorage (its attributes are set by SftpStorage.__init__)."""

    # -- locations and errors -------------------------------------------------------------

    def _url(self, remote: str) -> str:
        return "sftp://%s@%s:%d%s" % (self.username, self.host, self.port, remote)

    def describe(self, path: str = "") -> str:
        """The location under the root as an sftp:// URL, for messages."""
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
        """The SFTP session, connecting on first use."""
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


class HostKeyPolicy:
    """What paramiko asks about a server key missing from known_hosts (duck-typed like
    paramiko.MissingHostKeyPolicy, so paramiko stays a lazy import)."""

    def __init__(self, storage):
        self.storage = storage

    def missing_host_key(self, client, hostname: str, key) -> None:
        """Trust on first use only when host_key_policy says so; otherwise refused, with the command to add the key."""
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
            remember_host_key(os.path.expanduser(storage.known_hosts_file), hostname, key)


def remember_host_key(path: str, hostname: str, key) -> None:
    """Append, as OpenSSH does, so comments and hashed entries in the file survive."""
    if os.path.dirname(path):
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    with open(path, "a") as handle:
        handle.write("%s %s %s\n" % (hostname, key.get_name(), key.get_base64()))


def check_config(storage) -> None:
    """Settings refused before any connection is made, so a bad one costs no handshake."""
    if not storage.host:
        raise DistributorError("invalid_config", "storage.host is required for sftp storage")
    if not posixpath.isabs(storage.root):
        raise relative_root(storage.root, "remote path")
    if posixpath.normpath(storage.root) in ("/", "//"):
        raise root_refused()
    if storage.host_key_policy not in HOST_KEY_POLICIES:
        raise DistributorError(
            "invalid_config",
            "storage.host_key_policy %r must be one of %s" % (storage.host_key_policy, ", ".join(HOST_KEY_POLICIES)),
        )


def check_known_hosts(path: str) -> None:
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


def _cause(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        return "%s: %s" % (exc.strerror, exc.filename) if exc.filename else exc.strerror
    return str(exc) or type(exc).__name__
