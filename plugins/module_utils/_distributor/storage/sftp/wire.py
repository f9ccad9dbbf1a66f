# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""SFTP requests that paramiko does not make the way distributor needs them.

paramiko decodes names strictly as UTF-8, drops the list of extensions a server announces when
the session starts, and sets attributes by path only with SETSTAT, which follows a symbolic
link at the name. OpenSSH's server offers what confinement needs as extensions:
`lsetstat@openssh.com` (set attributes without following a link at the name) and
`users-groups-by-id@openssh.com` (the account name of a uid, to tell the SFTP account's own
directories from another account's), `fsync@openssh.com` (a file's bytes on the disk before
its rename), `statvfs@openssh.com` (whether a filesystem is read-only or full, which SFTP
version 3 reports only as a generic failure), and for releases `hardlink@openssh.com` and
`posix-rename@openssh.com`. These
helpers send them through paramiko's own request helper, so one session serves all requests;
paramiko stays a lazy import.
"""

from __future__ import annotations

import re
import struct
from functools import lru_cache
from typing import Iterator

LSETSTAT = "lsetstat@openssh.com"
READ_SIZE = 32768  # the largest read OpenSSH's server answers whole (and paramiko asks)
READS_AT_ONCE = 256  # reads unanswered at once (8 MiB): neither side's channel window fills
POSIX_RENAME = "posix-rename@openssh.com"  # rename(2): replaces the target, which SSH_FXP_RENAME refuses
HARDLINK = "hardlink@openssh.com"  # link(2), which does not follow a link at the source's name
USERS_GROUPS_BY_ID = "users-groups-by-id@openssh.com"
FSYNC = "fsync@openssh.com"  # fsync(2) of an open handle: SFTP version 3 has no other way to make bytes durable
STATVFS = "statvfs@openssh.com"
ST_RDONLY = 0x1  # SSH2_FXE_STATVFS_ST_RDONLY in the f_flag of a statvfs reply


def wire(remote: str) -> bytes:
    """A remote path as sent to the server. paramiko encodes text as strict UTF-8, but a name
    read from a listing may not be UTF-8: it is carried as surrogate escapes (like the local
    backend, see listdir_attr) and goes back out as the same bytes."""
    return remote.encode("utf-8", "surrogateescape")


def identity(attrs) -> tuple:
    """What SFTP version 3 tells of a file that can single it out: it has no inode number."""
    return attrs.st_mode, attrs.st_uid, attrs.st_gid, attrs.st_size, attrs.st_mtime


LS_MODE = re.compile(r"[-bcdlps][-rwxsStT]{9}[.+@]?")


def link_count(longname: str | None) -> int | None:
    """The link count a directory entry's long name gives, when the server writes it as `ls -l`
    does (OpenSSH's sftp-server: `-rw-r--r--    1 owner group size date name`); None when it
    does not. SFTP version 3 attributes have no link count, and the protocol leaves the long
    name's form to the server: this is the only place it is read."""
    fields = (longname or "").split(None, 2)
    if len(fields) == 3 and LS_MODE.fullmatch(fields[0]) and fields[1].isdigit():
        return int(fields[1])
    return None


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


def filesystem(sftp, remote: str) -> tuple[bool, bool]:
    """(read-only, full) of the filesystem holding `remote`: statvfs(2) as OpenSSH's server
    replies, eleven 64-bit numbers with the flags tenth and the blocks and inodes free to the
    account fifth and eighth."""
    from paramiko.sftp import CMD_EXTENDED, CMD_EXTENDED_REPLY, SFTPError

    kind, message = sftp._request(CMD_EXTENDED, STATVFS, wire(remote))
    if kind != CMD_EXTENDED_REPLY:
        raise SFTPError("Expected extended reply")
    numbers = [message.get_int64() for _field in range(11)]
    return bool(numbers[9] & ST_RDONLY), numbers[4] == 0 or numbers[7] == 0


def readlink(sftp, remote: str) -> bytes:
    """The target of the link at `remote` as the server sends it: bytes, which paramiko would
    decode strictly (or hand back undecoded); the caller bounds and decodes them."""
    from paramiko.sftp import CMD_NAME, CMD_READLINK, SFTPError

    kind, message = sftp._request(CMD_READLINK, wire(remote))
    if kind != CMD_NAME or message.get_int() != 1:
        raise SFTPError("Expected one name")
    return message.get_string()


def symlink_request(target: str, link: str) -> tuple:
    """The arguments of SSH_FXP_SYMLINK making a link at `link` that holds `target`, in the
    order OpenSSH's sftp-server reads them: the target first, the link's path second. The
    protocol draft names them the other way round (linkpath, targetpath); OpenSSH has swapped
    them from the start and every client sends them its way, paramiko included."""
    return wire(target), wire(link)


LISTED_AT_ONCE = 64  # directories open on the server at once while a listing reads them


def listdir_attr(sftp, remotes: list[str]) -> Iterator[tuple[str, object]]:
    """paramiko's SFTPClient.listdir_attr for several directories at once: (remote, entries),
    or (remote, None) when it does not exist, or (remote, the exception) when it cannot be
    listed. Names that are not UTF-8 are kept as surrogate escapes instead of raising
    UnicodeDecodeError (paramiko decodes them strictly, and has no option). The opens, the reads
    and the closes of up to LISTED_AT_ONCE directories are each sent together (see Pipe)."""
    for first in range(0, len(remotes), LISTED_AT_ONCE):
        yield from _listdirs(Pipe(sftp), remotes[first:first + LISTED_AT_ONCE])


def _listdirs(pipe, remotes: list[str]) -> list:
    from paramiko.sftp import CMD_CLOSE, CMD_NAME, CMD_OPENDIR, CMD_READDIR, CMD_STATUS, SFTPError
    from paramiko.sftp_attr import SFTPAttributes

    found: dict = {}
    handles: dict = {}
    for remote, number in [(remote, pipe.send(CMD_OPENDIR, wire(remote))) for remote in remotes]:
        try:
            handles[remote] = pipe.handle(number)
            found[remote] = []
        except FileNotFoundError:
            found[remote] = None
        except (OSError, SFTPError) as exc:
            found[remote] = exc
    reading = dict(handles)
    while reading:
        for remote, number in [(remote, pipe.send(CMD_READDIR, handle)) for remote, handle in reading.items()]:
            kind, message = pipe.reply(number)
            try:
                if kind == CMD_STATUS:
                    pipe.sftp._convert_status(message)
                if kind != CMD_NAME:
                    raise SFTPError("Expected name response")
            except EOFError:
                del reading[remote]
                continue
            except (OSError, SFTPError) as exc:
                found[remote] = exc
                del reading[remote]
                continue
            for _index in range(message.get_int()):
                name = message.get_string().decode("utf-8", "surrogateescape")
                longname = message.get_string().decode("utf-8", "surrogateescape")
                entry = SFTPAttributes._from_msg(message, name, longname)
                if name not in (".", ".."):
                    found[remote].append(entry)
    for remote, number in [(remote, pipe.send(CMD_CLOSE, handle)) for remote, handle in handles.items()]:
        try:
            pipe.status(number)
        except (OSError, SFTPError) as exc:
            if isinstance(found[remote], list):
                found[remote] = exc
    return [(remote, found[remote]) for remote in remotes]


class Pipe:
    """Requests on one SFTP session sent without waiting for their replies, which are collected
    when asked for (paramiko hands them to the "file" object that made the request). The server
    answers a session's requests in order, so many small requests cost one round trip and far
    less of paramiko's CPU than as many waits, each a hand-off between threads. The requests are
    queued and go out together when the reply of one of them is first asked for: paramiko would
    make each one an SSH packet of its own, and a system call."""

    def __init__(self, sftp):
        self.sftp = sftp
        self.replies: dict = {}
        self.in_flight = 0
        self.queued: list[bytes] = []
        self.first_queued: int | None = None  # the number of the first request not yet written

    def _async_response(self, kind, message, number) -> None:
        self.replies[number] = (kind, message)
        self.in_flight -= 1

    def send(self, command: int, *args) -> int:
        """The request's number, to ask for its reply with `reply`: paramiko's _async_request,
        but queued, not written."""
        from paramiko.message import Message
        from paramiko.sftp_attr import SFTPAttributes
        from paramiko.sftp_client import int64

        with self.sftp._lock:
            number = self.sftp.request_number
            self.sftp._expecting[number] = self
            self.sftp.request_number += 1
        message = Message()
        message.add_int(number)
        for item in args:
            if isinstance(item, int64):
                message.add_int64(item)
            elif isinstance(item, int):
                message.add_int(item)
            elif isinstance(item, SFTPAttributes):
                item._pack(message)
            else:
                message.add_string(item)
        payload = message.asbytes()
        self.queued.append(struct.pack(">IB", len(payload) + 1, command) + payload)
        if self.first_queued is None:
            self.first_queued = number
        self.in_flight += 1
        return number

    def flush(self) -> None:
        """The queued requests written, as few SSH packets as the channel allows."""
        if self.queued:
            data, self.queued, self.first_queued = b"".join(self.queued), [], None
            self.sftp._write_all(data)

    def settle(self, limit: int) -> None:
        """Replies read until no more than `limit` requests wait for theirs: a large file's
        writes are not all held in memory at once."""
        if self.in_flight > limit:
            self.flush()
        while self.in_flight > limit:
            self.sftp._read_response()

    def reply(self, number: int) -> tuple:
        """(kind, message) of request `number`, read from the session when not yet there."""
        if self.first_queued is not None and number >= self.first_queued:
            self.flush()
        while number not in self.replies:
            self.sftp._read_response()
        return self.replies.pop(number)

    def status(self, number: int) -> None:
        """Request `number` succeeded, or its error as paramiko raises it (FileNotFoundError, OSError)."""
        from paramiko.sftp import CMD_STATUS, SFTPError

        kind, message = self.reply(number)
        if kind != CMD_STATUS:
            raise SFTPError("Expected status")
        self.sftp._convert_status(message)

    def attributes(self, number: int, missing_ok: bool = False):
        """The attributes request `number` (an lstat or fstat) got; None when nothing is there and `missing_ok`."""
        from paramiko.sftp import CMD_ATTRS, CMD_STATUS, SFTPError
        from paramiko.sftp_attr import SFTPAttributes

        kind, message = self.reply(number)
        if kind == CMD_ATTRS:
            return SFTPAttributes._from_msg(message)
        if kind == CMD_STATUS:
            try:
                self.sftp._convert_status(message)
            except FileNotFoundError:
                if missing_ok:
                    return None
                raise
        raise SFTPError("Expected attributes")

    def data(self, number: int) -> bytes:
        """The bytes a read request got, b"" at the end of the file, or its error."""
        from paramiko.sftp import CMD_DATA, CMD_STATUS, SFTPError

        kind, message = self.reply(number)
        if kind == CMD_DATA:
            return message.get_string()
        if kind == CMD_STATUS:
            try:
                self.sftp._convert_status(message)
            except EOFError:
                return b""
        raise SFTPError("Expected data")

    def handle(self, number: int) -> bytes:
        """The handle an open request got, or its error."""
        from paramiko.sftp import CMD_HANDLE, CMD_STATUS, SFTPError

        kind, message = self.reply(number)
        if kind == CMD_STATUS:
            self.sftp._convert_status(message)
        if kind != CMD_HANDLE:
            raise SFTPError("Expected handle")
        return message.get_binary()


def read_ahead(sftp, handle: bytes, expected: int, limit: int) -> Iterator[bytes]:
    """The bytes of the open file `handle` in order, at most `limit` of them. Reads for the
    `expected` bytes (its size when looked at) and one more past them are sent at once (up to
    READS_AT_ONCE), so a file of the size seen costs one round trip; past it (a file grown
    since) a read at a time. Never more than `limit` is asked for, whatever the file's size."""
    from paramiko.sftp_client import int64
    from paramiko.sftp import CMD_READ

    pipe = Pipe(sftp)
    offset = 0
    while offset < limit:
        starts = [start for start in sorted(set(range(offset, expected, READ_SIZE)) | {max(offset, expected)})
                  if start < limit][:READS_AT_ONCE]
        ends = starts[1:] + [min(starts[-1] + READ_SIZE, limit)]
        numbers = [(start, pipe.send(CMD_READ, handle, int64(start), end - start)) for start, end in zip(starts, ends)]
        ended = False
        for start, number in numbers:
            data = pipe.data(number)
            if ended or start != offset:
                continue  # past the end, or after a short read: asked again from `offset`
            if not data:
                ended = True
                continue
            offset += len(data)
            yield data
        if ended:
            return


def lstat_many(sftp, remotes: list[str]) -> list:
    """lstat of every path of `remotes`, None where there is nothing: all requests are sent
    before the first reply is awaited, so looking at a whole way costs one round trip, not one a
    directory (the server still answers them in order)."""
    from paramiko.sftp import CMD_LSTAT

    pipe = Pipe(sftp)
    numbers = [pipe.send(CMD_LSTAT, wire(remote)) for remote in remotes]
    return [pipe.attributes(number, missing_ok=True) for number in numbers]
