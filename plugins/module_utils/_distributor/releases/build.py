# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Building a generation beside the live one, switching to it, and removing old ones.

A publish in release mode makes the plan as an in-place publish would, against the live
generation. Its new generation holds every output of the state after: the plan's writes
written (executor: journal, staged writes, state), everything else hard-linked from the live
generation, so a one-file change writes one file. Readers keep the live generation, whole,
until one rename swaps the link; a publish that dies before it leaves the link and the live
generation as they were, and its partial generation for the next run to mark `failed` and clear.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime
from typing import Callable

from ..planning.drift import find_drift
from ..errors import DistributorError
from ..planning.guards import first_paths
from ..execution.execute import execute
from ..paths import INDEX_NAME, JOURNAL_NAME, RESERVED_PREFIX, STAGING_PREFIX, STATE_NAME, is_reserved, join
from ..planning.plan import Plan
from ..regular import UnprovenLinks
from .index import Release, ReleaseIndex
from .home import ReleaseRoot, SharedLinks, read_generation_journal, recorded, vouched_generation
from .rules import (
    HOME, SHARED, dead_releases, is_failed_or_unbuilt, link_target, next_release_id, removable_releases, removed_at_switch,
    shared_target, staged_release, switch_link_name, token_of, with_active, with_built, with_failed, with_staged, without_releases)
from ..execution.root import read_state
from ..storage.base import staging_dir


@dataclass(frozen=True)
class Clearing:
    """What clearing old generations did: `removed` ids, `failed` ids of dead builds found, and
    `kept` (id, why) of generations that hold something no record names, left whole."""

    removed: tuple[str, ...] = ()
    failed: tuple[str, ...] = ()
    kept: tuple[tuple[str, str], ...] = ()


def recover_dead(root: ReleaseRoot, check_mode: bool) -> Clearing:
    """Builds a dead publish left (`staged`, never built: under the lock nobody else builds)
    are marked `failed` and cleared like crash recovery clears an in-place publish: only files
    the records vouch for. Check mode says what a run would do."""
    ids = [entry.id for entry in dead_releases(root.index)]
    if not check_mode:
        _tidy_home(root, ids)
    if not ids:
        return Clearing()
    if check_mode:
        return Clearing(failed=tuple(ids))
    root.write_index(with_failed(root.index, ids))
    return replace(_clear_each(root, ids), failed=tuple(ids))


def _clear_each(root: ReleaseRoot, ids) -> Clearing:
    """Clear the generations `ids` one by one, then record the index without those removed: a
    generation kept whole stays listed, to be tried again by the next run."""
    cleared, kept = [], []
    for release in ids:
        why = clear(root, release)
        if why:
            kept.append((release, why))
        else:
            cleared.append(release)
    root.write_index(without_releases(root.index, cleared))
    return Clearing(tuple(cleared), (), tuple(kept))


def _tidy_home(root: ReleaseRoot, ids: list) -> None:
    """What an attempt killed while it recorded the index or switched left in the release home:
    its staging directory (with the index it staged, if it got that far) and its new link not yet
    renamed over the bundle path, both named by its token. The attempts that may have left them
    are the dead ones and the newest one (killed in its last records), whose tokens their ids
    end with, and the one whose lock record this run found (killed while recording itself
    `staged`, before the index named it: releases.home.last_holder). Each name is removed only
    as distributor makes it (a private directory of its account, a file in it that
    Storage.doubt vouches for, a link); anything else stays."""
    newest = [root.index.releases[-1].id] if root.index.releases else []
    tokens = {token_of(release) for release in ids + newest} | ({root.last_holder} if root.last_holder else set())
    names = []
    for token in sorted(tokens):
        if root.home.entry(switch_link_name(token))[0] == "link":
            names.append(switch_link_name(token))
        staging = staging_dir(INDEX_NAME, token)
        if root.home.entry(staging)[0] == "directory":
            staged = join(staging, INDEX_NAME)
            if root.home.entry(staged)[0] == "file" and root.home.doubt(staged) is None:
                names.append(staged)
            names.append(staging)
    if names:
        root.home.delete_many(names)


def clear(root: ReleaseRoot, release: str) -> str | None:
    """Remove one generation, or say why it stays (then nothing of it is removed): judged by
    `judge`, which check mode asks alone."""
    judged = judge(root, release)
    if judged.why:
        return judged.why
    listing, unfinished = judged.listing, judged.unfinished
    if not listing and not judged.links and not unfinished:
        _tidy(root, release, {})
        return None
    records = [p for p in listing if RESERVED_PREFIX in p and is_reserved(p)]  # the prefix first: one test in C a path
    reserved = frozenset(records)
    outputs = [p for p in listing if p not in reserved] + list(judged.links)
    within = release + "/"  # a listed path is clean, and so is an id: joined by a slash
    root.home.delete_many([within + p for p in outputs])
    if unfinished or not frozenset(listing).issuperset(judged.named):
        _tidy(root, release, judged.named)
    root.home.delete_many([within + p for p in sorted(records, key=lambda p: p == STATE_NAME)])
    return None


@dataclass(frozen=True)
class Judged:
    """Whether a generation may be cleared: `why` it stays (None: it goes), what it holds, what
    its records vouch for (path -> (size, sha256)), whether it was never completely built, and
    the links to shared paths it holds (only the link goes, never what it leads to)."""

    why: str | None
    listing: tuple = ()
    named: dict | None = None
    unfinished: bool = False
    links: tuple = ()


def judge(root: ReleaseRoot, release: str) -> Judged:
    """Whether clearing the generation `release` removes it, reading only. A complete
    generation holds what its record names; a failed build what the generation it was linked
    from records, what its journal names and its staged files. Each file of a failed build must
    also be the one described there (Storage.doubt, the links counted as its records share
    them), as crash recovery requires of what it deletes; each file of a complete one must be
    distributor's (Storage.doubt_files: a regular file of a trusted account, with the names the
    generations share), as every delete requires (authorship.py): a record is no proof of who
    put the file at its name since. A link at a shared path (releases.shared) that holds exactly
    what link_shared makes there is that path's; a link anywhere else is no file of distributor's. A dead build is asked as distributor's own
    (`own_build`): its names are links distributor made, so over SFTP, which cannot tell a
    file's other names, one with several is vouched for by its size, never read."""
    entry = root.index.by_id(release)
    unfinished = entry is not None and is_failed_or_unbuilt(entry)
    storage = root.generation(release)
    listing = storage.list_files()
    if not listing and not unfinished:
        return Judged(None, (), {}, False)
    named = _named(root, release, storage, unfinished)
    storage.shared_links = SharedLinks(root, release, {p: digest for p, (_size, digest) in named.items()})
    unknown = [p for p in listing if p not in named and not _own_record(p)]
    links = tuple(p for p in unknown if p in root.shared and storage.entry(p) == ("link", shared_target(p)))
    unknown = [p for p in unknown if p not in links]
    listing = [p for p in listing if p not in links]
    if unknown:
        return Judged("holds %d file(s) no record names, such as %s" % (len(unknown), sorted(unknown)[0]))
    if unfinished:
        asked = [(p, *named[p]) for p in listing if p in named] + [(p, None, None) for p in listing if STAGING_PREFIX in p]
        doubts = [(p, why) for (p, _s, _d), why in zip(asked, storage.doubt_many(asked, own_build=True)) if why]
    else:
        doubts = [(p, why) for p, why in zip(listing, storage.doubt_files(listing)) if why]
    if doubts:
        return Judged("%s %s" % doubts[0])
    return Judged(None, tuple(listing), named, unfinished, links)


def would_clear_each(root: ReleaseRoot, ids) -> Clearing:
    """Check mode's _clear_each: which of the generations `ids` a run removes and which it keeps whole, and why."""
    judged = [(release, judge(root, release).why) for release in ids]
    return Clearing(tuple(r for r, why in judged if not why), (), tuple((r, why) for r, why in judged if why))


def _tidy(root: ReleaseRoot, release: str, named: dict) -> None:
    """Directories without a file, which deleting files never removes: a dead build's (killed
    between a mkdir and the link or write it was for) and an interrupted clear's (killed between
    a file's removal and its directory's: its outputs are no longer all there). Each directory
    a file its records name would sit in, and the generation's own, is removed while empty,
    deepest first, through the staging directory the build would have made there
    (storage.base.staging_dir: deleting a reserved name, there or not, removes the directories
    it empties). The records go after: until then they say what the generation held."""
    token = token_of(release)
    heads = {""}
    for path in named:
        head = path.rpartition("/")[0]
        while head not in heads:
            heads.add(head)
            head = head.rpartition("/")[0]
    root.home.delete_many([join(release, staging_dir(join(head, "x"), token))
                           for head in sorted(heads, key=lambda head: (-head.count("/"), head))])


def _own_record(path: str) -> bool:
    return path in (STATE_NAME, JOURNAL_NAME) or STAGING_PREFIX in path


def _named(root: ReleaseRoot, release: str, storage, unfinished: bool) -> dict:
    """(size, sha256) of each path a record vouches for in generation `release`. A dead build's
    files were linked from the generation it was built from, then written as its journal says
    and recorded by its own state (when it was killed after writing it): the generation it was
    built from speaks only for paths the build's own records do not name."""
    named = {}
    if unfinished:
        entry = root.index.by_id(release)
        if entry is not None and entry.from_id is not None:
            named.update(recorded(root.generation(entry.from_id)))
    named.update(recorded(storage))
    journal = read_generation_journal(storage) if unfinished else None
    if journal is not None:
        named.update({e.path: (e.size, e.sha256) for e in journal.writes if e.sha256})
    return named


def build(root: ReleaseRoot, the_plan: Plan, bundle, manifest, present: frozenset, own_sources: Callable[[], dict],
          now: datetime, named: str | None = None) -> str:
    """The plan's tree as a new generation, durable and recorded `built`; returns its id. Every
    output of the state after that the plan does not write is linked from the live generation;
    one the storage cannot link (an SFTP server without hardlink@openssh.com) is written again
    from the bundle when this owner's (`own_sources()`: path -> its Write, made only then), and
    refused otherwise (nobody else's bytes are at hand). Its id is `named` (releases.id, checked
    by rules.named_release) or one made now."""
    release = named or next_release_id(root.index, now, root.home.token)
    root.write_index(with_staged(root.index, staged_release(release, manifest, the_plan.after, now, root.live)))
    try:
        _build(root, the_plan, bundle, present, own_sources, release)
        link_shared(root, release)
        made = root.home.directory_at(release)
    except DistributorError:
        _abandon(root, release)
        raise
    root.built[release] = made.identity if made else None
    root.write_index(with_built(root.index, release, now))
    return release


def _abandon(root: ReleaseRoot, release: str) -> None:
    """A build that failed (not one that died) is marked failed and cleared at once, as far as
    the storage still lets it; what stays is the next run's to clear."""
    try:
        root.write_index(with_failed(root.index, [release]))
        if clear(root, release) is None:
            root.write_index(without_releases(root.index, [release]))
    except DistributorError:
        pass


def _build(root: ReleaseRoot, the_plan: Plan, bundle, present: frozenset, own_sources: Callable[[], dict],
           release: str) -> None:
    written = {w.path for w in the_plan.writes + the_plan.repairs + the_plan.resettles}
    kept = [o.path for o in the_plan.after.outputs if o.path not in written and o.path in present] if the_plan.after else []
    live, new = (root.live or "") + "/", release + "/"  # ids and output paths are clean: joined by a slash
    pairs = [(live + p, new + p) for p in kept] if root.live else []
    again = [target.partition("/")[2] for _source, target in root.home.link_many(pairs)]
    own = own_sources() if again else {}
    refused = [p for p in again if p not in own]
    if refused:
        raise DistributorError(
            "storage_error", "%s cannot link %s into the new release, and it is not this publish's to write again: "
            "release mode in a shared root needs hardlink@openssh.com" % (root.home.describe(), refused[0]))
    writes = the_plan.writes + the_plan.repairs + the_plan.resettles + tuple(own[p] for p in again)
    execute(replace(the_plan, writes=writes, repairs=(), resettles=(), deletes=()), root.generation(release), bundle)


def link_shared(root: ReleaseRoot, release: str) -> None:
    """Each shared path of the generation `release` a relative link to its place in the release
    home (releases.rules.shared_target), made as the bundle path's link is (Storage.switch, its
    new link first at this attempt's name in the release home); the place made when absent, so
    a web server can write into it at once. What is there is never looked into."""
    for path in root.shared:
        place = join(SHARED, path)
        if root.home.entry(place)[0] == "absent":
            root.home.make_directory(place)
        root.home.switch(join(release, path), shared_target(path), switch_link_name(root.home.token))


def switch(root: ReleaseRoot, release: str, now: datetime, rollback: bool = False) -> None:
    """Point the bundle path at `release` in one rename, then record it active: only a
    generation distributor built (releases.home.vouched_generation)."""
    after = prepare_switch(root, release, now, rollback)
    finish_switch(root, release)
    root.write_index(after)


def prepare_switch(root: ReleaseRoot, release: str, now: datetime, rollback: bool = False) -> ReleaseIndex:
    """Everything of a switch to `release` but its rename: the index it will record (refused
    here when `release` may not be activated), the generation vouched for, the new link made
    and durable. Returns that index, for the caller to record once the link is renamed
    (finish_switch): a fleet prepares every destination before it renames any."""
    after = with_active(root.index, release, now, rollback)
    vouched_generation(root.home, release, root.built)
    root.parent.prepare_switch(root.name, link_target(root.name, release), _temporary(root))
    return after


def finish_switch(root: ReleaseRoot, release: str) -> None:
    """The rename prepare_switch made ready: from now on the bundle path serves `release`."""
    root.parent.finish_switch(root.name, _temporary(root))
    root.live = release


def abandon_switch(root: ReleaseRoot) -> None:
    """A prepared switch that will not be renamed: its new link goes (as _tidy_home removes one
    a killed attempt left)."""
    root.home.delete_many([switch_link_name(root.home.token)])


def point_link(root: ReleaseRoot, release: str) -> None:
    """The one rename that makes the bundle path serve `release`: a new link, named by this
    attempt's token in the release home (releases.rules.switch_link_name), renamed over the
    bundle path (Storage.switch)."""
    root.parent.switch(root.name, link_target(root.name, release), _temporary(root))


def _temporary(root: ReleaseRoot) -> str:
    return join(HOME, root.name, switch_link_name(root.home.token))


def clear_old(root: ReleaseRoot, keep: int) -> Clearing:
    """After a switch: remove what keep-N no longer keeps (releases.rules.removable_releases)."""
    return _clear_each(root, removable_releases(root.index, keep))


def would_clear(index: ReleaseIndex, keep: int, new: Release | None, now: datetime) -> list[str]:
    """Check mode's prediction of clear_old: the ids a run would remove after switching to a new
    release (`new`, id unknown until the run unless releases.id names it: it is not one of them)."""
    if new is None:
        return []
    return removed_at_switch(with_built(with_staged(index, new), new.id, now), new.id, keep, now)


def check_whole(root: ReleaseRoot, release: str, verify: str) -> None:
    """Every output the generation's record names is there as recorded (`verify`: its size, or
    its digest too): a generation that lost or changed files since it was built is refused,
    never switched to, and a staged one is not offered for preview. A file the generations
    share that the storage cannot read (regular.UnprovenLinks: SFTP) is checked by its size.
    The files are looked at together (Storage.measure_many: over SFTP, a window of them a round
    trip). First, the generation must be one distributor built (releases.home.vouched_generation)."""
    vouched_generation(root.home, release, root.built)
    storage = root.generation(release)
    state, error = read_state(storage)
    if error is not None:
        raise error
    if state is None:
        raise DistributorError("invalid_state", "%s holds no record: it is not a release distributor built" % storage.describe())

    listed = frozenset(storage.list_files())
    asked = [(output.path, output.size) for output in state.outputs if output.path in listed]
    seen = storage.measure_many(asked, verify == "sha256")
    seen.update(storage.measure_many([item for item in asked if isinstance(seen[item[0]], UnprovenLinks)], False))

    def measure(path: str, _size: int, _digest: bool):
        if isinstance(seen[path], Exception):
            raise seen[path]
        return seen[path]
    missing, drifted = find_drift(state.outputs, listed, measure, verify)
    if missing or drifted:
        raise DistributorError(
            "storage_error", "release %s is not whole: %d output(s) missing%s, %d changed%s since it was built; it stays "
            "as it is and the bundle path is not switched"
            % (release, len(missing), first_paths(missing), len(drifted), first_paths(drifted)))
