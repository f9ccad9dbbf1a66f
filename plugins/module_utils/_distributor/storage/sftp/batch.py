# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The batched half of SFTP storage: a batch of files staged, checked and renamed into place with
requests sent ahead of their replies, and the look at the files a run is about to delete or write
over (doubt_files) and the deletes themselves (delete_many), sent the same way.

A small file waited for request by request costs about ten round trips, and paramiko spends more
CPU handing each reply from its transport thread to the waiting one than on the request itself.
So files go in windows: for every file of a window the look at its target and the open of its
staged name are sent at once, then its writes, attributes, sync, fstat and close, then (once the
whole batch is staged) the look at its way and at its staged file, and last the renames. The sync
(fsync@openssh.com, where the server offers it) goes on the file's own handle before its close,
so no rename publishes bytes a server crash could lose. Every check of sftp/paths.py is still made,
on the replies, before the act it guards is sent. The windows are spread over a few SFTP channels
of the one connection, each served by its own server process, from this one thread.
"""

from __future__ import annotations

import posixpath
import stat
from contextlib import suppress
from typing import Callable, Iterable

from ...errors import DistributorError
from ...paths import is_reserved
from ...regular import kind_of
from ..judging import verdict
from ..refusals import disappeared, link_refused, staged_replaced
from .wire import FSYNC, POSIX_RENAME, Pipe, identity
from .wire import wire as _wire

CHANNELS = 3  # SFTP channels writing at once; OpenSSH allows 10 sessions a connection by default
BATCH_FILES = 1024  # files staged before the first of them is renamed
WINDOW = 64  # files whose requests are in flight together
IN_FLIGHT = 256  # requests a channel may have unanswered (8 MiB of a large file's writes)
OPEN_NEW = 0x02 | 0x08 | 0x20  # SSH_FXF_WRITE | SSH_FXF_CREAT | SSH_FXF_EXCL: never through a name that exists


class _Staged:
    """One file of a batch on its way: where it goes, the requests sent for it, what came back."""

    def __init__(self, pipe: Pipe, target: str, staged: str):
        self.pipe, self.target, self.staged = pipe, target, staged
        self.look = self.opening = -1
        self.handle: bytes | None = None
        self.sent: list[int] = []  # writes and attribute changes, whose statuses are checked
        self.fstat = self.close = -1
        self.written = 0
        self.identity: tuple = ()  # the staged file as its own handle saw it last


class SftpBatch:
    """write_many, doubt_files and delete_many for SftpStorage, a mixin for the reason given there (its
    attributes are set by SftpStorage.__init__)."""

    def doubt_files(self, paths: list[str]) -> list[str | None]:
        """The lstat of every name and of every directory on the ways to them, WINDOW names and
        their ways a round trip, the ways judged as every act judges them (a link on the way is
        refused). SFTP cannot count a file's names without listing its directory, and a name
        removed destroys no bytes its other names keep: the type and the owner decide here."""
        from paramiko.sftp import CMD_LSTAT

        remotes = [self._remote(path, look_at_name=False) for path in paths]
        answers: list[str | None] = []
        for first in range(0, len(remotes), WINDOW):
            window = remotes[first:first + WINDOW]
            pipe = Pipe(self._open())
            with self._errors("inspect", window[0]):
                numbers = [pipe.send(CMD_LSTAT, _wire(remote)) for remote in window]
                ways = self._judge_ways(pipe, sorted({posixpath.dirname(remote) for remote in window}))
                found = [pipe.attributes(number, missing_ok=True) for number in numbers]
            for path, remote, attrs in zip(paths[first:], window, found):
                there = attrs is not None and all(ways.get(directory) for directory in self._way(posixpath.dirname(remote)))
                answers.append(verdict(kind_of(attrs.st_mode or 0), self._foreign(attrs.st_uid), None, None, None, None,
                                       output=not is_reserved(path)) if there else None)
        return answers

    def delete_many(self, paths: Iterable[str]) -> list[str]:
        """An output is parked before it is removed: renamed into this attempt's staging
        directory beside it, then removed there. Through a directory swapped for a link since
        the way was checked, the rename finds no staging directory (it exists only where this
        attempt made it) and moves nothing. distributor's own names (records, the staged files
        of a dead attempt) are removed by name once the way is looked at again. Directories
        the deletes emptied are removed at the end, below the base; a staged file already gone
        still tidies its staging directory (an attempt that died after its renames left it
        empty, and recovery deletes staged names). The names go WINDOW at a time, each step of
        a window sent at once (_delete_window)."""
        removed, tidy = [], []
        work = list(paths)
        try:
            for first in range(0, len(work), WINDOW):
                window = work[first:first + WINDOW]
                for path, gone in zip(window, self._delete_window(window)):
                    if gone:
                        removed.append(path)
                        tidy.append(path)
                    elif is_reserved(path):
                        tidy.append(path)
        finally:
            self._drop_staging()
            self._counted.clear()  # every other name of a file removed has one link less now
        for head in sorted({path.rpartition("/")[0] for path in tidy}, key=lambda head: (-head.count("/"), head)):
            self._remove_empty_parents(head)
        return removed

    def _delete_window(self, paths: list[str]) -> list[bool]:
        """Whether each of `paths` was removed, in the steps a delete of one takes, each sent
        for the whole window at once: the lstat of every name (a link at it is removed as a
        name, as unlink(2) removes it, never followed: the ways to it refuse links, the last
        name is looked at here: a shared path's link, releases.build.clear); the staging
        directories the outputs are parked in; the ways, looked at again and judged before any
        act is sent; the renames into the staging directories and the removes by name; last,
        the removes of what was parked. A failure is raised once the window's other acts,
        already sent, are finished (their parked files removed: those names were to go)."""
        from paramiko.sftp import CMD_EXTENDED, CMD_LSTAT, CMD_REMOVE, CMD_RMDIR

        remotes = [self._remote(path, look_at_name=False) for path in paths]
        pipe = Pipe(self._open())
        looks = [pipe.send(CMD_LSTAT, _wire(remote)) for remote in remotes]
        found = []
        for remote, number in zip(remotes, looks):
            with self._errors("inspect", remote):
                found.append(pipe.attributes(number, missing_ok=True))
        parks = [None if attrs is None or is_reserved(path) or stat.S_ISDIR(attrs.st_mode or 0)
                 else posixpath.join(self._staging_of(path), posixpath.basename(remote))
                 for path, remote, attrs in zip(paths, remotes, found)]
        self._make_stagings([posixpath.dirname(parked) for parked in parks if parked])
        present = [remote for remote, attrs in zip(remotes, found) if attrs is not None]
        seen = self._judge_ways(pipe, [posixpath.dirname(remote) for remote in present]) if present else {}
        acts = []
        for path, remote, attrs, parked in zip(paths, remotes, found, parks):
            if attrs is None or not all(seen.get(directory) for directory in self._way(posixpath.dirname(remote))):
                acts.append(None)
            elif parked:
                acts.append(pipe.send(CMD_EXTENDED, POSIX_RENAME, _wire(remote), _wire(parked)))
            else:
                acts.append(pipe.send(CMD_RMDIR if self._own_directory(path, attrs) else CMD_REMOVE, _wire(remote)))
        done, failure = [], None
        for path, remote, attrs, parked, number in zip(paths, remotes, found, parks, acts):
            try:
                done.append(number is not None and self._acted(pipe, number, remote, parked, self._own_directory(path, attrs)))
            except DistributorError as error:
                failure = failure or error
                done.append(False)
        removes = [(remote, pipe.send(CMD_REMOVE, _wire(parked))) for remote, parked, gone in zip(remotes, parks, done)
                   if parked and gone]
        for remote, number in removes:
            try:
                with self._errors("delete", remote):
                    pipe.status(number)
            except DistributorError as error:
                failure = failure or error
        if failure is not None:
            raise failure
        return done

    @staticmethod
    def _own_directory(path: str, attrs) -> bool:
        """A directory at a reserved name (a staging directory): removed with rmdir, and kept when not empty."""
        return attrs is not None and is_reserved(path) and stat.S_ISDIR(attrs.st_mode or 0)

    def _acted(self, pipe: Pipe, number: int, remote: str, parked: str | None, directory: bool) -> bool:
        """Whether the rename into `parked` or the remove (an rmdir when `directory`) of `remote`
        sent as request `number` took it away. SFTP reports a directory that is not empty only as
        a generic failure, so a directory that stays is not removed (False), whatever the reason."""
        with self._errors("delete", remote):
            try:
                pipe.status(number)
            except FileNotFoundError:
                # Gone since it was seen, or the way changed under the rename: look again.
                if parked is None or not self._check_directories(posixpath.dirname(remote)) or self._lstat(remote) is None:
                    return False
                raise DistributorError("storage_error", "cannot delete %s: something else changed the destination "
                                       "during this run" % self._url(remote)) from None
            except OSError:
                if directory:
                    return False
                raise
        return True

    def write(self, path: str, chunks: Iterable[bytes]) -> None:
        """One file through the same staged, checked path as write_many."""
        self.write_many([(path, lambda: chunks)])

    def write_many(self, items: Iterable[tuple[str, Callable[[], Iterable[bytes]]]]) -> None:
        """Like local storage, a batch of files is all staged before any of them is renamed, so
        a failure while staging (a directory that refuses writes, a source that changed) leaves
        every old output of the batch as it was. A failure discards the batch's staged files;
        renames already made stay, as a sequential run would have left them."""
        work = list(items)
        if not work:
            return
        sessions = [self._open()] + self._extra_sessions(min(CHANNELS, len(work)) - 1)
        pipes = [Pipe(session) for session in sessions]
        try:
            for first in range(0, len(work), BATCH_FILES):
                staged: list[_Staged] = []
                try:
                    for start in range(0, min(BATCH_FILES, len(work) - first), WINDOW):
                        window = work[first + start:first + min(start + WINDOW, BATCH_FILES)]
                        self._stage_window(pipes, window, staged)
                    for start in range(0, len(staged), WINDOW):
                        self._commit_window(staged[start:start + WINDOW])
                except BaseException:
                    for pipe in pipes:
                        with suppress(Exception):
                            pipe.flush()  # the closes queued, before the names are removed
                    for item in staged:
                        self._discard(item)
                    raise
        finally:
            for session in sessions[1:]:
                with suppress(Exception):
                    session.close()
            self._drop_staging()

    def _stage_window(self, pipes: list[Pipe], window: list, staged: list[_Staged]) -> None:
        """Each file of `window` uploaded to a new file in the attempt's staging directory beside
        its target (exclusive create: never opened through a name that exists, link or not); the
        target itself looked at in the same round trip, a link there refused before any write."""
        from paramiko.sftp import CMD_LSTAT, CMD_OPEN
        from paramiko.sftp_attr import SFTPAttributes

        targets = [self._remote(path, create_parents=True, look_at_name=False) for path, _factory in window]
        self._make_stagings([self._staging_of(path) for path, _factory in window])
        items = []
        for index, ((path, factory), target) in enumerate(zip(window, targets)):
            item = _Staged(pipes[index % len(pipes)], target, posixpath.join(self._staging(path), posixpath.basename(target)))
            item.look = item.pipe.send(CMD_LSTAT, _wire(target))
            item.opening = item.pipe.send(CMD_OPEN, _wire(item.staged), OPEN_NEW, SFTPAttributes())
            staged.append(item)
            items.append((item, factory))
        for item, factory in items:
            with self._errors("inspect", item.target):
                seen = item.pipe.attributes(item.look, missing_ok=True)
            if seen is not None and stat.S_ISLNK(seen.st_mode or 0):
                raise link_refused(self._url(item.target))
            with self._errors("write", item.staged):
                item.handle = item.pipe.handle(item.opening)
            self._send_content(item, factory())
        for item, _factory in items:
            self._finish(item)

    def _send_content(self, item: _Staged, chunks: Iterable[bytes]) -> None:
        """The writes, the configured attributes (_settle), the sync (_sync), an fstat and the
        close of one staged file, sent without waiting; the chunk iterator's own exceptions pass
        unchanged."""
        from paramiko.sftp import CMD_CLOSE, CMD_FSTAT, CMD_WRITE
        from paramiko.sftp_client import int64
        from paramiko.sftp_file import SFTPFile

        size = SFTPFile.MAX_REQUEST_SIZE
        for chunk in chunks:
            for offset in range(0, len(chunk), size):
                piece = bytes(chunk[offset:offset + size])
                with self._errors("write", item.staged):
                    item.sent.append(item.pipe.send(CMD_WRITE, item.handle, int64(item.written), piece))
                    item.pipe.settle(IN_FLIGHT)
                item.written += len(piece)
        with self._errors("set permissions of", item.staged):
            item.sent.extend(self._settle(item.pipe, item.handle))
        with self._errors("sync", item.staged):
            item.sent.extend(self._sync(item.pipe, item.handle))
        with self._errors("write", item.staged):
            item.fstat = item.pipe.send(CMD_FSTAT, item.handle)
            item.close = item.pipe.send(CMD_CLOSE, item.handle)
        item.handle = None

    def _finish(self, item: _Staged) -> None:
        """Every write and attribute change of `item` acknowledged, and its identity as the
        handle saw it once written and settled."""
        with self._errors("write", item.staged):
            for number in item.sent:
                item.pipe.status(number)
            item.identity = identity(item.pipe.attributes(item.fstat))
            item.pipe.status(item.close)

    def _sync(self, pipe: Pipe, handle: bytes) -> list[int]:
        """fsync@openssh.com of the staged file through its open `handle`, after its writes and
        attributes and before its close: the rename that publishes it (and a release's switch,
        or the state record naming it, later) must never point at bytes a server crash can lose.
        Sent ahead like the writes, so it costs no round trip of its own; its status is checked
        with theirs (_finish), before any rename. Nothing when the server does not offer it: the
        file is then as durable as the server's filesystem makes it (release mode warns,
        SftpLinks.require_switch)."""
        from paramiko.sftp import CMD_EXTENDED

        return [pipe.send(CMD_EXTENDED, FSYNC, handle)] if FSYNC in self._extensions else []

    def _settle(self, pipe: Pipe, handle: bytes) -> list[int]:
        """The configured mode and numeric ownership of a staged file, set before its rename
        through its open `handle` (FSETSTAT: no name is resolved), so an output never appears
        with other permissions. An unset owner or group keeps the server's (-1 is not sent:
        SFTP sets both ids at once), asked of the handle first. The requests sent."""
        from paramiko.sftp import CMD_FSETSTAT, CMD_FSTAT
        from paramiko.sftp_attr import SFTPAttributes

        sent = []
        if self.file_mode is not None:
            attrs = SFTPAttributes()
            attrs.st_mode = self.file_mode
            sent.append(pipe.send(CMD_FSETSTAT, handle, attrs))
        if self.ids != (-1, -1):
            uid, gid = self.ids
            if -1 in self.ids:
                now = pipe.attributes(pipe.send(CMD_FSTAT, handle))
                uid, gid = (now.st_uid if uid == -1 else uid), (now.st_gid if gid == -1 else gid)
            attrs = SFTPAttributes()
            attrs.st_uid, attrs.st_gid = uid, gid
            sent.append(pipe.send(CMD_FSETSTAT, handle, attrs))
        return sent

    def _commit_window(self, items: list[_Staged]) -> None:
        """Right before the renames: the way to each staging directory looked at again (each
        directory once for the window), and each staged name still holding the file this attempt
        wrote, as its handle last saw it (type, mode, owner, size, time), of every byte sent.
        Then each is renamed over its target. Source and target share every directory but the
        staging one, which exists only where this attempt made it: a directory swapped for a link
        since the check leads the rename's source to a name that does not exist."""
        from paramiko.sftp import CMD_EXTENDED, CMD_LSTAT

        pipe = items[0].pipe
        ways = {}
        for item in items:
            for directory in self._way(posixpath.dirname(item.staged)):
                if directory not in ways:
                    ways[directory] = pipe.send(CMD_LSTAT, _wire(directory))
        looks = [item.pipe.send(CMD_LSTAT, _wire(item.staged)) for item in items]
        with self._errors("inspect", posixpath.dirname(items[0].staged)):
            seen = {directory: pipe.attributes(number, missing_ok=True) for directory, number in ways.items()}
            found = [item.pipe.attributes(number, missing_ok=True) for item, number in zip(items, looks)]
        for item, attrs in zip(items, found):
            way = self._way(posixpath.dirname(item.staged))
            if not self._judge_way(way, [seen[directory] for directory in way]):
                raise disappeared(self._url(posixpath.dirname(item.staged)))
            self._verify(item, attrs)
        renames = [item.pipe.send(CMD_EXTENDED, POSIX_RENAME, _wire(item.staged), _wire(item.target)) for item in items]
        for item, number in zip(items, renames):
            with self._errors("rename into place", item.target):
                item.pipe.status(number)

    def _verify(self, item: _Staged, attrs) -> None:
        """The staged file as it is now (`attrs`) against the one this attempt wrote. Each write
        is acknowledged, but a file shorter than what was sent is still caught here, before the
        rename publishes it."""
        if attrs is None or not stat.S_ISREG(attrs.st_mode or 0) or identity(attrs) != item.identity:
            raise staged_replaced(self._url(item.target), self._url(item.staged))
        if attrs.st_size != item.written:
            raise DistributorError(
                "storage_error", "cannot write %s: only %d of %d bytes arrived (is the disk full?)"
                % (self._url(item.staged), attrs.st_size, item.written))

    def _discard(self, item: _Staged) -> None:
        """Best effort: a staged name is reserved and derived from the token, so recovery finds
        whatever this leaves behind. A handle still open is closed first."""
        from paramiko.sftp import CMD_CLOSE

        with suppress(Exception):
            if item.handle is not None:
                item.pipe.sftp._request(CMD_CLOSE, item.handle)
        with suppress(Exception):
            item.pipe.sftp.remove(_wire(item.staged))
