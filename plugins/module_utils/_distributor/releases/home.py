# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A bundle path in release mode: the link, the release home beside it, its index and its lock.

The bundle path `P/N` is a symbolic link to one generation under `P/.distributor-releases/N/`
(releases.rules has the layout and the rules). Everything here only reads and acts through Storage's
primitives, so local and SFTP storage share it. What is read there is evidence: the link names a
generation only when it is exactly the form distributor writes, and the index only describes the
generations it names; neither chooses a path outside the release home.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from typing import Iterator

from ..records.config import Destination
from ..records.formats import ATTEMPT_TOKEN_PATTERN
from ..planning.dryrun import with_dry_run_hint
from ..errors import DistributorError
from ..limits import INDEX_LIMIT, LOCK_LIMIT
from ..paths import INDEX_NAME, LOCK_NAME, is_reserved, join
from ..regular import ForeignLinks
from .index import ACTIVE, FAILED, Release, ReleaseIndex, parse_index, serialize_index
from .rules import HOME, is_failed_or_unbuilt, live_id, split_bundle_path, with_active
from ..execution.root import opened, read_journal, read_record, read_state
from ..records.state_parse import recorded_files
from ..storage.base import Storage
from ..storage.confined import ConfinedStorage
from ..storage.refusals import CHANGED_DURING_RUN
from ..storage.select import new_token
from ..timestamps import parse_rfc3339


@dataclass
class ReleaseRoot:
    """One bundle path's release home, read under its lock. `live` is the id the link names;
    `plain` says the bundle path is still a plain directory (a conversion's start); `shared` the
    paths every release links to the release home's shared place (releases.shared); `storage` is
    where the live tree is read: the live generation, or the bundle path itself. `last_holder` is
    the token of the attempt whose lock record this run found (see last_holder); `built` holds
    the identity (Storage.directory_at) of each generation this run built, by id, as its build
    left it (see vouched_generation)."""

    parent: Storage
    home: Storage
    bundle_path: str
    name: str
    index: ReleaseIndex
    live: str | None
    plain: bool
    storage: Storage = field(init=False)
    last_holder: str | None = None
    built: dict = field(default_factory=dict)
    shared: tuple = ()

    def __post_init__(self):
        self.storage = self.generation(self.live) if self.live else self.parent.at(self.name)

    def generation(self, release: str) -> Storage:
        """A generation's tree, with the generations that may share its files named (item 9)."""
        storage = self.home.at(release)
        storage.shared_links = SharedLinks(self, release)
        return storage

    def write_index(self, index: ReleaseIndex) -> None:
        """Record `index` (a whole new file, by rename) and act on it from now on."""
        self.home.write_bytes(INDEX_NAME, serialize_index(index))
        self.index = index


class SharedLinks(Mapping):
    """The generations distributor may have linked each file of one generation into: for a
    path, the ids of the other generations on disk whose record names it with the same digest
    (Storage.shared_links). The storage allows a name there only where it finds the very same
    file (local: the same inode); any other link stays one distributor did not make. Read on
    first use only, which a storage asks only of a file with more than one name: a publish that
    shows no old content and measures nothing reads no other generation's record."""

    def __init__(self, root: ReleaseRoot, release: str, digests: dict | None = None):
        """`digests` (path -> sha256) stand for the generation's own record when it has none
        that names its files (a build that died: the records it was made from)."""
        self._root = root
        self._release = release
        self._digests = digests
        self._shared: dict | None = None

    def _load(self) -> dict:
        if self._shared is None:
            ids = [entry.id for entry in self._root.index.releases]
            mine = self._digests
            if mine is None:  # read only when no digests stand for it: clearing a generation has just read it
                mine = self._recorded(self._release) if self._release in ids else {}
            shared: dict[str, list] = {}
            for other in ids:
                for path, digest in self._recorded(other).items() if other != self._release else ():
                    if mine.get(path) == digest:
                        shared.setdefault(path, []).append(other)
            self._shared = {path: tuple(others) for path, others in shared.items()}
        return self._shared

    def _recorded(self, release: str) -> dict:
        return {path: digest for path, (_size, digest) in recorded(self._root.home.at(release)).items()}

    def __getitem__(self, path: str) -> tuple[str, ...]:
        """A record (reserved name) is never one of the files a publish links, so reading one,
        such as the generation's own state, reads no other generation's."""
        if is_reserved(path):
            raise KeyError(path)
        return self._load()[path]

    def __iter__(self):
        return iter(self._load())

    def __len__(self) -> int:
        return len(self._load())


class NotVouched(ForeignLinks):
    """A file generations share whose bytes are not those its record names: the count of names
    comes from the generations' records, which anyone who can write the destination can plant,
    but not the digest of a file they cannot read. Never shown."""

    def __init__(self, where: str):
        super().__init__(where, None, "%s has more than one name and does not hold the bytes its record names, so "
                         "distributor does not read it" % where)

    @property
    def shown(self) -> str:
        """Why the content is not shown, in a diff's words."""
        return "the file has other names and does not hold the bytes its record names, so distributor does not show it"


def vouched_read(storage: Storage, managed: Mapping):
    """storage.read_bytes for a diff's old content, where a file with names in several
    generations (storage.shared_links) is shown only when its bytes hash to its record's
    `sha256` (`managed`: the records by path). A storage with no shared files reads as it is;
    the generations sharing a file are asked only of bytes that differ from their record."""
    def read(path: str, limit: int) -> bytes | None:
        data = storage.read_bytes(path, limit)
        record = managed.get(path)
        if data is not None and record is not None and not _as_recorded(data, record):
            if storage.shared_links.get(path):
                raise NotVouched(storage.describe(path))
        return data
    return read


def _as_recorded(data: bytes, record) -> bool:
    return len(data) == record.size and "sha256:" + hashlib.sha256(data).hexdigest() == record.sha256


def read_generation_journal(storage: Storage):
    """A generation's journal, or None: an invalid one vouches for nothing it names."""
    try:
        return read_journal(storage)
    except DistributorError as error:
        if error.reason != "invalid_state":
            raise
        return None


def recorded(storage: Storage) -> dict:
    """(size, sha256) by path of each output a generation's record names, read from its columns
    (state_parse.recorded_files: 10,000 outputs are not modelled to be looked up); none when it
    has no record or an invalid one, which vouches for nothing."""
    return read_state(storage, recorded_files)[0] or {}


@contextmanager
def opened_release(destination: Destination, bundle_path: str, lock_timeout: float, check_mode: bool,
                   opener, switching: bool = False) -> Iterator[ReleaseRoot]:
    """The release home of `bundle_path`, locked unless in check mode: one lock covers reading
    the live generation, building the next and switching to it. A run that will `switch` asks
    the storage first whether it can switch atomically (Storage.require_switch): one that cannot
    is refused before the lock, the first thing a run writes, is taken."""
    parent_path, name = split_bundle_path(bundle_path)
    parent = ConfinedStorage(opener(destination.storage, parent_path, new_token()))
    try:
        if switching:
            parent.require_switch()
        home = parent.at(join(HOME, name))
        before = None if check_mode else last_holder(home)
        with nullcontext() if check_mode else home.lock(lock_timeout, destination.lock_expiry):
            root = read_release_root(parent, home, bundle_path, name)
            root.last_holder = before
            root.shared = destination.releases.shared if destination.releases else ()
            yield root
    except DistributorError as error:
        raise with_dry_run_hint(error, destination, bundle_path) from None
    finally:
        parent.close()


def last_holder(home: Storage) -> str | None:
    """The token of the attempt whose record is at the lock's name before this run takes it: one
    that was killed (a run that ends removes its lock record, and the kernel or the lock's expiry
    lets the next run in), or one still running, which leaves nothing behind once it ends. Its
    first write, the index recording it `staged`, is staged under that token; killed there, it
    is in no index, and this is how the next run finds what it left (releases.build). Evidence:
    a token of the form distributor makes, or None; it only names what to look at."""
    try:
        raw = home.read_bytes(LOCK_NAME, LOCK_LIMIT)
        token = json.loads(raw)["token"] if raw else None
    except (DistributorError, ValueError, TypeError, KeyError):
        return None
    return token if isinstance(token, str) and ATTEMPT_TOKEN_PATTERN.fullmatch(token) else None


def read_release_root(parent: Storage, home: Storage, bundle_path: str, name: str) -> ReleaseRoot:
    """What the link and the index say, checked against each other."""
    raw = read_record(home, INDEX_NAME, INDEX_LIMIT)
    index = parse_index(raw, home.describe(INDEX_NAME)) if raw is not None else ReleaseIndex(bundle_path, ())
    kind, target = parent.entry(name)
    where = parent.describe(name)
    if kind == "link":
        live = live_id(target, name, where)
        entry = index.by_id(live)
        if entry is None:
            raise DistributorError(
                "invalid_state", "%s links to release %s, which %s does not record: distributor never switches to a "
                "release before recording it. Find out who changed the link" % (where, live, home.describe(INDEX_NAME)))
        if entry.status != ACTIVE:
            vouched_generation(home, live, {})
        return ReleaseRoot(parent, home, bundle_path, name, as_linked(index, entry, where), live, False)
    if kind == "absent" and index.active is not None:
        raise DistributorError(
            "invalid_state", "%s records release %s as active, but %s is gone: distributor never removes the link. "
            "Put it back with distributor_release (release: %s), or find out who removed it"
            % (home.describe(INDEX_NAME), index.active.id, where, index.active.id))
    if kind in ("absent", "directory"):
        return ReleaseRoot(parent, home, bundle_path, name, index, None, kind == "directory")
    raise DistributorError(
        "storage_error", "%s is %s, not the symbolic link release mode keeps there (or a directory to convert). "
        "Find out who put it there" % (where, "a file" if kind == "file" else target or "something else"))


def vouched_generation(home: Storage, release: str, built: Mapping) -> None:
    """The generation of `release` is one distributor built, before it is switched to, activated
    or recorded active: a directory (never a link) that an account distributor trusts owns
    (Storage.directory_at; its record is read through the same trust, root.read_state), and, when
    this run built it (`built`: releases.home.ReleaseRoot.built), the very directory its build
    left. The index names a release, not what is at its name since: whoever can write the
    release home can put a directory of their own there, and a switch would serve it as a
    release. Another account's directory, or anything but a directory, is invalid_state, named;
    a directory swapped in after this run built it is storage_error. Nothing is switched."""
    seen = home.directory_at(release)
    where = home.describe(release)
    if seen is None or seen.doubt:
        raise DistributorError(
            "invalid_state", "%s %s, so it is not a release distributor built, and distributor neither switches to it nor "
            "records it active. Find out who put it there; if an account named in neither storage.owner nor "
            "storage.trusted_owners publishes here, name it there" % (where, seen.doubt if seen else "is not a directory"))
    if release in built and seen.identity != built[release]:
        raise DistributorError("storage_error", "%s is not the directory this run built there; %s" % (where, CHANGED_DURING_RUN))


def as_linked(index: ReleaseIndex, entry: Release, where: str) -> ReleaseIndex:
    """The index as the switch to the linked release `entry` left it. A run that died between
    its rename of the link and the index's record of it left the release it built (or returned
    to) linked but not `active`: it is the one served, so it is taken as active from then on,
    activated when it was built, a rollback when it is older than the release recorded active.
    A release never built, or one that failed, is one distributor never switches to."""
    if entry.status == ACTIVE:
        return index
    if is_failed_or_unbuilt(entry):
        raise DistributorError(
            "invalid_state", "%s links to release %s, which %s; distributor switches only to releases it built whole. "
            "Find out who changed the link" % (where, entry.id, "failed" if entry.status == FAILED else "was never built"))
    recorded = index.active
    return with_active(index, entry.id, parse_rfc3339(entry.built), recorded is not None and entry.id < recorded.id)


@contextmanager
def opened_tree(destination: Destination, bundle_path: str, lock_timeout: float, check_mode: bool,
                opener) -> Iterator[Storage]:
    """The tree prune and reconcile-state act on and state_info reads: the bundle path, or in
    release mode the live generation, through the link, under the release home's lock. They
    change that generation in place: their deletes unlink names only (the older generations'
    names of a shared file stay), and the record is written by rename, a file of its own."""
    in_place = destination.releases is None
    with (opened if in_place else opened_release)(destination, bundle_path, lock_timeout, check_mode, opener) as found:
        yield found if in_place else found.storage
