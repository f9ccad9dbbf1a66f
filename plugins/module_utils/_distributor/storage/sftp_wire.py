# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""SFTP requests that paramiko does not make the way distributor needs them.

paramiko decodes names strictly as UTF-8, drops the list of extensions a server announces when
the session starts, and sets attributes by path only with SETSTAT, which follows a symbolic
link at the name. OpenSSH's server offers what confinement needs as extensions:
`lsetstat@openssh.com` (set attributes without following a link at the name) and
`users-groups-by-id@openssh.com` (the account name of a uid, to tell the SFTP account's own
directories from another account's). These helpers send them through paramiko's own request
helper, so one session serves all requests; paramiko stays a lazy import.
"""

from __future__ import annotations

import struct
from functools import lru_cache

LSETSTAT = "lsetstat@openssh.com"
USERS_GROUPS_BY_ID = "users-groups-by-id@openssh.com"


def wire(remote: str) -> bytes:
    """A remote path as sent to the server. paramiko encodes text as strict UTF-8, but a name
    read from a listing may not be UTF-8: it is carried as surrogate escapes (like the local
    backend, see listdir_attr) and goes back out as the same bytes."""
    return remote.encode("utf-8", "surrogateescape")


@lru_cache(maxsize=None)
def session_class(paramiko):
    """paramiko's SFTPClient keeping the extensions the server announced (its version packet:
    the version, then name/data string pairs), as `extensions`, a frozenset of names."""
    from paramiko.message import Message
    from paramiko.sftp import _VERSION, CMD_INIT, CMD_VERSION, SFTPError

    class Session(paramiko.SFTPClient):
        extensions: frozenset = frozenset()

        def _send_version(self):
            message = Message()
            message.add_int(_VERSION)
            self._send_packet(CMD_INIT, message)
            kind, data = self._read_packet()
            if kind != CMD_VERSION:
                raise SFTPError("Incompatible sftp protocol")
            reply = Message(data)
            version = reply.get_int()
            names = []
            while reply.get_remainder():
                names.append(reply.get_string().decode("utf-8", "replace"))
                reply.get_string()
            self.extensions = frozenset(names)
            return version

    return Session


def lsetstat(sftp, remote: str, mode: int | None, ids: tuple[int, int] | None) -> None:
    """Set the mode and/or owner of `remote` itself, a symbolic link there included (OpenSSH
    applies it with fchmodat/fchownat and AT_SYMLINK_NOFOLLOW). Only the last component is
    not followed: the directories on the way are resolved by the server like any path."""
    from paramiko.sftp import CMD_EXTENDED
    from paramiko.sftp_attr import SFTPAttributes

    attrs = SFTPAttributes()
    attrs.st_mode = mode
    if ids is not None:
        attrs.st_uid, attrs.st_gid = ids
    sftp._request(CMD_EXTENDED, LSETSTAT, wire(remote), attrs)


def user_names(sftp, uids: list[int]) -> list[str]:
    """The account names of `uids`, in order, "" where the server knows none."""
    from paramiko.message import Message
    from paramiko.sftp import CMD_EXTENDED, CMD_EXTENDED_REPLY, SFTPError

    kind, message = sftp._request(CMD_EXTENDED, USERS_GROUPS_BY_ID, struct.pack(">%dI" % len(uids), *uids), b"")
    if kind != CMD_EXTENDED_REPLY:
        raise SFTPError("Expected extended reply")
    names = Message(message.get_binary())
    return [names.get_string().decode("utf-8", "replace") for _uid in uids]


def listdir_attr(sftp, remote: str) -> list:
    """paramiko's SFTPClient.listdir_attr, but names that are not UTF-8 are kept as surrogate
    escapes instead of raising UnicodeDecodeError (paramiko decodes them strictly, and has no
    option): the same requests, through its request helper."""
    from paramiko.sftp import CMD_CLOSE, CMD_HANDLE, CMD_NAME, CMD_OPENDIR, CMD_READDIR, SFTPError
    from paramiko.sftp_attr import SFTPAttributes

    kind, message = sftp._request(CMD_OPENDIR, wire(remote))
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


class _Replies:
    """Collects the replies paramiko hands to a "file" object that made asynchronous requests."""

    def __init__(self):
        self.replies: dict = {}

    def _async_response(self, kind, message, number) -> None:
        self.replies[number] = (kind, message)


def lstat_many(sftp, remotes: list[str]) -> list:
    """lstat of every path of `remotes`, None where there is nothing: all requests are sent
    before the first reply is awaited, so looking at a whole way costs one round trip, not one a
    directory (the server still answers them in order)."""
    from paramiko.sftp import CMD_ATTRS, CMD_LSTAT, CMD_STATUS, SFTPError
    from paramiko.sftp_attr import SFTPAttributes

    collector = _Replies()
    numbers = [sftp._async_request(collector, CMD_LSTAT, wire(remote)) for remote in remotes]
    while len(collector.replies) < len(numbers):
        sftp._read_response()
    found = []
    for number in numbers:
        kind, message = collector.replies[number]
        if kind == CMD_ATTRS:
            found.append(SFTPAttributes._from_msg(message))
        elif kind == CMD_STATUS:
            try:
                sftp._convert_status(message)
            except FileNotFoundError:
                found.append(None)
                continue
            raise SFTPError("Expected attributes")
        else:
            raise SFTPError("Expected attributes")
    return found
