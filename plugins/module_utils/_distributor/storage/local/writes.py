# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Writing to local storage: staging, durability in batches, renames into place.

Kept apart from local/storage.py, which walks and holds the directories these acts name, as
local/links.py is: what a write makes is staged in a private directory of this attempt beside its
target, synced, then renamed over the target between held descriptors, so an output never
appears half-written or with other permissions. The directories written into are checked to
still be at their paths and made durable before the caller writes state; release links reuse
that last step (LocalLinks).
"""

from __future__ import annotations

import os
import stat
from concurrent.futures import ThreadPoolExecutor
from contextlib import suppress
from typing import Callable, Iterable

from ...errors import DistributorError
from ...paths import all_clean, join
from ..base import staging_dir
from .descriptors import CREATE_FLAGS, entry_mode, identity_at, open_directory, write_fully
from .durability import Directory, FsyncEach, Staged, durability_for, root_parent
from ..refusals import failure, link_refused, not_private, os_errors, staged_replaced, staging_taken

SYNC_BATCH_BYTES = 64 * 1024 * 1024  # a batch also ends at this many staged bytes, so big files overlap their syncs
SYNC_WORKERS = 8


class LocalWrites:
    """The writes of LocalStorage, a mixin for the reason given there (its attributes are set by
    LocalStorage.__init__, its walk is LocalStorage._directory)."""

    def write(self, path: str, chunks: Iterable[bytes]) -> None:
        """One file made durable on its own: records (state, journal) are written one at a time."""
        self._write_all([(path, lambda: chunks)], lambda root: FsyncEach())

    def write_many(self, items: Iterable[tuple[str, Callable[[], Iterable[bytes]]]]) -> None:
        """Durability in batches (see durability.py): a batch of staged files is made durable
        while the next batch is staged, and renamed once it is; then every directory written
        into (and its parents up to the root's parent) is made durable, so every output and
        every directory created is durable before the caller writes state."""
        self._write_all(items, lambda root: durability_for(root, self.root))

    def _write_all(self, items, strategy) -> None:
        """Every path is checked before the first is staged, as delete_many's: all at once
        (paths.all_clean), so _stage splits each without a check of its own."""
        items = list(items)
        if not all_clean([path for path, _factory in items]):
            for path, _factory in items:
                self._split(path)
        root = self._root(create=True)
        durability = strategy(root)
        try:
            renamed_into = self._write_batches(durability, items)
            self._check_in_place(renamed_into)
            with root_parent(self.root) as parent:
                durability.directories(self._directory_chain(renamed_into) + [parent])
        finally:
            durability.close()
            self._release()

    def _write_batches(self, durability, items) -> set[str]:
        """Stage, sync and rename `items` batch by batch; the directories renamed into."""
        directories: set[str] = set()
        batch: list[Staged] = []
        size = 0
        pending: tuple[list, list] | None = None
        try:
            with ThreadPoolExecutor(SYNC_WORKERS) as pool:
                for path, factory in items:
                    batch.append(self._stage(path, factory()))
                    size += batch[-1].size
                    if len(batch) >= durability.batch_files or size >= SYNC_BATCH_BYTES:
                        if pending:
                            directories.update(self._rename_synced(pending[0], [f.result() for f in pending[1]]))
                        pending, batch, size = (batch, durability.submit(pool, batch)), [], 0
                if pending:
                    directories.update(self._rename_synced(pending[0], [f.result() for f in pending[1]]))
                pending = None
                if batch:
                    directories.update(self._rename_synced(batch, [f.result() for f in durability.submit(pool, batch)]))
                batch = []
        finally:
            for item in batch + (pending[0] if pending else []):
                item.discard()
            self._drop_staging()
        return directories

    def _stage(self, path: str, chunks: Iterable[bytes]) -> Staged:
        """`chunks` written to a new file in the attempt's staging directory, not yet durable.
        Created exclusively and never through a link, and never over one: a name in a directory
        this operation made was free when it looked (mkdir), elsewhere it looks at the name
        first. Mode and ownership are set through the open file. One handler for the file's
        few system calls, which names the step that failed: this runs once per output, and
        messages are worded only when one is needed; `path` was checked with its batch (_write_all)."""
        head, _slash, name = (self._under + path).rpartition("/")
        staging, _parent, shown = self._staging.get(head) or self._staging_directory(head, path)
        step = "inspect"
        fd = None
        try:
            if head not in self._made and stat.S_ISLNK(entry_mode(self._held(head), name) or 0):
                raise link_refused(self.describe(path))
            step = "stage"
            fd = os.open(name, CREATE_FLAGS, 0o600, dir_fd=staging)
            step = "write"
            size = 0
            for chunk in chunks:
                write_fully(fd, chunk)
                size += len(chunk)
            self._settle_output(fd)
            info = os.fstat(fd)
        except BaseException as exc:
            if fd is not None:
                os.close(fd)
                with suppress(OSError):
                    os.unlink(name, dir_fd=staging)
            if not isinstance(exc, OSError):
                raise
            if step == "stage":
                raise failure("stage %s at" % self.describe(path), shown + name, exc) from exc
            raise failure(step, self.describe(path), exc) from exc
        os.close(fd)
        # Made as columns.rows makes a Row: a NamedTuple's own __new__ is a Python call, 0.5 us a file.
        return tuple.__new__(Staged, (path, name, head, staging, shown + name, (info.st_dev, info.st_ino), size))

    def _staging_directory(self, head: str, path: str) -> tuple[int, int, str]:
        """This attempt's staging directory beside the target directory `head` (see
        base.staging_dir), made on first use: its descriptor, its parent's, and its location
        for messages. mkdir neither follows nor reuses what is already at the name, and what
        it made must be this account's own, private directory."""
        if head not in self._staging:
            needed_by = self.describe(path)
            parent = self._directory(head, True, needed_by)
            name = staging_dir("x", self.token)
            where = self._where(join(head, name))
            with os_errors("create", where):
                try:
                    os.mkdir(name, 0o700, dir_fd=parent)
                except FileExistsError:
                    raise staging_taken(where) from None
            fd = open_directory(parent, name, where, needed_by)
            info = None if fd is None else os.fstat(fd)
            if info is None or info.st_uid != os.geteuid() or info.st_mode & 0o077:
                if fd is not None:
                    os.close(fd)
                raise not_private(where)
            self._staging[head] = (fd, parent, where + "/")
        return self._staging[head]

    def _drop_staging(self) -> None:
        """Remove the staging directories, empty once their files are renamed or removed."""
        name = staging_dir("x", self.token)
        for fd, parent, _shown in self._staging.values():
            os.close(fd)
            with suppress(OSError):
                os.rmdir(name, dir_fd=parent)
        self._staging.clear()

    def _rename_synced(self, batch: list[Staged], results: list) -> set[str]:
        """Rename each staged file over its target, once every sync of the batch succeeded
        (`results` are fsync_staged's); what is not renamed is removed. The directories renamed into."""
        failed = next((r for r in results if r), None)
        done = 0
        try:
            if failed:
                raise failure("write", *failed) from failed[1]
            for item in batch:
                info = os.stat(item.name, dir_fd=item.staging, follow_symlinks=False)
                if (info.st_dev, info.st_ino) != item.ident:
                    raise staged_replaced(self.describe(item.path), item.where)
                os.replace(item.name, item.name, src_dir_fd=item.staging, dst_dir_fd=self._held(item.directory))
                done += 1
        except (OSError, DistributorError) as exc:
            for item in batch[done:]:
                item.discard()
            if isinstance(exc, OSError):
                raise failure("write", self.describe(batch[done].path), exc) from exc
            raise
        return {item.directory for item in batch}

    def _check_in_place(self, directories: set[str]) -> None:
        """Each directory written into is still the one at its path: one swapped for a link or
        moved away while the run held it open took the outputs along, and a state record naming
        them at their paths would be untrue. Walked afresh, once per directory, not per file."""
        for rel in sorted(directories):
            held = os.fstat(self._held(rel))
            parts = rel.split("/") if rel else []
            now = identity_at(self._root_fd, parts, lambda index: self._where("/".join(parts[:index + 1])))
            if now != (held.st_dev, held.st_ino):
                raise DistributorError("storage_error", "%s was moved or replaced by someone else while distributor "
                                       "wrote into it; the outputs written there are not at their paths. Find out "
                                       "who changes this destination, then publish again" % self._where(rel))

    def _directory_chain(self, directories: set[str]) -> list[Directory]:
        """Each directory renamed into and every parent up to the root, deepest first: a created
        directory is an entry in its parent, and the root itself may have been created by this run."""
        every = {""}
        for rel in directories:
            while rel not in every:
                every.add(rel)
                rel = rel.rpartition("/")[0]
        return [Directory(self._held(rel), self._where(rel))
                for rel in sorted(every, key=len, reverse=True)]
