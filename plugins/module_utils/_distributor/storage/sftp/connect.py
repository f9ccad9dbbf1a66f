# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The SFTP connection: its session on the chain of SSH connections that reaches the server
(sftp/chain.py: host keys, credentials, jump hosts), and paramiko's errors of each request turned
into storage_error naming the location.

One connection serves the whole run (opened on first use) because an SSH handshake costs far
more than the operations of a publish.
"""

from __future__ import annotations

import errno
import posixpath
from contextlib import contextmanager, suppress
from typing import Iterator

from ...errors import DistributorError
from ...paths import join
from ..refusals import relative_root, root_refused
from .chain import cause, check_endpoints
from .wire import STATVFS, filesystem, session_class

# SFTP version 3 has three statuses for a failed request that paramiko tells apart: no such file
# and permission denied (raised with their errno) and the generic failure (its text alone), which
# OpenSSH's server sends for every other errno: a read-only or full filesystem among them.
GENERIC_FAILURE = "Failure"


class SftpConnection:
    """The connection half of SftpStorage, a mixin for the reason given there (its attributes are set by
    SftpStorage.__init__)."""

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
        except self._sdk_errors as exc:
            message = "cannot %s %s: %s" % (action, self._url(remote), self._explained(exc, remote))
            error = DistributorError("storage_error", self._chain.redact(message))
            # A cause quoting the password would print it in a traceback: the message says enough.
            raise error from (None if self._chain.mentions_secret(exc) else exc)

    def _explained(self, exc: BaseException, remote: str) -> str:
        """The server's status as a sentence naming its cause and fix; a generic failure is
        explained by the filesystem holding `remote` when the server can say what it is."""
        said = cause(exc)
        if isinstance(exc, OSError) and exc.errno == errno.ENOENT:
            return "%s: no such file or directory on the server at that path or on the way to it; check the destination's " \
                   "root and path" % said
        if isinstance(exc, OSError) and exc.errno == errno.EACCES:
            return "%s: the server refuses the account %s; give it permission there (read and search on the way, write on " \
                   "the directory it writes in) or choose a root it may write" % (said, self.username)
        if said != GENERIC_FAILURE:
            return said
        return "%s: %s" % (said, failure_cause(self._filesystem(remote), self.username))

    def _filesystem(self, remote: str) -> tuple[bool, bool] | None:
        """(read-only, full) of the filesystem holding `remote` or, when it does not exist, its
        nearest existing directory; None when the server cannot tell (no statvfs@openssh.com)."""
        if self._session is None or STATVFS not in self._extensions:
            return None
        candidate = remote
        while True:
            with suppress(Exception):
                return filesystem(self._session, candidate)
            if candidate == posixpath.dirname(candidate):
                return None
            candidate = posixpath.dirname(candidate)

    # -- connection -----------------------------------------------------------------------

    def _open(self):
        """The SFTP session, connecting on first use through every jump host (Chain.connect
        leaves nothing open when it fails; a refused session closes the chain here). A view
        (SftpStorage.at) uses the session of the storage it was made from."""
        if self._session is None and self._origin is not None:
            self._session = self._origin._open()
            self._client, self._extensions = self._origin._client, self._origin._extensions
        if self._session is None:
            client = self._chain.connect()
            try:
                with self._errors("open an SFTP session on", self.root):
                    self._session = self._new_session(client)
                    self._extensions = self._session.extensions
            except BaseException:
                self._chain.close()
                raise
            self._client = client
        return self._session

    def _new_session(self, client):
        """The run's SFTP channel, which learns the server's extensions (see
        sftp.wire.session_class); the same server's other channels offer the same."""
        session = session_class(self._paramiko).from_transport(client.get_transport())
        if session is None:
            raise self._paramiko.SSHException("the server refused an SFTP session")
        return session

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


def check_config(storage) -> None:
    """Settings refused before any connection is made, so a bad one costs no handshake."""
    check_endpoints(storage.endpoints)
    if not posixpath.isabs(storage.root):
        raise relative_root(storage.root, "remote path")
    if posixpath.normpath(storage.root) in ("/", "//"):
        raise root_refused()


def failure_cause(filesystem: tuple[bool, bool] | None, username: str) -> str:
    """What a generic SFTP failure means, from the filesystem's state where it is known."""
    read_only, full = filesystem or (False, False)
    if read_only:
        return "the filesystem that holds it is mounted read-only on the server; remount it read-write or choose a root " \
               "on a writable filesystem"
    if full:
        return "the filesystem that holds it is full (no free blocks or inodes for %s); free space there or choose a " \
               "root with room" % username
    return "the server gave no detail (SSH_FX_FAILURE: OpenSSH's sends it for a read-only or full filesystem, a name " \
           "already taken, or any error without its own SFTP status); the server's log names the cause"
