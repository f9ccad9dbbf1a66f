# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Symbolic links, hard links and renames of local storage: the primitives releases are built on.

Like every other act of local storage (descriptors.py), each names one component under a
directory distributor holds open, walked from the root without following a link: `readlinkat`,
`symlinkat`, `renameat` and `linkat` without AT_SYMLINK_FOLLOW between held descriptors. A name
that must be new is looked at first and the kernel refuses it again where it can (a link made
over an existing name); what was made is looked at once more where a swap in between could have
changed what it is (a hard link). Each act is durable when it returns: the directories it changed
are synced, and their parents up to the root's when it made them. Which names of a file the
generations share are distributor's is told here too, by identity through the same walked
descriptors, never by their number (LocalLinks._names_made).
"""

from __future__ import annotations

import errno
import os
import stat
from contextlib import suppress
from itertools import chain
from typing import Callable

from ...errors import DistributorError
from ...limits import LINK_TARGET_LIMIT
from ...paths import all_clean, join, path_problem
from ...regular import kind_of
from ..base import DirectorySeen
from .descriptors import entry_mode, list_tree
from .durability import Directory, FsyncEach, durability_for, root_parent, sync_directory
from ..refusals import already_there, failure, link_not_made, link_refused, missing, not_a_link, not_linkable, os_errors

# linkat's errors that say this filesystem cannot give the file another name here (another
# filesystem below the root, no hard links, too many of them): the caller writes it again.
NO_LINK_HERE = frozenset({errno.EXDEV, errno.EMLINK, errno.EPERM, errno.EOPNOTSUPP, errno.ENOTSUP})


class LocalLinks:
    """The release primitives of LocalStorage, a mixin for the reason given there (its attributes
    are set by LocalStorage.__init__)."""

    def at(self, base: str):
        """A new LocalStorage on the same root, its own descriptors; the warnings of directories
        others can write (private.Exposure) are gathered in one place for both."""
        storage, sysctl = self._settings
        view = type(self)(self.root, join(self.base, base), self.token, storage, sysctl)
        view._exposure = self._exposure
        self._views.append(view)
        return view

    def entry(self, path: str) -> tuple[str, str | None]:
        """Looked at in its directory, walked from the root; a link is read, never followed."""
        head, name = self._split(path)
        try:
            parent = self._directory(head, False, self.describe(path))
            return ("absent", None) if parent is None else entry_at(parent, name, self.describe(path))
        finally:
            self._release()

    def directory_at(self, path: str) -> DirectorySeen | None:
        """An lstat in its directory, walked from the root: a link there is seen, never followed."""
        head, name = self._split(path)
        try:
            parent = self._directory(head, False, self.describe(path))
            if parent is None:
                return None
            with os_errors("inspect", self.describe(path)):
                try:
                    found = os.stat(name, dir_fd=parent, follow_symlinks=False)
                except FileNotFoundError:
                    return None
            return self._seen(found) if stat.S_ISDIR(found.st_mode) else None
        finally:
            self._release()

    def survey(self) -> tuple[DirectorySeen | None, list[tuple[str, str]]]:
        """The base opened as every directory is (a link there is refused), told by the fstat of
        that descriptor, and walked from it (descriptors.list_tree): each entry looked at in the
        directory that lists it, so a directory swapped in at the base's name after it was opened
        is neither judged nor mistaken for it."""
        strangers: list[tuple[str, str]] = []

        def judged(parent: int, rel: str, entries: list) -> None:
            for name, _is_directory in entries:
                path = join(rel, name)
                with os_errors("inspect", self.describe(path)):
                    try:
                        found = os.stat(name, dir_fd=parent, follow_symlinks=False)
                    except FileNotFoundError:
                        continue
                kind = None if stat.S_ISDIR(found.st_mode) else kind_of(found.st_mode)
                why = "is " + kind if kind else self._foreign(found.st_uid)
                if why:
                    strangers.append((path, why))
        try:
            top = self._directory(self.base, False, self.describe())
            if top is None:
                return None, []
            with os_errors("inspect", self.describe()):
                base = self._seen(os.fstat(top))
            for _path in list_tree(top, self.describe, judged):
                pass
            return base, strangers
        finally:
            self._release()

    def _seen(self, found: os.stat_result) -> DirectorySeen:
        """A directory's identity here: the very inode, and its owner."""
        return DirectorySeen((found.st_dev, found.st_ino, found.st_uid), self._foreign(found.st_uid))

    def _names_made(self, path: str, seen: os.stat_result) -> int:
        """How many names of the file `seen` (the fstat of what was opened, or the lstat of what
        was looked at, at `path`) distributor made: its own, and one for each sibling generation
        whose record names `path` with the same digest (shared_links) and which holds that very
        file there, the same (st_dev, st_ino). A count is no evidence: whoever can write the
        destination can give a file of theirs exactly as many names. Each sibling is looked at
        through directories walked from the root like every other (never through a link: a
        sibling that cannot be walked holds no name of it), and only for a file with more than
        one name, so a run that reads no shared file opens no other generation."""
        siblings = self.shared_links.get(path, ()) if seen.st_nlink > 1 and stat.S_ISREG(seen.st_mode) else ()
        beside = self.base.rpartition("/")[0]
        made = 1
        for sibling in siblings:
            if "/" in sibling or path_problem(sibling) or path_problem(path):
                continue
            head, _slash, name = join(beside, sibling, path).rpartition("/")
            try:
                parent = self._directory(head, False, self._where(head))
                found = None if parent is None else os.stat(name, dir_fd=parent, follow_symlinks=False)
            except (DistributorError, OSError):
                continue
            if found is not None and (found.st_dev, found.st_ino) == (seen.st_dev, seen.st_ino):
                made += 1
        return made

    def require_switch(self) -> None:
        """renameat replaces a link atomically on every filesystem."""

    def prepare_switch(self, path: str, target: str, temporary: str) -> None:
        """symlinkat at `temporary` once `path` is seen absent or a link, its directory synced."""
        head, name = self._split(path)
        temporary_head, temporary_name = self._split(temporary)
        try:
            parent = self._directory(head, True, self.describe(path))
            holder = self._directory(temporary_head, True, self.describe(temporary))
            symlink_at(holder, temporary_name, parent, name, target, self.describe(temporary), self.describe(path))
        finally:
            self._release()

    def finish_switch(self, path: str, temporary: str) -> None:
        """renameat of the link at `temporary` over `path`, both directories synced; the directory
        of `path` must still be at its path afterwards."""
        head, name = self._split(path)
        temporary_head, temporary_name = self._split(temporary)
        try:
            parent = self._directory(head, True, self.describe(path))
            holder = self._directory(temporary_head, True, self.describe(temporary))
            rename_link_at(holder, temporary_name, parent, name, self.describe(path))
            self._check_in_place({head})
            self._made_durable({head, temporary_head}, FsyncEach())
        finally:
            self._release()

    def make_directory(self, path: str) -> None:
        """mkdirat of each missing component, walked from the root as every directory is (a link
        on the way is refused), then synced with its parents."""
        head, name = self._split(path)
        made = join(head, name)
        try:
            self._directory(made, True, self.describe(path))
            self._check_in_place({made})
            self._made_durable({made}, FsyncEach())
        finally:
            self._release()

    def rename(self, source: str, target: str) -> None:
        """renameat between the held directories of both names, once `target` is seen absent
        (Linux renames a directory over an empty one without a word)."""
        head, name = self._split(source)
        target_head, target_name = self._split(target)
        try:
            parent = self._directory(head, False, self.describe(source))
            if parent is None:
                raise missing("move", self.describe(source))
            into = self._directory(target_head, True, self.describe(target))
            with os_errors("move %s to" % self.describe(source), self.describe(target)):
                if entry_mode(into, target_name) is not None:
                    raise already_there("move %s to" % self.describe(source), self.describe(target))
                try:
                    os.rename(name, target_name, src_dir_fd=parent, dst_dir_fd=into)
                except FileNotFoundError:
                    raise missing("move", self.describe(source)) from None
            self._made_durable({head, target_head}, FsyncEach())
        finally:
            self._release()

    def link_many(self, pairs: list[tuple[str, str]]) -> list[tuple[str, str]]:
        """linkat between held descriptors, kept open for the whole batch; the directories
        linked into made durable at the end the way a batch of writes is (durability.py), and
        checked to be still at their paths. The pairs are taken a pair of directories at a time,
        each looked up once (by_directories), and linked by one loop per pair (link_at): a
        release links every file it keeps, 10,000 pairs for a one-file change."""
        unlinked: list[tuple[str, str]] = []
        into: set[str] = set()
        try:
            for (head, target_head), named in by_directories(pairs, self._under, self._split).items():
                parent = self._directory(head, False, self.describe(named[0][0]))
                if parent is None:
                    raise missing("link", self.describe(named[0][0]))
                holder = self._directory(target_head, True, self.describe(named[0][2]))
                left = link_at(parent, holder, named, self._locations)
                unlinked.extend(left)
                if len(left) < len(named):
                    into.add(target_head)
            if into:
                self._check_in_place(into)
                self._made_durable(into, durability_for(self._root_fd, self.root))
        finally:
            self._release()
        return unlinked

    def _locations(self, source: str, target: str) -> tuple[str, str]:
        return self.describe(source), self.describe(target)

    def _made_durable(self, directories: set[str], durability) -> None:
        """Each directory changed and its parents up to the root's (one may have been made)."""
        try:
            with root_parent(self.root) as parent:
                durability.directories(self._directory_chain(directories) + [parent])
        finally:
            durability.close()


def entry_at(parent: int, name: str, where: str) -> tuple[str, str | None]:
    """Storage.entry of `name` in the open directory `parent`."""
    with os_errors("inspect", where):
        mode = entry_mode(parent, name)
        if mode is None:
            return "absent", None
        if stat.S_ISLNK(mode):
            try:
                target = os.readlink(name, dir_fd=parent)
            except FileNotFoundError:
                return "absent", None
    if stat.S_ISLNK(mode):
        if len(os.fsencode(target)) > LINK_TARGET_LIMIT:
            raise DistributorError("storage_error", "%s is a symbolic link whose target is longer than %d bytes; "
                                   "distributor makes none such" % (where, LINK_TARGET_LIMIT))
        return "link", target
    if stat.S_ISDIR(mode):
        return "directory", None
    kind = kind_of(mode)
    return ("other", kind) if kind else ("file", None)


def symlink_at(holder: int, temporary: str, parent: int, name: str, target: str, shown: str, where: str) -> None:
    """A link holding `target` made at `temporary` in the open directory `holder`, durable, to be
    renamed over `name` in `parent` (rename_link_at), which must be absent or a link now."""
    with os_errors("switch", where):
        mode = entry_mode(parent, name)
    if mode is not None and not stat.S_ISLNK(mode):
        raise not_a_link(where, kind_of(mode) or "a file")
    with os_errors("create link", shown):
        try:
            os.symlink(target, temporary, dir_fd=holder)
        except FileExistsError:
            raise already_there("create link", shown) from None
    try:
        sync_directory(Directory(holder, shown))
    except BaseException:
        with suppress(OSError):
            os.unlink(temporary, dir_fd=holder)
        raise


def rename_link_at(holder: int, temporary: str, parent: int, name: str, where: str) -> None:
    """The link at `temporary` in `holder` renamed over `name` in `parent`. A directory raced in
    at `name` after the look makes the rename fail (a link is never renamed over a directory); a
    file raced in is replaced, which rename(2) cannot refuse: only someone who can write that
    directory can race, and the file keeps any other name it has. On failure the link goes."""
    try:
        with os_errors("switch", where):
            os.replace(temporary, name, src_dir_fd=holder, dst_dir_fd=parent)
    except BaseException:
        with suppress(OSError):
            os.unlink(temporary, dir_fd=holder)
        raise


def by_directories(pairs: list[tuple[str, str]], under: str,
                   split) -> dict[tuple[str, str], list[tuple[str, str, str, str]]]:
    """The pairs (source, target) grouped by (source's directory, target's directory) under the
    root (`under`: LocalStorage._under, the base and a slash), in their order, each as (source,
    its name, target, its name). Every path is clean, told by a few passes over them all
    (paths.all_clean); when they are not, `split` (LocalStorage._split) refuses the first
    unclean one, naming it, before anything is linked."""
    if not all_clean(list(chain.from_iterable(pairs))):
        for source, target in pairs:
            split(source)
            split(target)
    groups: dict[tuple[str, str], list[tuple[str, str, str, str]]] = {}
    for source, target in pairs:
        head, _slash, name = (under + source).rpartition("/")
        target_head, _slash, target_name = (under + target).rpartition("/")
        groups.setdefault((head, target_head), []).append((source, name, target, target_name))
    return groups


def link_at(parent: int, holder: int, named: list[tuple[str, str, str, str]],
            locations: Callable[[str, str], tuple[str, str]]) -> list[tuple[str, str]]:
    """Each (source, name, target, target name) of `named`: the target name in `holder` made a
    hard link of the regular file `name` in `parent`. Returns the pairs the filesystem cannot
    link (NO_LINK_HERE). Each file is looked at before it is linked and its new name after
    (each in its directory's entries, listed_files, or on its own): a source swapped in between
    is undone and refused, never left linked, also when another pair is refused; nothing reads
    the new names before the batch returns. `locations(source, target)` spells both for a
    message only. One loop for the files of a pair of directories, with no call of ours per
    file: it runs for every file a release keeps."""
    listed, device = listed_files(parent), os.fstat(parent).st_dev
    linked, unlinked = [], []
    try:
        for source, name, target, target_name in named:
            seen = device, listed.get(name)
            if seen[1] is None:
                seen = looked_at(parent, name, locations(source, target)[0])
            try:
                os.link(name, target_name, src_dir_fd=parent, dst_dir_fd=holder, follow_symlinks=False)
            except OSError as exc:
                if exc.errno in NO_LINK_HERE:
                    unlinked.append((source, target))
                    continue
                raise _unlinked(exc, *locations(source, target)) from exc
            linked.append((source, target, target_name, seen))
    finally:
        made, device = listed_files(holder), os.fstat(holder).st_dev
        for source, target, target_name, seen in linked:
            if (device, made.get(target_name)) != seen:
                _check_made(holder, target_name, seen, locations(source, target))
    return unlinked


def _check_made(holder: int, name: str, seen: tuple[int, int], locations: tuple[str, str]) -> None:
    """The new name `name` in `holder` looked at on its own: not the file `seen` (st_dev,
    st_ino) linked, it is removed and the link refused."""
    source, target = locations
    try:
        made = os.stat(name, dir_fd=holder, follow_symlinks=False)
        if (made.st_dev, made.st_ino) != seen:
            os.unlink(name, dir_fd=holder)
            raise link_not_made(target, source)
    except OSError as exc:
        raise _unlinked(exc, source, target) from exc


def listed_files(parent: int) -> dict[str, int]:
    """The inode of each regular file in the open directory `parent` by name, as the
    directory's entries give them (no look at each file: a release links every file it keeps),
    where they agree with the files: the inode a look at one of them gives is the one its entry
    gives. Where they do not (a filesystem whose entries number files otherwise), or the listing
    fails, none: each file is then looked at on its own (looked_at)."""
    try:
        with os.scandir(parent) as entries:
            listed = {entry.name: entry.inode() for entry in entries if entry.is_file(follow_symlinks=False)}
        probe = next(iter(listed.items()), None)
        if probe is not None and os.stat(probe[0], dir_fd=parent, follow_symlinks=False).st_ino == probe[1]:
            return listed
    except OSError:
        pass
    return {}


def looked_at(parent: int, name: str, where: str) -> tuple[int, int]:
    """(st_dev, st_ino) of the regular file `name` in `parent`, about to be linked; anything
    else there (a link, a directory, nothing) is refused."""
    try:
        seen = os.stat(name, dir_fd=parent, follow_symlinks=False)
    except OSError as exc:
        raise (missing("link", where) if isinstance(exc, FileNotFoundError) else failure("link", where, exc)) from exc
    if not stat.S_ISREG(seen.st_mode):
        raise link_refused(where) if stat.S_ISLNK(seen.st_mode) else not_linkable(where, kind_of(seen.st_mode))
    return seen.st_dev, seen.st_ino


def _unlinked(exc: OSError, source: str, target: str) -> DistributorError:
    """A link the kernel refused for another reason than the filesystem's (NO_LINK_HERE), or the
    look at what it made failed."""
    if isinstance(exc, FileExistsError):
        return already_there("link %s to" % source, target)
    return failure("link %s to" % source, target, exc)
