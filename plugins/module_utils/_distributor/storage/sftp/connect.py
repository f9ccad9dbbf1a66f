# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The SFTP connection: its session on the chain of SSH connections that reaches the server
(sftp/chain.py: host keys, credentials, jump hosts), and paramiko's errors of each request turned
into storage_error naming the location.

One connection serves the whole run (opened on first use) because an SSH handshake costs far
more than the operations of a publish.
"""

from __future__ import annotations

import posixpath
from contextlib import contextmanager
from typing import Iterator

from ...errors import DistributorError
from ...paths import join
from ..refusals import relative_root, root_refused
from .chain import cause, check_endpoints
from .wire import session_class


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
            message = "cannot %s %s: %s" % (action, self._url(remote), cause(exc))
            error = DistributorError("storage_error", self._chain.redact(message))
            # A cause quoting the password would print it in a traceback: the message says enough.
            raise error from (None if self._chain.mentions_secret(exc) else exc)

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
