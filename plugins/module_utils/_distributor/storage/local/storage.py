# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A directory on the machine that runs the module, reached through directory descriptors only
(see descriptors.py): every act names one component under a directory distributor holds open."""

from __future__ import annotations

import errno
import os
import stat
from contextlib import contextmanager
from functools import partial
from itertools import groupby
from typing import Iterable, Iterator

from ...records.attributes import ownership, parse_mode, trusted_owners, trusted_uids
from ...errors import DistributorError
from ...limits import LOCK_EXPIRY_SECONDS, LOCK_LIMIT
from ...paths import LOCK_NAME, RECORD_NAMES, all_clean, is_reserved, join, path_problem
from ...regular import ForeignLinks, kind_of
from ..base import Storage, hash_stream
from ..judging import not_a_record, owner_doubt, trusted_accounts, untrusted_record, verdict
from .descriptors import NotRegular, entry_mode, list_tree, make_directory, open_directory, open_regular_at, read_at_most, refuse_unwritable, rmdir_at
from ..lease import Lease
from .links import LocalLinks
from .lock import flocked
from .writes import LocalWrites
from ..private import Exposure, read_sysctl
from ..refusals import os_errors, relative_root, root_refused


class LocalStorage(LocalLinks, LocalWrites, Storage):
    """Directories opened during one operation are kept open for the rest of it (`_dirs`, keyed
    by their path under the root), so the files of one directory cost no further walks; they are
    closed when the operation ends, and the next one walks from the root again.

    Its parts are mixins, a file each: the links and renames of releases (local.links.LocalLinks)
    and the staged, synced and renamed writes (local.writes.LocalWrites). They stay mixins rather
    than helpers it holds because every act of each walks, holds and lets go of this storage's
    descriptors (`_directory`, `_dirs`, `_staging`, `_release`), read and updated on every call,
    and a view (`at`) is this class again. Every attribute they use is set by __init__ here."""

    def __init__(self, root: str, base: str, token: str, storage: dict | None = None, sysctl=read_sysctl):
        super().__init__(token)
        storage = storage or {}
        self._settings = (storage, sysctl)  # what a view (at) is opened with
        self.file_mode = parse_mode(storage.get("file_mode"), "file_mode")
        self.directory_mode = parse_mode(storage.get("directory_mode"), "directory_mode")
        self.ids = ownership(storage)
        self._trusted = (trusted_owners(storage), trusted_uids(storage))
        if not os.path.isabs(root):
            raise relative_root(root)
        if os.path.realpath(root) == "/":
            raise root_refused()
        # `sysctl` reads a kernel setting; tests pass their own (see private.py).
        self._exposure = Exposure(bool(storage.get("require_private_directories")), self.directory_mode, self.ids, sysctl)
        self.root = root
        self.base = base
        self._root_fd: int | None = None
        self._dirs: dict[str, int] = {}
        self._made: set[str] = set()  # directories this operation created: nothing was in them when it looked
        self._views: list[LocalStorage] = []  # made by at(): each holds the root open until this storage closes
        self._staging: dict[str, tuple[int, int, str]] = {}  # target directory -> (staging fd, its parent's, its location + "/")
        self._under = join(base, "x")[:-1]  # "<base>/" (or ""): a file's path under the root is this and its path
        self._shown = os.path.join(root, self._under + "x")[:-1]  # "<root>/<base>/": a file's location is this and its path

    def describe(self, path: str = "") -> str:
        """The location under the root as the operator knows it: messages name it."""
        path = path.strip("/")
        return self._shown + path if path else os.path.join(self.root, join(self.base))

    def _where(self, rel: str) -> str:
        return os.path.join(self.root, rel) if rel else self.root

    # -- directories ----------------------------------------------------------------------

    def _root(self, create: bool) -> int | None:
        """The root, opened once. It may be a link (the operator's own choice) but must be a
        directory; a missing one is created on the first write, with its parents."""
        if self._root_fd is None:
            if create:
                with os_errors("create the root directory", self.root):
                    try:
                        os.makedirs(self.root)
                    except FileExistsError:
                        pass  # a directory is opened below; anything else is refused there
            with os_errors("open", self.root):
                try:
                    self._root_fd = os.open(self.root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
                except FileNotFoundError:
                    return None
                except NotADirectoryError:
                    raise DistributorError("storage_error", "storage.root %s is not a directory" % self.root) from None
        self._exposure.judge(self.root, self._root_fd)
        return self._root_fd

    def _directory(self, rel: str, create: bool, needed_by: str) -> int | None:
        """The directory `rel` (under the root) opened by walking from the nearest one already
        open, one component at a time and never through a link; None when it does not exist and
        `create` is false. Directories this walk creates get the configured mode and owner."""
        if rel in self._dirs:
            return self._dirs[rel]
        parts = rel.split("/") if rel else []
        known = len(parts)
        while known and "/".join(parts[:known]) not in self._dirs:
            known -= 1
        fd = self._dirs["/".join(parts[:known])] if known else self._root(create)
        for index in range(known, len(parts)):
            if fd is None:
                return None
            key = "/".join(parts[:index + 1])
            child = open_directory(fd, parts[index], self._where(key), needed_by)
            if child is None and create:
                child, created = make_directory(fd, parts[index], self._where(key), needed_by)
                if created:
                    with os_errors("set the mode of", self._where(key)):
                        self._settle(child, self.directory_mode)
                    self._made.add(key)
            if child is not None:
                self._dirs[key] = child
                self._exposure.judge(self._where(key), child)
            fd = child
        return fd

    def _held(self, rel: str) -> int:
        """The descriptor of a directory this operation already opened (the root for '')."""
        return self._dirs[rel] if rel else self._root_fd

    def _release(self) -> None:
        for fd in self._dirs.values():
            os.close(fd)
        self._dirs.clear()
        self._made.clear()

    def _forget(self, rel: str) -> None:
        self._made.discard(rel)
        fd = self._dirs.pop(rel, None)
        if fd is not None:
            os.close(fd)

    def _settle(self, fd: int, mode: int | None) -> None:
        """The configured mode and ownership, set through a descriptor of what distributor
        created: a staged file before its rename (an output never appears with other
        permissions), and a directory it made."""
        if mode is not None:
            os.fchmod(fd, mode)
        if self.ids != (-1, -1):
            os.fchown(fd, *self.ids)

    def _settle_output(self, fd: int) -> None:
        """An output's settings: the configured mode, else 0644 whatever the umask."""
        self._settle(fd, 0o644 if self.file_mode is None else self.file_mode)

    def _split(self, path: str) -> tuple[str, str]:
        """(directory under the root, file name) of a path under the bundle path. ConfinedStorage
        refuses unclean paths first; this backend refuses them too, since a `..` handed to a
        descriptor-relative call would climb out of the directory it is relative to."""
        problem = path_problem(path) if path else None
        if problem:
            raise DistributorError("storage_error", "refused to touch %r under %s: it %s" % (path, self.describe(), problem))
        path = path.strip("/")
        head, _slash, name = (self._under + path if path else join(self.base)).rpartition("/")
        return head, name

    # -- reading --------------------------------------------------------------------------

    @contextmanager
    def _reading(self, path: str) -> Iterator[int | None]:
        """The regular file at `path` opened through the walked descriptors (None when absent);
        anything else there (a link, a FIFO) is refused unread, never followed, and so is a file
        with more names than distributor made (judged on the open descriptor: _names_made)."""
        head, name = self._split(path)
        try:
            parent = self._directory(head, False, self.describe(path))
            ours = partial(self._names_made, path)
            fd = None if parent is None else open_regular_at(parent, name, self.describe(path), ours=ours)
            try:
                yield fd
            finally:
                if fd is not None:
                    os.close(fd)
        except NotRegular as exc:
            raise not_a_record(exc.where, exc.kind) from None
        finally:
            self._release()

    def read_bytes(self, path: str, limit: int) -> bytes | None:
        """A record or an old output, read through the walked descriptors, never through a link.
        A record's owner is judged on the descriptor read (untrusted_record)."""
        with self._reading(path) as fd:
            if fd is None:
                return None
            with os_errors("read", self.describe(path)):
                doubt = self._foreign(os.fstat(fd).st_uid) if path in RECORD_NAMES else None
                if doubt:
                    raise untrusted_record(self.describe(path), doubt)
                return read_at_most(fd, limit)

    def measure(self, path: str, size: int, digest: bool, seen: tuple | None = None) -> tuple[int, str | None] | None:
        """Opened like read_bytes: a link put in an output's place is refused as a read is. The
        size is the open file's own, so the file hashed is the file measured; with `seen`
        (st_dev, st_ino: doubt's), only that file is hashed, not another put at the name since."""
        with self._reading(path) as fd:
            if fd is None:
                return None
            with os_errors("read", self.describe(path)):
                info = os.fstat(fd)
                if not digest or info.st_size != size or seen not in (None, (info.st_dev, info.st_ino)):
                    return info.st_size, None
                return size, hash_stream(lambda count: os.read(fd, count), size + 1)

    def doubt(self, path: str, size: int | None = None, sha256: str | None = None, own_build: bool = False) -> str | None:
        """Looked at through the walked descriptors, never through a link; the file hashed is
        the one looked at (measure checks its identity on the descriptor it reads). A file's
        other names count by identity (_names_made), so `own_build` changes nothing here."""
        head, name = self._split(path)
        try:
            parent = self._directory(head, False, self.describe(path))
            info = None if parent is None else self._looked_at(parent, name, path)
            if info is None:
                return "is gone"
            return verdict(kind_of(info.st_mode), self._foreign(info.st_uid), info.st_nlink, size, sha256,
                           lambda: self.measure(path, size, True, (info.st_dev, info.st_ino)),
                           self._names_made(path, info))
        finally:
            self._release()

    def doubt_files(self, paths: list[str]) -> list[str | None]:
        """One fstatat a file through held descriptors, each directory walked once for the run
        of its files, as delete_many walks them; the names made are counted as doubt counts them."""
        if not all_clean(paths):
            for path in paths:
                self._split(path)
        answers: list[str | None] = []
        try:
            for head, run in groupby(paths, lambda path: (self._under + path).rpartition("/")[0]):
                run = list(run)
                parent = self._directory(head, False, self.describe(run[0]))
                for path in run:
                    info = None if parent is None else self._looked_at(parent, path.rpartition("/")[2], path)
                    answers.append(None if info is None else verdict(
                        kind_of(info.st_mode), self._foreign(info.st_uid), info.st_nlink, None, None, None,
                        self._names_made(path, info), not is_reserved(path)))
            return answers
        finally:
            self._release()

    def _looked_at(self, parent: int, name: str, path: str) -> os.stat_result | None:
        """The lstat of `name` (of `path`) in its directory `parent`; None when nothing is there."""
        try:
            return os.stat(name, dir_fd=parent, follow_symlinks=False)
        except FileNotFoundError:
            return None
        except OSError as exc:
            with os_errors("inspect", self.describe(path)):
                raise exc

    def _foreign(self, uid: int) -> str | None:
        """None for the accounts whose files distributor acts on here: its own, storage.owner
        and storage.trusted_owners."""
        mine = os.geteuid()
        if uid in (mine, self.ids[0]) or uid in self._trusted[1]:
            return None
        return owner_doubt(uid, trusted_accounts("uid %d" % mine, self.ids[0], self._trusted[0]))

    def exists(self, path: str) -> bool:
        """Walked from the root descriptor like every other look: a link on the way is refused, not followed.
        The storage contract tests observe every backend through it."""
        head, name = self._split(path)
        try:
            parent = self._directory(head, False, self.describe(path))
            return parent is not None and self._looked_at(parent, name, path) is not None
        finally:
            self._release()

    def list_files(self) -> list[str]:
        """Every entry below the bundle path that is not a directory (see descriptors.list_tree)."""
        try:
            top = self._directory(self.base, False, self.describe())
            return [] if top is None else sorted(list_tree(top, self.describe))
        finally:
            self._release()

    def resettle(self, path: str, sha256: str, size: int) -> bool:
        """On the descriptor whose content was just hashed: a link put at the name is refused by
        the open, and so is a file with names distributor did not make (ForeignLinks); the
        settings are synced like a written file's."""
        try:
            with self._reading(path) as fd:
                if fd is None:
                    return False
                with os_errors("change the settings of", self.describe(path)):
                    if os.fstat(fd).st_size != size or hash_stream(lambda count: os.read(fd, count), size + 1) != sha256:
                        return False
                    self._settle_output(fd)
                    os.fsync(fd)
        except ForeignLinks:
            return False
        return True

    def check_writable(self, directories: Iterable[str]) -> None:
        """The kernel's own answer for this account (faccessat with the effective ids), on each
        directory or the nearest existing one the run would make it in: a read-only mount is
        refused to root too. Walked like every other look, never through a link."""
        try:
            for directory in sorted(set(directories)):
                fd, found = self._nearest(join(self.base, directory))
                if fd is not None:
                    refuse_unwritable(fd, self._where(found))
                    continue
                where = _existing_parent(self.root)
                with os_errors("inspect", where):
                    fd = os.open(where, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
                try:
                    refuse_unwritable(fd, where)
                finally:
                    os.close(fd)
        finally:
            self._release()

    def _nearest(self, rel: str) -> tuple[int | None, str]:
        """The directory `rel` under the root or its nearest existing parent, opened (None when
        even the root is missing)."""
        parts = rel.split("/") if rel else []
        for end in range(len(parts), 0, -1):
            fd = self._directory("/".join(parts[:end]), False, self._where(rel))
            if fd is not None:
                return fd, "/".join(parts[:end])
        return self._root(False), ""

    # -- deleting -------------------------------------------------------------------------

    def delete(self, path: str) -> bool:
        """One file, removed like a batch of one (see delete_many)."""
        return bool(self.delete_many([path]))

    def delete_many(self, paths: Iterable[str]) -> list[str]:
        """The walk's descriptors serve every path of the batch and are closed at its end; each
        directory is looked up once for a run of paths in it, and its files unlinked by one loop
        with no call of ours per file (removing a release generation deletes 10,000). The
        directories the deletes emptied are removed at the end, as over SFTP, each directory
        once and not once per file; a delete killed before that leaves empty directories, as a
        kill between an unlink and its rmdir always could (releases.build._tidy, find_leftovers).
        A staged file already gone still tidies its staging directory: an attempt that died
        after its renames left that directory empty, and recovery deletes staged names. A
        directory at a reserved path (an empty staging directory the listing showed) is removed
        with rmdir, which leaves one that is not empty."""
        paths = list(paths)
        if not all_clean(paths):
            for path in paths:
                self._split(path)
        removed: list[str] = []
        tidy: set[str] = set()
        try:
            for head, run in groupby(paths, lambda path: (self._under + path).rpartition("/")[0]):
                run = list(run)
                parent = self._directory(head, False, self.describe(run[0]))
                found = [] if parent is None else self._unlink_all(parent, run)
                removed.extend(found)
                if found or any(map(is_reserved, run)):
                    tidy.add(head[len(self._under):])
            for head in sorted(tidy, key=lambda head: (-head.count("/"), head)):
                self._remove_empty_parents(head)
            return removed
        finally:
            self._release()

    def _unlink_all(self, parent: int, paths: list[str]) -> list[str]:
        """The paths of one directory, `parent`, that were there and are now removed."""
        removed = []
        for path in paths:
            name = path.rpartition("/")[2]
            try:
                os.unlink(name, dir_fd=parent)
            except FileNotFoundError:
                continue
            except OSError as exc:
                if not self._unlink_failed(parent, name, path, exc):
                    continue
            removed.append(path)
        return removed

    def _unlink_failed(self, parent: int, name: str, path: str, exc: OSError) -> bool:
        """What an unlink that failed leaves to do: an empty staging directory at a reserved path
        is removed with rmdir; anything else is a storage_error naming the path. Apart from
        _unlink_all, which runs once per file and spells the path only for a message."""
        with os_errors("delete", self.describe(path)):
            if not (exc.errno in (errno.EISDIR, errno.EPERM) and is_reserved(path)
                    and stat.S_ISDIR(entry_mode(parent, name) or 0)):
                raise exc
            return rmdir_at(parent, name)

    def _remove_empty_parents(self, head: str) -> None:
        """Deleting the last file of a directory deletes the directory, up to (not including) the base;
        what is no longer an empty directory at its name (refilled, or swapped for a link) stays."""
        while head:
            rel_parent, name = self._split(head)
            parent = self._directory(rel_parent, False, self.describe(head))
            if parent is None:
                return
            with os_errors("remove directory", self.describe(head)):
                if not rmdir_at(parent, name):
                    return
            self._forget(join(self.base, head))
            head = head.rpartition("/")[0]

    # -- lock -----------------------------------------------------------------------------

    @contextmanager
    def lock(self, timeout: float, expiry: float = LOCK_EXPIRY_SECONDS) -> Iterator[Lease]:
        """flock on `.distributor.lock` (see local.lock.py), in the bundle path's directory held
        open for the whole time."""
        try:
            base = os.dup(self._directory(self.base, True, self.describe(LOCK_NAME)))
        finally:
            self._release()
        try:
            with flocked(base, self.describe(LOCK_NAME), self.token, timeout, expiry,
                         lambda: self.read_bytes(LOCK_NAME, LOCK_LIMIT)) as lease:
                yield lease
        finally:
            os.close(base)

    @property
    def warnings(self) -> list[str]:
        """Directories another account can write, on a host that lets it plant links (private.py)."""
        return self._exposure.warnings

    def close(self) -> None:
        """The root's descriptor is kept between operations; closed with the storage, and with
        the descriptors of every view at() made of it."""
        for view in self._views:
            view.close()
        self._views.clear()
        self._release()
        if self._root_fd is not None:
            os.close(self._root_fd)
            self._root_fd = None


def _existing_parent(path: str) -> str:
    """The nearest existing parent of a missing root, where the run would create it."""
    while not os.path.isdir(path) and path != os.path.dirname(path):
        path = os.path.dirname(path)
    return path
