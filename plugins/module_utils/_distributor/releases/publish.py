# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A publish in release mode: plan against the live generation as an in-place publish plans
against the bundle path, then build a new generation beside it and switch the link to it.

What differs from publishing in place is only what the run does with the plan (releases.build):
the decision, the plan, the guards, the review and its digest are the same functions, so a
release publish refuses exactly what an in-place one refuses, and more: unmanaged content in the
live generation (it would be neither linked nor deleted, so the new release could not be whole).
"""

from __future__ import annotations

import time
from typing import NamedTuple

from ..records.attributes import attributes_for
from ..errors import DistributorError
from ..planning.guards import first_paths
from ..paths import join
from ..planning.plan import Content, Write
from .build import build, check_whole, clear_old, link_shared, point_link, recover_dead, switch, would_clear, would_clear_each
from .index import STAGED, Release
from .home import ReleaseRoot
from .rules import (
    HOME, SHARED, earlier_good, is_dead, named_release, next_release_id, outside_shared, refuse_shared_outputs, removed_at_switch,
    staged_release, with_active, with_built, with_staged, without_releases)
from ..execution.root import list_present, read_state
from ..storage.base import DirectorySeen
from ..storage.refusals import CHANGED_DURING_RUN
from ..storage.select import new_token


class Released(NamedTuple):
    """What a release publish made and did: the plan (`made`), the result's `release` values,
    whether it builds a release (`builds`: check mode, whether it would) and its `diff` part."""

    made: object
    values: dict
    builds: bool
    diff: dict


def publish_release(job, root: ReleaseRoot, make) -> Released:
    """`make(storage, release_facts)` plans and reviews at the live tree (publish._made); this
    adds the release's part before and after."""
    settings = job.destination.releases
    if root.plain and not settings.convert:
        raise DistributorError(
            "conflict", "%s is a plain directory, and release mode keeps a symbolic link there. Publish once with "
            "releases.convert: true to make the directory the first release (docs/releases.md, converting an existing destination)"
            % root.parent.describe(root.name))
    refuse_shared_outputs([item.path for item in job.planned], settings.shared, "destination %s" % job.destination.id)
    named = settings.id
    if named is not None and named != root.live:
        named_release(root.index, named, root.parent.describe(root.name))
    recovered = recover_dead(root, job.check_mode)
    index_before = root.index

    def release_facts(the_plan, present) -> dict:
        builds = _builds(settings, the_plan, root.live)
        if builds and named is not None and named == root.live:
            raise DistributorError(
                "conflict", "releases.id %s is the live release of %s, and this publish changes what it holds, so it builds "
                "a new release, which needs a later id" % (named, root.parent.describe(root.name)))
        new = _placeholder(job, the_plan, index_before) if builds else None
        clears = would_clear(index_before, settings.keep, new, job.now)
        facts = {"activate": settings.activate, "convert": root.plain, "from": root.live,
                 "clears": clears if settings.activate else [], "failed": list(recovered.failed)}
        if not settings.activate:
            facts["removes_at_switch"] = clears
        if settings.build == "always":
            facts["build"] = "always"
        return facts
    try:
        made = make(root.storage, release_facts)
    except DistributorError as error:
        if error.reason == "unmanaged":
            _refuse_unmanaged(outside_shared(list_present(root.storage), root.shared), read_state(root.storage)[0], root)
        raise
    builds = _builds(settings, made.plan, root.live)
    if made.present is not None:
        _refuse_unmanaged(made.present, made.plan.before, root)
    if root.plain and (made.found.token is not None or made.staging):
        raise DistributorError(
            "conflict", "%s holds what an interrupted publish in place left; publish once more without releases to "
            "finish it, then convert" % root.storage.describe())
    judged = adoptable(root) if root.plain and builds else None
    if judged is not None:
        _refuse_taken_shared_places(root)
    values = {"id": None, "status": None, "from": root.live, "converted": None, "removed": list(recovered.removed),
              "failed": list(recovered.failed), "kept": [{"id": i, "why": why} for i, why in recovered.kept],
              "previous": None, "preview_url": None}
    if not settings.activate:
        values["removes_at_switch"] = []
    if job.check_mode:
        root.home.check_writable([""])
        root.parent.check_writable([""])
        _predicted(job, root, values, index_before, made.plan if builds else None)
    if job.check_mode or not builds:
        values["previous"] = _previous_id(root)
        return Released(made, values, builds, release_diff(values, index_before, builds, settings, root))
    if root.plain:
        values["converted"] = convert(root, made.plan, job.now, judged)
    new = build(root, made.plan, job.bundle, job.bundle.manifest, made.present or frozenset(), lambda: _own_sources(job),
                job.now, named)
    values.update(id=new, status="staged", preview_url=_preview(settings, new))
    if not settings.activate:
        check_whole(root, new, "sha256")
        values["removes_at_switch"] = removed_at_switch(root.index, new, settings.keep, job.now)
    else:
        switch(root, new, job.now)
        cleared = clear_old(root, settings.keep)
        reported = dict(recovered.kept)  # a dead build kept before the switch is tried again after it: named once
        values.update(status="active", removed=values["removed"] + list(cleared.removed),
                      kept=values["kept"] + [{"id": i, "why": why} for i, why in cleared.kept if i not in reported])
    values["previous"] = _previous_id(root)
    return Released(made, values, builds, release_diff(values, index_before, builds, settings, root))


def _builds(settings, the_plan, live: str | None) -> bool:
    """Whether the publish builds a release: when its plan changes something, or always
    (releases.build), unless the live release is already the one releases.id names."""
    if the_plan.changed:
        return True
    return settings.build == "always" and (settings.id is None or settings.id != live)


def _predicted(job, root: ReleaseRoot, values: dict, index_before, built_plan) -> None:
    """Check mode's `release` values as the run's (`built_plan`: the plan of the release it
    builds, None when it builds none): the id releases.id names, the dead builds and, after the
    switch, the releases keep-N no longer keeps, each judged as the run judges it (one holding
    what no record names is kept, and named once); or what a switch to the staged release removes."""
    settings = job.destination.releases
    values["id"] = settings.id if built_plan is not None else None
    dead = would_clear_each(root, values["failed"])
    values.update(removed=list(dead.removed), kept=[{"id": i, "why": why} for i, why in dead.kept])
    new = _placeholder(job, built_plan, index_before) if built_plan is not None else None
    later = [r for r in would_clear(index_before, settings.keep, new, job.now) if r not in dead.removed]
    if not settings.activate:
        values["removes_at_switch"] = later
        return
    cleared = would_clear_each(root, [r for r in later if r not in dict(dead.kept)])
    values["removed"] += list(cleared.removed)
    values["kept"] += [{"id": i, "why": why} for i, why in cleared.kept]


def release_diff(values: dict, index_before, builds: bool, settings, root: ReleaseRoot) -> dict:
    """The release part of --diff: the release built and the one it is built from, the switch
    (or that the new release is staged, not switched), and each release removed with its status
    before the run; a staged one removed is a preview, named as such with its preview URL."""
    where = root.parent.describe(root.name)
    new = values["id"] or "(a new release)"
    lines = []
    if builds:
        lines.append("built: %s from %s\n" % (new, values["from"] or "nothing (the first release)"))
        lines.append("switch: %s -> %s\n" % (values["from"], new) if settings.activate
                     else "switch: none, %s is staged, not switched\n" % new)
    for release in values["removed"]:
        lines.append("removed: %s (%s)\n" % (release, _status_before(index_before.by_id(release), settings)))
    for release in values.get("removes_at_switch", ()):
        lines.append("removed at its switch: %s (%s)\n" % (release, _status_before(index_before.by_id(release), settings)))
    after = new if builds and settings.activate else values["from"]
    return {"before": "release: %s\n" % values["from"], "after": "release: %s\n%s" % (after, "".join(lines)),
            "before_header": where, "after_header": where}


def _status_before(entry: Release | None, settings) -> str:
    if entry is None:
        return "unknown"
    if is_dead(entry):
        return "failed: never completely built"
    if entry.status == STAGED:
        url = _preview(settings, entry.id)
        return "staged: a preview%s" % (" at %s" % url if url else "")
    return entry.status


def _placeholder(job, the_plan, index) -> Release:
    """The release a run would add, for check mode's prediction of what it clears: the one
    releases.id names, or one made now."""
    made = job.destination.releases.id or next_release_id(index, job.now, "f" * 12)
    return staged_release(made, job.bundle.manifest, the_plan.after, job.now)


def _previous_id(root: ReleaseRoot) -> str | None:
    entry = earlier_good(root.index)
    return entry.id if entry is not None else None


def _preview(settings, release: str) -> str | None:
    template = getattr(settings, "preview_url", None)
    return template.replace("{release}", release) if template else None


def _refuse_unmanaged(present: frozenset, state, root: ReleaseRoot) -> None:
    """A file no record names in the live tree would be left out of the new generation, which
    would delete it from the site, or carried into it, which would make distributor vouch for
    it: neither, so the publish refuses, naming it (check mode too), force or not: this
    refusal, not the decision's (whose advice is force), is the one a release publish gives."""
    managed = state.by_path() if state else {}
    unmanaged = sorted(p for p in present if p not in managed)
    if unmanaged:
        raise DistributorError(
            "unmanaged", "%s holds %d file(s) no record names%s; a release publish neither carries them into the next "
            "release nor leaves them out. Move them away, or publish them with a pipeline"
            % (root.storage.describe(), len(unmanaged), first_paths(unmanaged)))


def _own_sources(job) -> dict:
    """This publish's copies, as writes: what it writes again when a storage cannot link."""
    configured = attributes_for(job.destination.storage)
    manifest = job.bundle.manifest
    return {item.path: Write(item.path, item.source_path, Content(manifest.file(item.source_path).sha256,
                                                                  manifest.file(item.source_path).size,
                                                                  attributes=configured(item.path)))
            for item in job.planned if item.kind == "source"}


def adoptable(root: ReleaseRoot) -> DirectorySeen:
    """The plain directory a conversion would move, judged before anything moves (check mode
    too): it, and every entry in it, a directory or a regular file of an account distributor
    trusts (Storage.survey). The rename adopts all it holds into a release, whose files keep-N
    deletes once it is no longer kept: another account's directory there (whether a record
    names its files or not: a record vouches for what distributor wrote, not for who owns it
    now) would become distributor's to delete. Refused as unmanaged, naming them; nothing moves."""
    seen, strangers = root.storage.survey()
    where = root.storage.describe()
    if seen is None:
        raise DistributorError("storage_error", "%s is no longer a directory; %s" % (where, CHANGED_DURING_RUN))
    found = ([(".", seen.doubt)] if seen.doubt else []) + sorted(strangers)
    if found:
        path, why = found[0]
        raise DistributorError(
            "unmanaged", "%s holds %d entr%s distributor cannot vouch for%s (%s %s); converting it would make them a release's, "
            "which distributor deletes once keep-N no longer keeps it, so nothing was moved. Move them out of the bundle path, "
            "or, if the account that owns them publishes here, name it in storage.trusted_owners (docs/releases.md, "
            "converting an existing destination)" % (where, len(found), "y" if len(found) == 1 else "ies",
                                                     first_paths([p for p, _why in found]),
                                                     "the directory itself" if path == "." else path, why))
    return seen


def _refuse_taken_shared_places(root: ReleaseRoot) -> None:
    """A conversion moves the plain directory's shared paths into the shared place after the
    directory itself moved into the release home: a shared place someone already filled, or a
    link on the way to it, would fail the run there, the bundle path gone. Looked at before
    anything moves (check mode too), refused naming it (storage_error, as the move would be)."""
    for path in root.shared:
        place = join(SHARED, path)
        if root.home.entry(place)[0] != "absent" and root.storage.entry(path)[0] != "absent":
            raise DistributorError(
                "storage_error", "%s already holds something, so the conversion cannot move %s there, and nothing was moved; "
                "find out who put it there, then remove it" % (root.home.describe(place), root.storage.describe(path)))


def convert(root: ReleaseRoot, the_plan, now, judged: DirectorySeen) -> dict:
    """The plain bundle path becomes the first release: its directory is renamed into the
    release home, then a link takes its place. Between the two renames the bundle path does not
    exist (readers get ENOENT, a web server 404); the result reports the window. What the rename
    moved must be the directory `judged` (adoptable), see _as_judged; its shared paths' content
    moves to the shared place before the link is put in place (_share)."""
    before = the_plan.before
    first = next_release_id(root.index, now, new_token())
    manifest = before.owners[0].manifest if before and before.owners else None
    root.write_index(with_built(with_staged(root.index, staged_release(first, manifest, before, now)), first, now))
    started = time.monotonic()
    try:
        root.parent.rename(root.name, join(HOME, root.name, first))
    except DistributorError:
        if root.home.entry(first)[0] == "absent":
            root.write_index(without_releases(root.index, [first]))
        raise
    _as_judged(root, first, judged)
    _share(root, first)
    point_link(root, first)
    window = time.monotonic() - started
    root.live = first
    root.write_index(with_active(root.index, first, now))
    root.storage = root.generation(first)
    return {"id": first, "window_seconds": round(window, 6)}


def _share(root: ReleaseRoot, first: str) -> None:
    """What the plain directory held at each shared path moves to the shared place, then the
    first release links there as every release does (build.link_shared). adoptable judged all
    of it first: only entries of accounts distributor trusts are moved. A shared place that
    already holds something is never written over: refused before anything moved
    (_refuse_taken_shared_places), and by the rename should one be put there since (storage_error)."""
    for path in root.shared:
        if root.home.entry(join(first, path))[0] != "absent":
            root.home.rename(join(first, path), join(SHARED, path))
    link_shared(root, first)


def _as_judged(root: ReleaseRoot, first: str, judged: DirectorySeen) -> None:
    """What the rename moved to the first release's name is the very directory adoptable judged
    (Storage.directory_at: local, the same inode; SFTP, the same attributes). A rename moves
    whatever is at the name then: whoever can write the bundle path's directory can swap in a
    link or a directory of their own after the look. Anything else goes back to the bundle path
    when that name is free, or stays where it is, the index forgets the release, and the run
    fails (storage_error) naming where it is: nothing is switched to or recorded."""
    if root.home.directory_at(first) == judged:
        return
    moved, where = join(HOME, root.name, first), root.parent.describe(root.name)
    try:
        root.parent.rename(moved, root.name)
        left = "put back at %s" % where
    except DistributorError:
        left = "left at %s" % root.parent.describe(moved)
    root.write_index(without_releases(root.index, [first]))
    raise DistributorError(
        "storage_error", "what distributor renamed from %s into the release home is not the directory it looked at before (a "
        "link or another directory was put at that name in between): it was %s, and no release records it; %s. Find out "
        "who can write %s" % (where, left, CHANGED_DURING_RUN, root.parent.describe()))
