# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rules of release mode, pure: where a bundle path's generations live, what its link may
hold, and how a release moves from `staged` to `active` to `superseded` (or `failed`,
`rolled_back`) and when it may go.

A bundle path `P/N` in release mode is a symbolic link `N` in `P` holding exactly
`.distributor-releases/N/<id>`, relative, so it works under a chroot; the generations, their
index and their lock are in the release home `P/.distributor-releases/N`. Keep-N counts good
releases only: a failed or rolled-back release is removed at the next switch and never
returned to, so a run of failed publishes never pushes the last good release out. Nothing here
reads storage or the clock: `now` is given.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta

from ..errors import DistributorError
from ..limits import SHOWN_LIMIT
from ..paths import join
from ..records.formats import RELEASE_ID_PATTERN
from ..records.manifest import Manifest
from ..records.state import State
from .index import ACTIVE, FAILED, ROLLED_BACK, STAGED, SUPERSEDED, Release, ReleaseIndex
from ..timestamps import format_compact, format_rfc3339, parse_compact
from ..visible import visible

HOME = ".distributor-releases"
SHARED = "shared"  # the release home's directory of shared paths (releases.shared), beside the generations
SWITCH_PREFIX = ".distributor.switch."  # + an attempt token: the new link in the release home before its rename


def release_id(now: datetime, token: str) -> str:
    """The id of the release an attempt builds: its UTC second, so ids sort as releases were
    made, then the attempt's token (storage.select.new_token), so two attempts never share one."""
    made = "%s-%s" % (format_compact(now), token)
    if not RELEASE_ID_PATTERN.match(made):
        raise ValueError("a release id needs a token of 12 lowercase hex digits, not %r" % (token,))
    return made


def token_of(release: str) -> str:
    """The token of the attempt that made the release id `release` (release_id's end): what that
    attempt named its staging directories and its new link by."""
    return release.rpartition("-")[2]


def next_release_id(index: ReleaseIndex, now: datetime, token: str) -> str:
    """The id of a release made now: `release_id`, unless the newest release of `index` sorts
    after it (made within the same second, or by a publisher whose clock is ahead), then one
    second after that one's. Ids sort as releases were made, which `previous`, keep-N and a
    rollback's direction rely on; the release's own `created` keeps the publisher's time."""
    made = release_id(now, token)
    newest = index.releases[-1].id if index.releases else None
    if newest is None or made > newest:
        return made
    try:
        later = parse_compact(newest[:16]) + timedelta(seconds=1)
        return release_id(later, token)
    except (OverflowError, ValueError):
        raise DistributorError("invalid_state", "the newest release of %s, %s, is dated where no clock reaches: "
                               "distributor made no such release. Find out who wrote the index"
                               % (index.bundle_path, newest)) from None


def named_release(index: ReleaseIndex, release: str, where: str) -> str:
    """The id the caller named (releases.id) for the release a publish builds: one id on every
    destination of a fleet, chosen once. It must sort after every release `index` lists, of any
    status, as next_release_id's do, or `previous`, keep-N and a rollback's direction would read
    the order wrongly; refused otherwise (conflict), naming both ids and the bundle path `where`."""
    held = index.by_id(release)
    if held is not None:
        raise DistributorError(
            "conflict", "releases.id %s is already a release of %s (%s); a publish builds a new release, which needs an "
            "id after every one it holds: distributor_release switches to one it holds" % (release, where, held.status))
    newest = index.releases[-1].id if index.releases else None
    if newest is not None and release <= newest:
        raise DistributorError(
            "conflict", "releases.id %s does not sort after %s, the newest release of %s; release ids sort as releases "
            "were made, so a publish names a later one (the form is %s, the UTC time first)"
            % (release, newest, where, "20261206T053000Z-0123456789ab"))
    return release


def removed_at_switch(index: ReleaseIndex, release: str, keep: int, now: datetime) -> list[str]:
    """The releases a switch to the built release `release` of `index` removes: what keep-N no
    longer keeps once it is active (removable_releases), which a publish that stages reports."""
    return [r for r in removable_releases(with_active(index, release, now), keep) if r != release]


def split_bundle_path(bundle_path: str) -> tuple[str, str]:
    """(parent, name) of a bundle path: the link `name` sits in the directory `parent` ("" is
    the root). The root itself cannot be replaced by a link, so "" is invalid_config."""
    if bundle_path == "":
        raise DistributorError(
            "invalid_config",
            "releases need a bundle path (destination.path): the bundle path becomes a symbolic link to the live "
            "release, and the root itself cannot be one. Give a path such as \"site\".",
        )
    parent, _slash, name = bundle_path.rpartition("/")
    return parent, name


def home_of(bundle_path: str) -> str:
    """The release home of a bundle path, under the root: `P/.distributor-releases/N`, beside
    the link and reserved, so it is never an output of a root at `P`."""
    parent, name = split_bundle_path(bundle_path)
    return join(parent, HOME, name)


def link_target(name: str, release: str) -> str:
    """What the link `name` holds to serve `release`: relative to the link's directory."""
    return "%s/%s/%s" % (HOME, name, release)


def shared_target(path: str) -> str:
    """What the link at the shared path `path` of a generation holds: its place in the release
    home's shared directory, relative to the link's own directory (up out of the generation), so
    it works under a chroot and moves with the release home."""
    return "../" * (path.count("/") + 1) + join(SHARED, path)


def under_shared(path: str, shared) -> str | None:
    """The shared path `path` is, or is under, or None."""
    return next((place for place in shared if path == place or path.startswith(place + "/")), None)


def outside_shared(listing, shared) -> frozenset:
    """A generation's listing without its shared paths (the links to the shared place) and what
    is under them (a plain directory's content there, which a conversion moves): never an
    output, so never an unmanaged file either."""
    return frozenset(listing) if not shared else frozenset(p for p in listing if under_shared(p, shared) is None)


def refuse_shared_outputs(outputs, shared, where: str) -> None:
    """A bundle whose outputs hold a shared path, or anything under one, is refused naming it:
    the release's entry there is the link to what the web server keeps, which a publish never
    writes over nor fills."""
    for path in sorted(outputs):
        place = under_shared(path, shared)
        if place is not None:
            raise DistributorError(
                "invalid_config", "the bundle holds %s, %s the shared path %s of %s (releases.shared): every release "
                "links that path to what is kept once beside the releases, so a publish writes nothing there. Leave it "
                "out of the bundle (pipeline exclude) or out of releases.shared"
                % (visible(path), "which is" if path == place else "under", visible(place), where))


def switch_link_name(token: str) -> str:
    """The name, in the release home, of the new link an attempt (`token`) makes before renaming
    it over the bundle path: named by the token, so the next run finds one a killed attempt left."""
    return SWITCH_PREFIX + token


def live_id(target: str, name: str, where: str) -> str:
    """The release the link `name` (described by `where`) holds, when its `target` is exactly
    one link_target makes; anything else (`..`, an absolute path, another directory, an id
    that is not one) is invalid_state. A target is evidence: it never picks what is read or
    deleted."""
    prefix = "%s/%s/" % (HOME, name)
    found = target[len(prefix):] if target.startswith(prefix) else ""
    if RELEASE_ID_PATTERN.match(found):
        return found
    shown = visible(target[:SHOWN_LIMIT]) + ("…" if len(target) > SHOWN_LIMIT else "")
    raise DistributorError(
        "invalid_state",
        "%s is a symbolic link to '%s', not to a release (%s<release id>): distributor makes no other link "
        "there, so it follows this one nowhere and changed nothing. Find out who changed it; "
        "distributor_state_info lists the releases, and distributor_release can point the link at one again."
        % (where, shown, visible(prefix)),
    )


def staged_release(release: str, manifest: Manifest | None, state: State | None, now: datetime,
                   from_id: str | None = None) -> Release:
    """The entry of a release an attempt makes: `staged`, not yet built, made `now` from
    `manifest` for the owners of `state` (the record it will hold), linking the files of
    `from_id`. A plain directory converted without a record has no manifest: its fields are empty."""
    owners = tuple(owner.key for owner in state.owners) if state is not None else ()
    manifest_id, digest = (manifest.id, manifest.digest) if manifest is not None else ("", "")
    return Release(release, STAGED, manifest_id, digest, owners, format_rfc3339(now), None, None, from_id)


def with_staged(index: ReleaseIndex, entry: Release) -> ReleaseIndex:
    """The index with an attempt's release recorded before its first write: `staged`, not yet
    built, so a run that dies leaves an entry the next one finds (dead_releases)."""
    if entry.status != STAGED or entry.built is not None or index.by_id(entry.id) is not None:
        raise ValueError("a new release is staged, unbuilt and not yet listed: %r" % (entry,))
    return replace(index, releases=index.releases + (entry,))


def with_built(index: ReleaseIndex, release: str, now: datetime) -> ReleaseIndex:
    """The index once the generation `release` is complete and durable: it may be activated."""
    entry = _listed(index, release)
    if entry.status != STAGED:
        raise ValueError("only a staged release is built, not %r" % (entry,))
    return _with(index, replace(entry, built=format_rfc3339(now)))


def is_failed_or_unbuilt(entry: Release) -> bool:
    """A release that failed or was never completely built: never switched to, and cleared by
    what the records it was made from vouch for, not by its own alone."""
    return entry.status == FAILED or entry.built is None


def is_dead(entry: Release) -> bool:
    """An attempt that died: `staged` and never built."""
    return entry.status == STAGED and entry.built is None


def with_active(index: ReleaseIndex, release: str, now: datetime, rollback: bool = False) -> ReleaseIndex:
    """The index once the link holds `release`: it is `active`, and the release active before
    is `superseded`, or `rolled_back` when this switch returns from it (never returned to
    again, removed at the next switch). Already active: the index unchanged. A release that
    failed or was never completely built is refused (invalid_config) before the switch."""
    entry = index.by_id(release)
    if entry is None:
        raise DistributorError("invalid_config", "%s holds no release %s; distributor_state_info lists those it holds"
                               % (index.bundle_path, visible(release)))
    if entry.status == ACTIVE:
        return index
    if is_failed_or_unbuilt(entry):
        why = "failed" if entry.status == FAILED else "was never completely built"
        raise DistributorError("invalid_config", "release %s of %s %s, so it cannot be activated; only a completely "
                               "built release can" % (release, index.bundle_path, why))
    before = index.active
    changed = (replace(entry, status=ACTIVE, activated=format_rfc3339(now)),)
    if before is not None:
        changed += (replace(before, status=ROLLED_BACK if rollback else SUPERSEDED),)
    return _with(index, *changed)


def with_failed(index: ReleaseIndex, ids) -> ReleaseIndex:
    """The index with the attempts `ids` (dead ones, or one that failed now) marked `failed`:
    removed at the next switch, never activated, never counted as a good release."""
    entries = [_listed(index, release) for release in ids]
    if any(entry.status == ACTIVE for entry in entries):
        raise ValueError("the active release is never marked failed")
    return _with(index, *(replace(entry, status=FAILED) for entry in entries))


def chosen(index: ReleaseIndex, release: str) -> Release:
    """The release distributor_release is asked for: `previous`, or an id the index lists. Its
    status is judged by `with_active` (a failed or unbuilt one is refused there)."""
    if release == "previous":
        return previous(index)
    entry = index.by_id(release) if RELEASE_ID_PATTERN.match(release) else None
    if entry is None:
        raise DistributorError("invalid_config", "release: %s is not a release of %s (an id such as %s, or previous); "
                               "distributor_state_info lists those it holds" % (
                                   visible(release[:SHOWN_LIMIT]), index.bundle_path,
                                   index.releases[-1].id if index.releases else "20261206T053000Z-0123456789ab"))
    return entry


def previous(index: ReleaseIndex) -> Release:
    """The release `release: previous` returns to: the newest `superseded` one older than the
    active one. A release rolled back from is `rolled_back`, a failed one `failed`: neither
    is ever returned to. None to return to is no_release: nothing in the configuration is wrong,
    the destination holds no such release."""
    found = earlier_good(index)
    if found is None:
        active = index.active
        if not index.releases:
            why = "it holds no release yet; a publish with releases makes the first one"
        elif active is None:
            why = "no release of it is active; name the one to activate by id (distributor_state_info lists them)"
        else:
            why = "every release older than the active %s failed, was rolled back from or was removed" % active.id
        raise DistributorError("no_release", "%s has no earlier good release to return to: %s" % (index.bundle_path, why))
    return found


def fleet_target(indexes: dict, release: str) -> str:
    """The one release a fleet (`indexes`: each destination's index, by destination id) switches
    every destination to. An id must be one each destination holds, built and not failed; else
    invalid_config naming each destination that cannot and why. `previous` needs one active
    release across the fleet (a mixed fleet is a conflict naming each destination's, to be
    settled by naming an id), then is the newest good release older than it that every
    destination holds (`superseded`, built: what `previous` returns to on one destination);
    none is no_release."""
    if release != "previous":
        refusals = ["%s %s" % (where, why) for where, why in sorted(
            (where, _why_not(index, release)) for where, index in indexes.items()) if why]
        if refusals:
            raise DistributorError("invalid_config", "release: %s cannot be activated on every destination of the fleet, so "
                                   "none was switched: %s" % (visible(release[:SHOWN_LIMIT]), "; ".join(refusals)))
        return release
    actives = {where: index.active.id if index.active else None for where, index in indexes.items()}
    if len(set(actives.values())) > 1:
        raise DistributorError("conflict", "the destinations of the fleet serve different releases (%s), so there is no one "
                               "release before theirs to return to; name the release to switch every destination to "
                               "(release: <id>)" % _each(actives))
    active = next(iter(actives.values()), None)
    if active is None:
        raise DistributorError("no_release", "no release of the fleet is active, so none is earlier; name the one to "
                               "activate by id (distributor_state_info lists them)")
    good = [{entry.id for entry in index.releases if entry.status == SUPERSEDED and entry.built is not None and entry.id < active}
            for index in indexes.values()]
    common = set.intersection(*good)
    if not common:
        raise DistributorError("no_release", "no good release older than the active %s is held by every destination of "
                               "the fleet (%s), so there is none to return to together" % (
                                   active, _each({where: ", ".join(sorted(ids)) or "none"
                                                  for where, ids in zip(indexes, good)})))
    return max(common)


def _why_not(index: ReleaseIndex, release: str) -> str | None:
    """Why one destination cannot activate `release`, in a fleet's refusal; None when it can."""
    entry = index.by_id(release) if RELEASE_ID_PATTERN.match(release) else None
    if entry is None:
        return "does not hold it"
    if entry.status == FAILED:
        return "holds it failed"
    return "holds it never completely built" if entry.built is None else None


def _each(by_destination: dict) -> str:
    return ", ".join("%s: %s" % (where, value or "none") for where, value in sorted(by_destination.items()))


def removable_releases(index: ReleaseIndex, keep: int) -> tuple[str, ...]:
    """The releases to remove after a switch: every `failed` and `rolled_back` one, every
    `staged` one older than the active (a preview overtaken), and `superseded` ones beyond the
    newest `keep - 1`, so `keep` good releases stay with the active one. Never the active
    release nor `previous`, whatever `keep`."""
    if keep < 1:
        raise ValueError("keep is at least 1, not %r" % (keep,))
    active, before = index.active, earlier_good(index)
    spared = {entry.id for entry in (active, before) if entry is not None}
    superseded = [entry.id for entry in index.releases if entry.status == SUPERSEDED]
    kept = set(superseded[max(0, len(superseded) - (keep - 1)):])
    return tuple(entry.id for entry in index.releases if entry.id not in spared and (
        entry.status in (FAILED, ROLLED_BACK)
        or (entry.status == STAGED and active is not None and entry.id < active.id)
        or (entry.status == SUPERSEDED and entry.id not in kept)))


def without_releases(index: ReleaseIndex, ids) -> ReleaseIndex:
    """The index without the releases `ids`, once their generations are gone: an entry leaves
    with its generation, so the index stays as small as what is kept."""
    gone = set(ids)
    return replace(index, releases=tuple(entry for entry in index.releases if entry.id not in gone))


def dead_releases(index: ReleaseIndex) -> tuple[Release, ...]:
    """Attempts that died (is_dead). Found under the lock, where no other attempt can be
    building, so each is marked failed and what it made is recovered."""
    return tuple(entry for entry in index.releases if is_dead(entry))


def earlier_good(index: ReleaseIndex) -> Release | None:
    """previous's answer, or None when there is none (listings, not a request)."""
    active = index.active
    if active is None:
        return None
    return next((entry for entry in reversed(index.releases) if entry.status == SUPERSEDED and entry.id < active.id), None)


def _listed(index: ReleaseIndex, release: str) -> Release:
    entry = index.by_id(release)
    if entry is None:
        raise ValueError("release %r is not in the index" % (release,))
    return entry


def _with(index: ReleaseIndex, *changed: Release) -> ReleaseIndex:
    """The index with `changed` entries in place of those of the same ids."""
    by_id = {entry.id: entry for entry in changed}
    return replace(index, releases=tuple(by_id.get(entry.id, entry) for entry in index.releases))
