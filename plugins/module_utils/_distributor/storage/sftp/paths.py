# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The way from an SFTP root to a path: every directory looked at, none followed, none trusted.

SFTP is a path-based protocol: the server resolves each name again on every request, following
symbolic links on the way, and offers no descriptor to act relative to. So a directory seen once
is remembered only to find the way; right before each rename, delete and attribute change the
whole way is looked at again (_check_directories). Directories below the bundle path are made,
and files staged and parked, in a private staging directory of the attempt, beside their
targets: a rename through a directory swapped for a link finds nothing to move. Attributes are
set on open handles (FSETSTAT) or with lsetstat@openssh.com, never with a SETSTAT that follows a
link. What is left open, and which directories leave it open, is in sftp/private.py.
"""

from __future__ import annotations

import posixpath
import stat
from contextlib import suppress
from typing import Iterator

from ...errors import DistributorError
from ...limits import DEPTH_LIMIT
from ...paths import join
from ..base import staging_dir
from ..refusals import disappeared, link_refused, not_a_directory, not_private, not_writable, staging_taken, too_deep
from ..private import writable_by_others
from .private import foreign_owner, shared_refusal, shared_warning, unwritable
from .wire import LSETSTAT, USERS_GROUPS_BY_ID, Pipe, listdir_attr, lsetstat, lstat_many, user_names
from .wire import wire as _wire

DEFAULT_DIRECTORY_MODE = 0o777  # asked of mkdir without a directory_mode: the server's umask applies, as for mkdir(1)


class SftpPaths:
    """The path half of SftpStorage, a mixin for the reason given there (its attributes are set by
    SftpStorage.__init__)."""

    # -- paths ----------------------------------------------------------------------------

    def _remote(self, path: str, create_parents: bool = False, look_at_name: bool = True) -> str:
        """The remote path of `path`, refusing any symlink between the root and it (the last
        name not looked at unless `look_at_name`: write_many asks with its open, see Pipe).

        Directories already checked on this connection are remembered: a publish touches the
        same few directories for every file, and each check is a round trip. Where a path is
        acted on, that memory is not trusted (a directory may since have been swapped for a
        link): every rename, delete and attribute change is preceded by _check_directories,
        which looks at the whole way again, and files are staged and parked only in a staging
        directory beside their target (see base.staging_dir). Each directory is judged (see
        _judge) the first time it is seen, before anything is done in it.
        """
        if "" not in self._judged:
            self._look_at_root()
        current = self.root
        if create_parents and current not in self._dirs:
            self._make_root()
        parts = [part for part in join(self.base, path).split("/") if part]
        above_base = len([part for part in self.base.split("/") if part])
        for index, part in enumerate(parts):
            current = posixpath.join(current, part)
            if current in self._dirs or (not look_at_name and index == len(parts) - 1):
                continue
            attrs = self._lstat(current)
            if attrs is None:
                if create_parents and index < len(parts) - 1:
                    self._create(current, "/".join(parts[above_base:index + 1]) if index >= above_base else None)
                    continue
                return posixpath.join(current, *parts[index + 1:])
            if stat.S_ISLNK(attrs.st_mode):
                raise link_refused(self._url(current))
            if stat.S_ISDIR(attrs.st_mode):
                self._judge(current, attrs)
                self._dirs.add(current)
            elif index < len(parts) - 1:
                raise not_a_directory(self._url(current), self.describe(path))
        return current

    def _walk(self) -> Iterator[tuple[str, str, list | None]]:
        """(remote, its path below the base with a slash, or "" for the base; its entries, None
        when it is not there) of every directory below the base, the base first. A level at a
        time (each level's directories read together, see sftp.wire.listdir_attr), so a planted
        tree of any depth is refused past DEPTH_LIMIT levels (storage_error) instead of exhausting
        Python's recursion. A directory that cannot be listed fails the walk (storage_error):
        taken as empty, its files would be overwritten unseen. Each directory is judged (see
        _judge) before it is listed. Entries carry lstat attributes: a link is seen, never followed."""
        prefixes = {self._remote(""): ""}
        while prefixes:
            level, prefixes = prefixes, {}
            with self._errors("list", next(iter(level), "")):
                listed = list(listdir_attr(self._open(), list(level)))
            for remote, entries in listed:
                if isinstance(entries, Exception):
                    with self._errors("list", remote):
                        raise entries
                prefix = level[remote]
                yield remote, prefix, entries
                for entry in entries or ():
                    if not stat.S_ISDIR(entry.st_mode or 0):
                        continue
                    child = posixpath.join(remote, entry.filename)
                    if prefix.count("/") + 1 > DEPTH_LIMIT:
                        raise too_deep(self._url(child))
                    self._judge(child, entry)
                    prefixes[child] = prefix + entry.filename + "/"

    def _check_directories(self, remote_dir: str) -> bool:
        """Whether every directory from below the root down to `remote_dir` exists, looked at
        right now (nothing remembered; all of them in one round trip, see lstat_many);
        storage_error when one is a symbolic link or not a directory."""
        way = self._way(remote_dir)
        if not way:
            return True
        with self._errors("inspect", remote_dir):
            seen = lstat_many(self._open(), way)
        return self._judge_way(way, seen)

    def _way(self, remote_dir: str) -> list[str]:
        """The directories from below the root down to `remote_dir`, each to be looked at."""
        way: list[str] = []
        for part in [p for p in remote_dir[len(self.root):].split("/") if p]:
            way.append(posixpath.join(way[-1] if way else self.root, part))
        return way

    def _judge_way(self, way: list[str], seen: list) -> bool:
        """_check_directories' verdict on the attributes `seen` of the directories of `way`."""
        for current, attrs in zip(way, seen):
            if attrs is None:
                return False
            if stat.S_ISLNK(attrs.st_mode):
                raise link_refused(self._url(current))
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
                    raise not_a_directory(self._url(current), "storage.root " + self._url(self.root))
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

    def check_writable(self, directories) -> None:
        """Judged from each directory's attributes (or its nearest existing parent's, where the
        run would make it) and its owner's name on the server (sftp.private.unwritable): SFTP has
        no access(2), and check mode must not probe by writing."""
        for directory in sorted(set(directories)):
            remote = self._remote(directory)
            attrs = self._lstat(remote)
            while attrs is None and remote not in ("/", ""):
                remote = posixpath.dirname(remote)
                attrs = self._lstat(remote)
            if attrs is None or attrs.st_uid is None or not stat.S_ISDIR(attrs.st_mode or 0):
                continue
            why = unwritable(attrs.st_mode, self._name_of(attrs.st_uid), self.username)
            if why:
                raise not_writable(self._url(remote), why)

    # -- directories others can write -------------------------------------------------------

    @property
    def warnings(self) -> list[str]:
        """The directories another account can write, found while walking: told, not refused, by
        default; then what release mode found the server lacks (SftpLinks.require_switch)."""
        return ([shared_warning(self._shared, self.username)] if self._shared else []) + self._notices

    def _look_at_root(self) -> None:
        """Before the first read or write: the root (whatever its path leads to: the operator
        chose it, links included) and the directories this run's settings would create. Marked
        done only once all passed: a refusal is given again to every later request."""
        with self._errors("inspect", self.root):
            try:
                attrs = self._open().stat(_wire(self.root))
            except FileNotFoundError:
                attrs = None
        if attrs is not None and stat.S_ISDIR(attrs.st_mode or 0):
            self._judge(self.root, attrs)
        created = "the directories distributor creates"
        if self.directory_mode is not None:
            self._found_shared("%s (storage.directory_mode)" % created, writable_by_others(self.directory_mode))
        if self.ids[0] != -1:
            self._found_shared("%s (storage.owner)" % created,
                               foreign_owner(self.ids[0], self._name_of(self.ids[0]), self.username))
        self._judged.add("")

    def _judge(self, remote: str, attrs) -> None:
        """A directory distributor walks, seen for the first time this run: noted (a warning)
        when another account than the SFTP user can write in it, refused with
        require_private_directories (again each time it is met). Writable by its group or by
        all, or owned by another uid (an owner can always make it writable), see sftp/private.py.
        Each directory is named once."""
        if remote in self._judged:
            return
        why = writable_by_others(attrs.st_mode or 0)
        if why is None and attrs.st_uid is not None:
            why = foreign_owner(attrs.st_uid, self._name_of(attrs.st_uid), self.username)
        self._found_shared(self._url(remote), why)
        self._judged.add(remote)

    def _found_shared(self, where: str, why: str | None) -> None:
        if why is None:
            return
        if self.require_private_directories:
            raise DistributorError("storage_error", self._chain.redact(shared_refusal(where, why, self.username)))
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
        given, else of the base or root."""
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
                raise disappeared(self._url(remote))
            self._settle_directory(remote)
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
            self._settle_directory(made)
            self._check_directories(posixpath.dirname(made))
            with self._errors("create directory", remote):
                self._open().posix_rename(_wire(made), _wire(remote))
        except BaseException:
            with suppress(Exception):
                self._open().rmdir(_wire(made))
            raise
        self._dirs.add(remote)

    def _settle_directory(self, remote: str) -> None:
        """The configured mode (when the server's umask took bits of it) and owner of a
        directory distributor has just made, set with lsetstat@openssh.com, which does not
        follow a link at the name: SETSTAT would. The way is looked at again right before. A
        server without lsetstat gets no attributes set on directories: storage_error."""
        if self.directory_mode is None and self.ids == (-1, -1):
            return
        attrs = self._lstat(remote)
        if attrs is None:
            raise disappeared(self._url(remote))
        mode = self.directory_mode if self.directory_mode not in (None, stat.S_IMODE(attrs.st_mode)) else None
        uid, gid = self.ids
        ids = (attrs.st_uid if uid == -1 else uid, attrs.st_gid if gid == -1 else gid)
        ids = None if ids == (attrs.st_uid, attrs.st_gid) else ids
        if mode is None and ids is None:
            return
        if LSETSTAT not in self._extensions:
            raise DistributorError(
                "storage_error", "cannot set the mode or owner of %s: the server does not offer %s, and distributor "
                "never sets attributes with SETSTAT, which follows a symbolic link planted at the name; remove "
                "storage.directory_mode, owner and group, or use an OpenSSH server (8.0 or later)" % (self._url(remote), LSETSTAT))
        if not self._check_directories(remote):
            raise disappeared(self._url(remote))
        with self._errors("set permissions of", remote):
            lsetstat(self._open(), remote, mode, ids)

    def _staging(self, path: str) -> str:
        """This attempt's staging directory beside `path` (see base.staging_dir), made on first
        use (write_many makes a window's at once, see _make_stagings)."""
        remote = self._staging_of(path)
        if remote not in self._staging_dirs:
            self._make_stagings([remote])
        return remote

    def _staging_of(self, path: str) -> str:
        return posixpath.join(self.root, join(self.base, staging_dir(path, self.token)))

    def _make_stagings(self, remotes: list[str]) -> None:
        """mkdir neither follows nor reuses what is at the name; the way to each is checked right
        before and right after, and what is there must be a private directory of the SFTP
        account: one that someone who read the attempt's token from the journal made first, while
        a swapped link led the mkdir elsewhere, is refused. Each step is taken for all of
        `remotes` in one round trip (sftp.wire.Pipe)."""
        from paramiko.sftp import CMD_LSTAT, CMD_MKDIR
        from paramiko.sftp_attr import SFTPAttributes

        remotes = sorted(set(remotes) - self._staging_dirs)
        if not remotes:
            return
        pipe = Pipe(self._open())
        self._judge_ways(pipe, [posixpath.dirname(remote) for remote in remotes])
        private = SFTPAttributes()
        private.st_mode = 0o700
        made = [(remote, pipe.send(CMD_MKDIR, _wire(remote), private)) for remote in remotes]
        for remote, number in made:
            with self._errors("create staging directory", remote):
                try:
                    pipe.status(number)
                except OSError:
                    if pipe.attributes(pipe.send(CMD_LSTAT, _wire(remote)), missing_ok=True) is not None:
                        raise staging_taken(self._url(remote)) from None
                    raise
        try:
            seen = self._judge_ways(pipe, remotes)
            gone = [remote for remote in remotes if seen.get(remote) is None]
            if gone:
                raise disappeared(self._url(gone[0]))
        except DistributorError:
            # Made through a link swapped in: removing it by its name, which is this attempt's
            # alone, takes it back out from wherever the name now leads, when that is there.
            self._remove_stagings(remotes)
            raise
        for remote in remotes:
            attrs = seen[remote]
            if stat.S_IMODE(attrs.st_mode or 0) & 0o077 or (
                    attrs.st_uid != 0 and self._name_of(attrs.st_uid) not in (None, self.username)):
                raise not_private(self._url(remote))
            self._staging_dirs.add(remote)

    def _judge_ways(self, pipe: Pipe, remote_dirs: list[str]) -> dict:
        """_check_directories for several directories at once, each directory on their ways
        looked at once: the attributes seen, by path (None where nothing was). A way found
        missing is left to the act that follows, as _check_directories leaves it."""
        from paramiko.sftp import CMD_LSTAT

        ways = [self._way(remote_dir) for remote_dir in remote_dirs]
        asked = {directory: None for way in ways for directory in way}
        with self._errors("inspect", remote_dirs[0]):
            numbers = {directory: pipe.send(CMD_LSTAT, _wire(directory)) for directory in asked}
            seen = {directory: pipe.attributes(number, missing_ok=True) for directory, number in numbers.items()}
        for way in ways:
            self._judge_way(way, [seen[directory] for directory in way])
        return seen

    def _drop_staging(self) -> None:
        """Remove the staging directories, empty once their files are renamed or removed."""
        self._remove_stagings(self._staging_dirs)
        self._staging_dirs.clear()

    def _remove_stagings(self, remotes) -> None:
        """The rmdirs sent together, their failures ignored: what is left is reserved, and recovered."""
        from paramiko.sftp import CMD_RMDIR

        with suppress(Exception):
            pipe = Pipe(self._open())
            for number in [pipe.send(CMD_RMDIR, _wire(remote)) for remote in remotes]:
                with suppress(Exception):
                    pipe.status(number)
