# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The small interface every backend implements, and the helpers they share.

Every path a caller passes is a clean relative POSIX path under the storage's *base*: the
destination root joined with the rendered bundle path. Backends alone join paths to real
locations, and they alone see their SDK's exceptions: everything leaves as DistributorError
with reason `storage_error` (or `locked`) and a message naming the location. What a backend
sees at a path is judged in judging.py, and secrets are kept out of its messages by redaction.py.
"""

from __future__ import annotations

import hashlib
from abc import ABC, abstractmethod
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from typing import Callable, ContextManager, Iterable, Mapping, TypeVar

from ..errors import Unreadable
from ..limits import LOCK_EXPIRY_SECONDS
from ..paths import STAGING_PREFIX
from ..regular import ForeignLinks
from .lease import Lease
from .refusals import not_offered

Item = TypeVar("Item")


def staging_dir(path: str, token: str) -> str:
    """The directory where this attempt stages the files of `path`'s directory (local, SFTP).

    It is made by the attempt (mkdir, never reused) and only distributor's account may write in
    it, so nobody else can plant or swap a staged file, a symlink at a staged name included. It
    sits beside its targets, so a rename's source and target are reached through the same
    directories: a directory swapped for a symbolic link mid-publish makes the rename fail (the
    staged file is not behind the link) instead of landing where the link points.
    """
    head = path.rpartition("/")[0]
    name = STAGING_PREFIX + token
    return "%s/%s" % (head, name) if head else name


def temp_name(path: str, token: str) -> str:
    """Where a write of `path` is staged before its rename: reserved, so never an output, and
    derived from the attempt token so recovery can find leftovers without listing."""
    return "%s/%s" % (staging_dir(path, token), path.rpartition("/")[2])


MEASURE_CHUNK = 1024 * 1024


def hash_stream(read: Callable[[int], bytes], limit: int) -> str:
    """`sha256:<hex>` of what `read(n)` yields until it returns nothing or `limit` bytes came,
    MEASURE_CHUNK at a time: a file that grew after it was measured is hashed one byte past its
    recorded size (so it differs), never read to its end."""
    digest = hashlib.sha256()
    while limit > 0:
        chunk = read(min(MEASURE_CHUNK, limit))
        if not chunk:
            break
        digest.update(chunk)
        limit -= len(chunk)
    return "sha256:" + digest.hexdigest()


@dataclass(frozen=True)
class DirectorySeen:
    """A directory looked at, never followed (Storage.directory_at, Storage.survey): `identity`
    singles it out on its backend, so that the directory a rename moved can be told from one
    swapped in at its name (local: st_dev, st_ino and owner; SFTP, which has no inode numbers:
    what its attributes tell, sftp.wire.identity), and `doubt` is why distributor cannot vouch
    for its owner (owner_doubt), or None."""

    identity: tuple
    doubt: str | None


def in_parallel(workers: int, task: Callable[[Item], None], items: Iterable[Item]) -> None:
    """`task` over `items`, `workers` at a time, for backends whose small requests are latency
    bound. The first failure cancels the tasks not yet started and is raised once the running
    ones end: what finished stays done, as a sequential run would have left it."""
    with ThreadPoolExecutor(max_workers=workers) as pool:
        futures = [pool.submit(task, item) for item in items]
        try:
            for future in as_completed(futures):
                future.result()
        except BaseException:
            for future in futures:
                future.cancel()
            raise


class Storage(ABC):
    """One destination bundle path on one backend.

    `token` names this attempt's staged files (see temp_name); the journal records it.

    `shared_links` maps a path to the sibling directories (beside this storage's base: the other
    release generations) whose records name that path with the same digest: distributor gave the
    file a name there by a hard link. A count is no evidence (whoever can write the destination
    can give a file of theirs as many names), identity is: a backend that can tell a file's
    identity allows one more name for each sibling that holds the very same file at that path
    (local: st_dev and st_ino, local.links.LocalLinks._names_made), one that cannot (SFTP) allows
    none and refuses such a file as regular.UnprovenLinks. Every check of a file's link count
    (reads, measure, doubt, resettle) asks it only of a file with more than one name, so a run
    that meets none reads no other generation. A path it does not name has one name.

    What every backend must do is abstract, so one that lacks a method fails when it is made, not
    in the middle of a run that first needs it; the rest has a default here (done one at a time,
    or refused as not offered).
    """

    shared_links: Mapping[str, tuple[str, ...]]

    def __init__(self, token: str):
        self.token = token
        self.shared_links: Mapping[str, tuple[str, ...]] = {}

    @abstractmethod
    def describe(self, path: str = "") -> str:
        """A location for messages, for example `s3://bucket/prefix/path`."""

    @abstractmethod
    def read_bytes(self, path: str, limit: int) -> bytes | None:
        """The file's first `limit + 1` bytes at most, or None when it does not exist (state,
        journal, lock, the old content a diff shows). Whatever is at a destination may be of any
        size: never more than that is read from storage or held in memory, and the extra byte
        tells the caller that the file is over its bound (see limits.py). An output with a name
        distributor did not make is not read: regular.ForeignLinks (local: any file). Anything but a regular file there is
        errors.Unreadable, never opened."""

    def read_many(self, reads: list[tuple[str, int]]) -> list[bytes | None]:
        """read_bytes of each (path, limit), in order. Backends where latency dominates (S3)
        read them at once."""
        return [self.read_bytes(path, limit) for path, limit in reads]

    @abstractmethod
    def measure(self, path: str, size: int, digest: bool) -> tuple[int, str | None] | None:
        """(size, `sha256:<hex>` or None) of a managed output, or None when it is not there:
        publish's and state_info's `verify` compare it with the output's record. The digest is
        taken only when `digest` is asked and the size found is the recorded `size`: a file of
        another size has drifted already, so a planted file of any size costs a look, never a
        read. The content is streamed through a bounded buffer, at most `size + 1` bytes, never
        held whole; S3 answers from the full-object checksum it keeps when there is one. A file with
        a name distributor did not make is not measured: regular.ForeignLinks (local and SFTP). Anything but a regular file there is
        errors.Unreadable, never opened."""

    def measure_many(self, asked: list[tuple[str, int]], digest: bool) -> dict:
        """measure of each (path, size): path -> its answer, or the regular.ForeignLinks or
        errors.Unreadable it raised, which the caller judges file by file (planning.drift.find_drift);
        any other error stops it. Backends where latency dominates (SFTP) look at several at once."""
        found: dict = {}
        for path, size in asked:
            try:
                found[path] = self.measure(path, size, digest)
            except (ForeignLinks, Unreadable) as refused:
                found[path] = refused
        return found

    @abstractmethod
    def doubt(self, path: str, size: int | None = None, sha256: str | None = None, own_build: bool = False) -> str | None:
        """Why the entry at `path` cannot be vouched for as one distributor made, or None when it
        can: recovery deletes nothing else (execute.find_leftovers, releases.build.clear),
        whatever a journal says.

        With `sha256`, an output an interrupted publish wrote: a regular file with one link (or
        the links distributor made, see shared_links), owned by the account distributor writes
        as (local and SFTP: its own, or storage.owner), of `size` bytes and that digest. The
        content is read as measure reads it (a file of another size is not read, one of that
        size read to `size` + 1 bytes at most), and only once everything else agrees. Without, a
        name only distributor gives (a staged file, a staging directory): its owner decides. S3
        has no owner that tells one writer of a bucket from another, so there the digest alone
        vouches (S3Storage.doubt). SFTP, which cannot tell whose names a file's others are, reads
        only a file with one name. A file with more it vouches for by its size only when
        `own_build`: the caller clears a dead release build of distributor's own, a generation
        directory whose names are links it made, where removing a name destroys no bytes
        (SftpStorage.doubt). In-place recovery never says so: there such a file stays, named.
        Local storage and the memory double tell the names made by identity whatever the caller.
        The answer is a phrase for a warning ("is owned by uid 1000, not by uid 0")."""

    def doubt_many(self, asked: list[tuple[str, int | None, str | None]], own_build: bool = False) -> list[str | None]:
        """doubt of each (path, size, sha256), in order. Backends where latency dominates (S3)
        ask several at once."""
        return [self.doubt(*item, own_build=own_build) for item in asked]

    @abstractmethod
    def doubt_files(self, paths: list[str]) -> list[str | None]:
        """Why the file at each of `paths`, which a run is about to delete or write over, cannot
        be vouched for as one distributor wrote, in order (authorship.check_authorship refuses
        the run on any answer); None when it can, and where nothing is now (nobody's file is
        lost there). As doubt without a digest: owned by an account distributor trusts, with the
        names it made (local), and an output (a name that is not reserved) a regular file. One
        look at each, the looks asked together (local: through the directories walked once for
        the files of each, as delete_many walks them; SFTP: the lstats sent at once); no content
        is read. S3 has no owners: nothing to doubt there (S3Storage.doubt_files)."""

    @abstractmethod
    def write(self, path: str, chunks: Iterable[bytes]) -> None:
        """Stream `chunks` to `path` atomically: staged under temp_name(path, token) and renamed.

        If the iterable raises (a verification failure, say), the staged file is removed and the
        exception propagates; `path` is untouched.
        """

    def write_bytes(self, path: str, data: bytes) -> None:
        """write() of bytes already in memory (state, journal): the records are small and built
        whole, so they need no chunks of their own."""
        self.write(path, [data])

    def write_many(self, items: Iterable[tuple[str, Callable[[], Iterable[bytes]]]]) -> None:
        """write() for many files: (path, chunks_factory) pairs, the factory called when that
        write starts. Backends where latency dominates (S3) run several at once."""
        for path, factory in items:
            self.write(path, factory())

    def resettle(self, path: str, sha256: str, size: int) -> bool:
        """Give the output at `path` the storage settings now configured, its bytes left as they
        are (local and SFTP on an open descriptor or handle; S3 by copying the object onto itself
        with its settings replaced), when it is the file distributor wrote: a regular file of one
        link whose size and digest are `size` and `sha256`. False otherwise, and the executor
        writes it again: no setting lands on content distributor cannot vouch for. This base
        knows no way, so every output is written again."""
        return False

    def resettle_many(self, items: Iterable[tuple[str, str, int]]) -> list[str]:
        """resettle() of (path, sha256, size) items; the paths that must be written again."""
        return [path for path, sha256, size in items if not self.resettle(path, sha256, size)]

    def check_writable(self, directories: Iterable[str]) -> None:
        """Check mode's look ahead at the storage_error a run would meet: each directory (relative
        to the base, '' the base itself) must let the publishing account create, rename and remove
        files in it, or, when missing, its nearest existing parent must let it be made. Refuses
        with storage_error naming the first that does not; says nothing when it cannot tell. S3
        cannot tell without a request that changes the bucket, so the base does nothing."""

    @abstractmethod
    def delete(self, path: str) -> bool:
        """Remove a file; a missing file is not an error. True when something was removed.

        Local and SFTP also remove directories left empty below the base, and remove an empty
        directory at a reserved path (a staging directory list_files shows) as rmdir does: one
        that is not empty stays (False).
        """

    def discard(self, path: str) -> None:
        """delete() where nobody asks whether something was there (the journal once the state
        is written): S3 then spares the HEAD that answers it, a round trip."""
        self.delete(path)

    def delete_many(self, paths: Iterable[str]) -> list[str]:
        """Remove files, returning those that existed; backends may batch or parallelise."""
        return [p for p in paths if self.delete(p)]

    @abstractmethod
    def list_files(self) -> list[str]:
        """Every file under the base, sorted, as base-relative paths (reserved names included).
        Local and SFTP also list each empty staging directory (see paths.is_staging), which holds no
        file to show it: an attempt that died leaves them (see execute.find_leftovers)."""

    @abstractmethod
    def lock(self, timeout: float, expiry: float = LOCK_EXPIRY_SECONDS) -> ContextManager[Lease]:
        """Serialise publishers of this base (a context manager giving the Lease); DistributorError
        ('locked') naming the holder after `timeout` seconds. A holder that died releases it at
        most `expiry` seconds after its last renewal, counted on the storage's clock; a live one
        keeps it, however long it works. SFTP and S3 run lease.held over a LockFile."""

    # -- releases: links and renames (local and SFTP; this base refuses) ---------------------

    def at(self, base: str) -> Storage:
        """The same backend, account, settings and token at `base`, a path relative to this
        storage's base ("" is the base itself): `parent.at(".distributor-releases/site")` is a
        release's home, `home.at(id)` one generation. A view never reaches above the storage it
        was made from, so confinement holds for it too. It shares the connection: closing the
        view leaves it open, closing this storage closes it. Its shared_links are its own."""
        raise not_offered("another base on the same connection", self.describe())

    def entry(self, path: str) -> tuple[str, str | None]:
        """What is at `path`, never followed: ("absent", None), ("link", its target: at most
        limits.LINK_TARGET_LIMIT bytes, decoded as UTF-8 with surrogate escapes), ("directory",
        None), ("file", None) or ("other", what it is: regular.kind_of)."""
        raise not_offered("symbolic links", self.describe(path))

    def directory_at(self, path: str) -> DirectorySeen | None:
        """The directory at `path` as DirectorySeen tells it, looked at now, or None when there
        is no directory there (nothing, a link, anything else): what a release switch or a
        conversion is about to act on, and what a rename moved."""
        raise not_offered("directory identities", self.describe(path))

    def survey(self) -> tuple[DirectorySeen | None, list[tuple[str, str]]]:
        """What a conversion would adopt: the base itself (directory_at's answer, None when it
        is no directory), and (path, why) of every entry below it that is not a directory or a
        regular file that an account distributor trusts owns (a link: "is a symbolic link"; an
        owner: owner_doubt), found in one walk of the very directory the first answer tells
        where the backend can hold it (local: its descriptor)."""
        raise not_offered("directory identities", self.describe())

    def switch(self, path: str, target: str, temporary: str) -> None:
        """Make `path` a symbolic link holding `target` in one atomic step: a new link at
        `temporary` (which must not exist), made durable, then renamed over `path`. `path` must
        be absent or a link: a directory or a file there is refused, never replaced. On failure
        the temporary link is removed."""
        self.prepare_switch(path, target, temporary)
        self.finish_switch(path, temporary)

    def prepare_switch(self, path: str, target: str, temporary: str) -> None:
        """switch's first half: the new link at `temporary`, durable, once `path` is seen absent
        or a link. Apart from the rename so that a fleet makes every destination's link before
        it renames any (operations.fleet). On failure the temporary link is removed."""
        raise not_offered("an atomic switch of a symbolic link", self.describe(path))

    def finish_switch(self, path: str, temporary: str) -> None:
        """switch's second half: the link prepare_switch made at `temporary` renamed over `path`,
        durable when it returns. On failure the temporary link is removed."""
        raise not_offered("an atomic switch of a symbolic link", self.describe(path))

    def require_switch(self) -> None:
        """storage_error, before anything is written, when this storage cannot switch a link
        atomically: there is no non-atomic fallback."""
        raise not_offered("an atomic switch of a symbolic link", self.describe())

    def make_directory(self, path: str) -> None:
        """A new directory at `path`, which must be absent, and its missing parents, made with the
        configured settings, durable when it returns: the shared place of a release home
        (releases.shared), where a web server then writes through the releases' links."""
        raise not_offered("directories of their own", self.describe(path))

    def rename(self, source: str, target: str) -> None:
        """Move `source` (a directory) to `target`, which must not exist; the parents of
        `target` are made with the configured settings. Durable when it returns."""
        raise not_offered("renames of directories", self.describe(source))

    def link_many(self, pairs: list[tuple[str, str]]) -> list[tuple[str, str]]:
        """Make each (source, target) `target` a hard link of `source`, a regular file, never
        through a symbolic link, the target's parents made with the configured settings;
        durable when it returns. The pairs the backend has no means to link (an SFTP server
        without hardlink@openssh.com), which the caller writes again."""
        raise not_offered("hard links", self.describe())

    def close(self) -> None:
        """Release connections; safe to call twice."""

    @property
    def warnings(self) -> list[str]:
        """What the operator should know of this destination that stops nothing (directories
        another account can write: SFTP, see sftp/private.py; local, on a host that lets that account
        plant links, see private.py); publish, reconcile-state and prune add them to their
        result's warnings. Still there after close()."""
        return []
