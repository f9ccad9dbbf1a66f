# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Symbolic links, hard links and renames of SFTP storage: the primitives releases are built on.

OpenSSH's server offers what they need: SSH_FXP_SYMLINK and SSH_FXP_READLINK, SSH_FXP_RENAME
(which refuses to replace a name), `posix-rename@openssh.com` (rename(2), which replaces a link
in one step) and `hardlink@openssh.com` (link(2), which does not follow a link at its source).
Like every act of SFTP storage (sftp/paths.py), each looks at the whole way again right before it,
and what it made is looked at once more where a swap in between could have changed it. SFTP has
no way to sync a directory (`fsync@openssh.com` takes a file handle): a link or a rename is as
durable as the server's filesystem makes directory changes, which docs/releases.md states.
"""

from __future__ import annotations

import copy
import posixpath
import stat
from contextlib import suppress

from ...errors import DistributorError
from ...limits import LINK_TARGET_LIMIT
from ...paths import STAGING_PREFIX, join
from ...regular import kind_of
from ..base import DirectorySeen
from ..refusals import (
    CHANGED_DURING_RUN, already_there, disappeared, link_not_made, link_refused, missing, no_atomic_switch, not_a_link, not_linkable)
from .wire import FSYNC, HARDLINK, POSIX_RENAME, Pipe, identity, readlink, symlink_request
from .wire import wire as _wire

LINKS_AT_ONCE = 64  # hard links whose requests are in flight together


def unsynced_switch(server: str) -> str:
    """The warning of a release switch on a server that cannot sync a file (require_switch)."""
    return ("%s does not offer %s, so distributor cannot make a release's files durable before switching to it: "
            "after a crash of the server, the bundle path may lead to files whose bytes never reached its disk. The "
            "switch is as durable as the server's filesystem makes it; a server that offers %s (OpenSSH does) "
            "syncs every file before the switch" % (server, FSYNC, FSYNC))


class SftpLinks:
    """The release primitives of SftpStorage, a mixin for the reason given there (its attributes
    are set by SftpStorage.__init__)."""

    def at(self, base: str):
        """A view on the same connection chain and session (opened by whichever asks first),
        sharing what the run has learnt of the tree: the directories checked and judged, the
        warnings, the account names. Closing the view leaves the connection open."""
        view = copy.copy(self)
        view.base = join(self.base, base)
        view.shared_links = {}
        view._origin = self._origin or self
        return view

    def entry(self, path: str) -> tuple[str, str | None]:
        """An lstat and, for a link, a readlink, the way to it checked after both."""
        remote = self._remote(path, look_at_name=False)
        attrs = self._lstat(remote)
        target = None
        if attrs is not None and stat.S_ISLNK(attrs.st_mode or 0):
            with self._errors("read the link", remote):
                try:
                    target = readlink(self._open(), remote)
                except FileNotFoundError:
                    attrs = None
        if attrs is None or not self._check_directories(posixpath.dirname(remote)):
            return "absent", None
        mode = attrs.st_mode or 0
        if target is not None:
            if len(target) > LINK_TARGET_LIMIT:
                raise DistributorError("storage_error", "%s is a symbolic link whose target is longer than %d bytes; "
                                       "distributor makes none such" % (self._url(remote), LINK_TARGET_LIMIT))
            return "link", target.decode("utf-8", "surrogateescape")
        if stat.S_ISDIR(mode):
            return "directory", None
        kind = kind_of(mode)
        return ("other", kind) if kind else ("file", None)

    def directory_at(self, path: str) -> DirectorySeen | None:
        """An lstat, the way to it checked after it, as entry looks."""
        remote = self._remote(path, look_at_name=False)
        attrs = self._lstat(remote)
        if attrs is None or not stat.S_ISDIR(attrs.st_mode or 0) or not self._check_directories(posixpath.dirname(remote)):
            return None
        return DirectorySeen(identity(attrs), self._foreign(attrs.st_uid))

    def survey(self) -> tuple[DirectorySeen | None, list[tuple[str, str]]]:
        """The base's lstat, then the walk of list_files (SftpPaths._walk), whose entries carry
        the attributes judged. SFTP names paths, not directories: the walk is of whatever is at
        the base's name as it goes, so the base is looked at again after it, and a walk whose
        base changed meanwhile is refused (storage_error); what a rename then moves is told by
        its attributes only (docs/releases.md, converting)."""
        base = self.directory_at("")
        strangers = []
        for _remote, prefix, entries in self._walk() if base is not None else ():
            for entry in entries or ():
                mode = entry.st_mode or 0
                kind = None if stat.S_ISDIR(mode) else kind_of(mode)
                why = "is " + kind if kind else self._foreign(entry.st_uid)
                if why:
                    strangers.append((prefix + entry.filename, why))
        if base is not None and self.directory_at("") != base:
            raise DistributorError("storage_error", "%s changed while distributor looked at what it holds; %s"
                                   % (self.describe(), CHANGED_DURING_RUN))
        return base, strangers

    def require_switch(self) -> None:
        """The extensions the server announced when the session opened: without posix-rename no
        switch is atomic (refused); without fsync@openssh.com no file is synced before it
        (sftp/batch.py), which is told, not refused: the switch is then as durable as the server's
        filesystem makes the files' bytes, as a publish in place is."""
        self._open()
        if POSIX_RENAME not in self._extensions:
            raise no_atomic_switch(self.endpoints[-1].name, POSIX_RENAME)
        notice = unsynced_switch(self.endpoints[-1].name)
        if FSYNC not in self._extensions and notice not in self._notices:
            self._notices.append(notice)

    def prepare_switch(self, path: str, target: str, temporary: str) -> None:
        """SSH_FXP_SYMLINK at `temporary` once `path` is seen absent or a link, read back (a server
        that takes the draft's order of its arguments makes something else, which is refused)."""
        from paramiko.sftp import CMD_SYMLINK

        self.require_switch()
        link, made = self._switch_names(path, temporary)
        seen = self._lstat(link)
        if seen is not None and not stat.S_ISLNK(seen.st_mode or 0):
            raise not_a_link(self._url(link), kind_of(seen.st_mode or 0) or "a file")
        self._way_there(made)
        try:
            with self._errors("create link", made):
                self._open()._request(CMD_SYMLINK, *symlink_request(target, made))
        except DistributorError:
            if self._lstat(made) is not None:
                raise already_there("create link", self._url(made)) from None
            raise
        try:
            self._holds(made, target)
        except BaseException:
            with suppress(Exception):
                self._open().remove(_wire(made))
            raise

    def finish_switch(self, path: str, temporary: str) -> None:
        """posix-rename of the link at `temporary` over `path`, once the way to both is looked at."""
        from paramiko.sftp import CMD_EXTENDED

        link, made = self._switch_names(path, temporary)
        try:
            self._way_there(made)
            self._way_there(link)
            with self._errors("switch", link):
                self._open()._request(CMD_EXTENDED, POSIX_RENAME, _wire(made), _wire(link))
        except BaseException:
            with suppress(Exception):
                self._open().remove(_wire(made))
            raise
        self._counted.pop(posixpath.dirname(link), None)

    def _switch_names(self, path: str, temporary: str) -> tuple[str, str]:
        try:
            return (self._remote(path, create_parents=True, look_at_name=False),
                    self._remote(temporary, create_parents=True, look_at_name=False))
        finally:
            self._drop_staging()

    def _holds(self, made: str, target: str) -> None:
        """The link just made at `made` holds `target`."""
        attrs = self._lstat(made)
        held = None
        if attrs is not None and stat.S_ISLNK(attrs.st_mode or 0):
            with self._errors("read the link", made):
                held = readlink(self._open(), made)
        if held != _wire(target):
            raise DistributorError(
                "storage_error", "cannot switch releases on %s: asked for a link at %s holding %r, the server made %s. It "
                "may read SSH_FXP_SYMLINK's arguments in the protocol draft's order rather than OpenSSH's; releases "
                "need an OpenSSH-compatible server" % (self.endpoints[-1].name, self._url(made), target,
                                                       "none" if held is None else "one holding %r" % held))

    def _way_there(self, remote: str) -> None:
        """Every directory down to `remote`'s looked at now; gone is a change by someone else."""
        if not self._check_directories(posixpath.dirname(remote)):
            raise disappeared(self._url(posixpath.dirname(remote)))

    def make_directory(self, path: str) -> None:
        """Made as the parents of a file below it are (SftpPaths._remote: each mkdir looked at
        again after it, a link on the way refused); as durable as the server makes directories."""
        self._remote(join(path, STAGING_PREFIX), create_parents=True, look_at_name=False)

    def rename(self, source: str, target: str) -> None:
        """SSH_FXP_RENAME, which OpenSSH's server never lets replace a name, once `target` is seen
        absent; the directories remembered below `source` are forgotten (they moved)."""
        remote = self._remote(source, look_at_name=False)
        try:
            moved = self._remote(target, create_parents=True, look_at_name=False)
        finally:
            self._drop_staging()
        action = "move %s to" % self._url(remote)
        if self._lstat(moved) is not None:
            raise already_there(action, self._url(moved))
        if self._lstat(remote) is None:
            raise missing("move", self._url(remote))
        self._way_there(remote)
        self._way_there(moved)
        with self._errors(action, moved):
            self._open().rename(_wire(remote), _wire(moved))
        inside = remote + "/"
        self._dirs.difference_update([d for d in self._dirs if d == remote or d.startswith(inside)])
        for directory in [d for d in self._counted if d == remote or d.startswith(inside)]:
            del self._counted[directory]

    def link_many(self, pairs: list[tuple[str, str]]) -> list[tuple[str, str]]:
        """hardlink@openssh.com, LINKS_AT_ONCE pairs a round trip; every pair back when the
        server does not offer it."""
        pairs = list(pairs)
        if not pairs:
            return []
        self._open()
        if HARDLINK not in self._extensions:
            return pairs
        try:
            for first in range(0, len(pairs), LINKS_AT_ONCE):
                self._link_window(pairs[first:first + LINKS_AT_ONCE])
        finally:
            self._drop_staging()
            self._counted.clear()  # every name of a file linked has one more link now, wherever it is listed
        return []

    def _link_window(self, window: list[tuple[str, str]]) -> None:
        """Both names of each pair looked at together (a regular file, a free name), the ways to
        them checked, the links sent together, then each new name looked at: it must be the
        file linked (its attributes the source's), else it is removed and the run stops. The
        targets' directories are made as writes make them (sftp/paths.py)."""
        from paramiko.sftp import CMD_EXTENDED, CMD_LSTAT

        names = [(self._remote(source, look_at_name=False), self._remote(target, create_parents=True, look_at_name=False))
                 for source, target in window]
        pipe = Pipe(self._open())
        looks = [(pipe.send(CMD_LSTAT, _wire(source)), pipe.send(CMD_LSTAT, _wire(target))) for source, target in names]
        sources = []
        for (source, target), (source_look, target_look) in zip(names, looks):
            with self._errors("inspect", source):
                attrs = pipe.attributes(source_look, missing_ok=True)
                taken = pipe.attributes(target_look, missing_ok=True)
            if attrs is None:
                raise missing("link", self._url(source))
            if stat.S_ISLNK(attrs.st_mode or 0):
                raise link_refused(self._url(source))
            if kind_of(attrs.st_mode or 0):
                raise not_linkable(self._url(source), kind_of(attrs.st_mode or 0))
            if taken is not None:
                raise already_there("link %s to" % self._url(source), self._url(target))
            sources.append(attrs)
        directories = sorted({posixpath.dirname(name) for pair in names for name in pair})
        seen = self._judge_ways(pipe, directories)
        gone = next((d for d in directories if self._way(d) and seen.get(d) is None), None)
        if gone is not None:
            raise disappeared(self._url(gone))
        links = [pipe.send(CMD_EXTENDED, HARDLINK, _wire(source), _wire(target)) for source, target in names]
        for (source, target), number in zip(names, links):
            with self._errors("link %s to" % self._url(source), target):
                pipe.status(number)
        looks = [pipe.send(CMD_LSTAT, _wire(target)) for _source, target in names]
        for (source, target), attrs, number in zip(names, sources, looks):
            with self._errors("inspect", target):
                made = pipe.attributes(number, missing_ok=True)
            if made is None or identity(made) != identity(attrs):
                with suppress(Exception):
                    self._open().remove(_wire(target))
                raise link_not_made(self._url(target), self._url(source))
