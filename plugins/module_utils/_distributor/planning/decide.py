# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The contract's comparison table: what a publish does, decided from data alone.

`decide` reads no storage and imports nothing that does. The shell hands it the parsed state (or
the error that parsing raised), the non-reserved files present under the bundle path, and the
planned output paths. Each row of "Comparison Semantics" is one branch below, with the contract's
words in its reason.

A decision is made in two phases, as the contract's order of work has it: `decide_from_state`
decides what the record alone settles (a skip, a migration of an unchanged source, a failure),
so a skip of a large bundle costs no listing, and returns the rest, which the listing of the
bundle path finishes (`decide` makes both phases at once). Each mode's rows return either a Decision or the rest of the comparison as a function of
the listing, so no row can read the listing before it exists.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from itertools import compress
from operator import attrgetter, ne
from typing import Callable, Mapping

from ..records.attributes import attributes_for
from ..records.config import Destination
from ..errors import DistributorError
from ..records.manifest import Manifest
from .ownership import identity_mismatch, may_take_over, refuse_shared_state_at_single_owner
from ..paths import in_the_way
from ..records.state import Output, Owner, OwnerKey, State, to_shared
from ..vocabulary import SINGLE_OWNER

SHOWN = 5
_path, _attributes = attrgetter("path"), attrgetter("attributes")


@dataclass(frozen=True)
class Decision:
    """What a publish does, as the plan needs it. `reconciliation` is what the plan applies
    (takeover and forced replacement always replace); `rewrites_outputs` is False when the plan
    writes the state record only (a skip, or a migration whose source is unchanged), so nothing
    is rendered; `taken_over` names the paths that move to this owner from another and `forced`
    the unmanaged paths force overwrites or deletes. `state` is the state the plan builds on
    (already migrated to schema 3 when `action` is migrate)."""

    action: str
    reason: str
    reconciliation: str = "replace"
    state: State | None = None
    taken_over: frozenset = frozenset()
    forced: frozenset = frozenset()
    rewrites_outputs: bool = True


# The rows that still need the listing: the files present under the bundle path in, the Decision out.
AfterListing = Callable[[frozenset], Decision]
# Refusals force turns into a replacement of a single-owner bundle path.
_FORCEABLE = ("conflict", "unmanaged", "invalid_state")


def _some(paths) -> str:
    ordered = sorted(paths)
    more = " and %d more" % (len(ordered) - SHOWN) if len(ordered) > SHOWN else ""
    return ", ".join(ordered[:SHOWN]) + more


def _unmanaged(paths, where: str) -> DistributorError:
    return DistributorError(
        "unmanaged",
        "%s holds content distributor does not manage (%s); distributor never overwrites or deletes "
        "it. Move it away, or publish with force: true to replace the bundle path." % (where, _some(paths)),
    )


def same_source(recorded: Manifest, new: Manifest) -> bool:
    """Whether the recorded source is the new one. The state's manifest is often the very object
    parsed from the bundle (parse_manifest remembers a valid one), which needs no comparison of
    100,000 entries; nor does a new version, whose digest differs (the digest is one of the
    fields compared)."""
    return recorded is new or (recorded.digest == new.digest and recorded.to_dict() == new.to_dict())


def compare_sources(recorded: Manifest, new: Manifest, destination: Destination) -> tuple[bool, str]:
    """(update?, why) for one owner whose recorded source has the same id as the new one."""
    if same_source(recorded, new):
        return False, "the destination already holds source %s (%s)" % (new.id, new.digest)
    if recorded.created_at < new.created_at:
        return True, "source %s created %s is newer than the recorded %s" % (new.id, new.created, recorded.created)
    if recorded.created_at > new.created_at:
        if destination.on_destination_newer == "replace":
            return True, "the destination holds a newer %s (%s) and transfer.on_destination_newer is replace" % (new.id, recorded.created)
        return False, "the destination holds a newer %s (created %s, this one %s); transfer.on_destination_newer is skip" % (
            new.id, recorded.created, new.created)
    if destination.on_conflict == "replace":
        return True, "source %s has the recorded created time but another digest and transfer.on_conflict is replace" % new.id
    raise DistributorError(
        "conflict",
        "source %s created %s has digest %s but the destination recorded %s for the same id and time; "
        "a bundle must not change without a new created time. Set transfer.on_conflict: replace to "
        "overwrite." % (new.id, new.created, new.digest, recorded.digest),
    )


def page_settings_changed(record: Output, render_key: str) -> bool:
    """Whether the output recorded by `record` is no page rendered with the page settings whose
    key is `render_key` now: a stylesheet, a template or the renderer changed, or the record is
    of a copy. A page record without a render key was written before render keys existed
    (schema 1, earlier versions) and cannot tell: it is a match, as the contract has it for a
    matching embedded source manifest ("skip"), so an upgrade alone renders nothing. Its key is
    recorded on the next write of its outputs, which renders the page (publish.reusable)."""
    if record.render_key is None and record.kind == "generated":
        return False
    return record.render_key != render_key


def settings_changed(state: State, key: OwnerKey, destination: Destination, page_keys: dict) -> tuple[bool, str]:
    """(changed?, why): whether any output of owner `key` was written with other storage
    settings (modes, ownership, S3 object settings) than the destination now configures, or
    with other page settings than the pipeline's now (page_settings_changed, against the render
    key `page_keys` gives its path). An unchanged source is then no skip."""
    configured = attributes_for(destination.storage)
    mine = state.outputs_of(key)
    paths = list(map(_path, mine))
    resettled = list(compress(paths, map(ne, map(_attributes, mine), map(configured, paths))))
    rendered = [o.path for o in mine if o.path in page_keys and page_settings_changed(o, page_keys[o.path])] if page_keys else []
    why = []
    if resettled:
        why.append("the storage settings of %s changed" % _some(resettled))
    if rendered:
        why.append("the page settings of %s changed" % _some(rendered))
    return bool(why), "; ".join(why)


def decide_from_state(
    *,
    manifest: Manifest,
    key: OwnerKey,
    destination: Destination,
    state: State | None,
    state_error: DistributorError | None,
    planned: frozenset,
    force: bool,
    where: str,
    page_keys: dict | None = None,
) -> Decision | AfterListing:
    """The decision the record alone settles, before the root is listed; when it needs the
    listing (every decision that writes outputs does), the rest of it as a function of the
    listing, which `decide` would make again (for a shared root, other owners' paths in the
    way: 0.05 s at 100,000 outputs). Raises the failures the record shows, so a skip, a
    migration of an unchanged source or a conflict costs no listing of a large root.
    `page_keys` maps each planned page to the render key the pipeline now gives it (see
    settings_changed)."""
    return _from_state(manifest, key, destination, state, state_error, planned, force, where, page_keys or {})


def decide(
    *,
    manifest: Manifest,
    key: OwnerKey,
    destination: Destination,
    state: State | None,
    state_error: DistributorError | None,
    present: frozenset,
    planned: frozenset,
    force: bool,
    where: str,
    page_keys: dict | None = None,
) -> Decision:
    """The decision for publishing `manifest` as owner `key` with the root listed (`present`:
    the non-reserved files under the bundle path); raises the contract's failures."""
    step = _from_state(manifest, key, destination, state, state_error, planned, force, where, page_keys or {})
    return step if isinstance(step, Decision) else step(present)


def _from_state(manifest, key, destination, state, state_error, planned, force, where, page_keys) -> Decision | AfterListing:
    """The mode's rows up to the point where the listing is needed."""
    if destination.shared_root:
        if state_error is not None:
            raise DistributorError(
                state_error.reason,
                state_error.message + "; a shared root's state cannot be forced over because other "
                "owners' outputs would be lost: repair the file or restore it from backup",
            )
        return _shared_root(manifest, key, destination, state, planned, force, where, page_keys)
    refuse_shared_state_at_single_owner(
        state, destination, where, " or publish elsewhere (force never applies: it would delete other owners' outputs)")
    try:
        if state_error is not None:
            raise state_error
        step = _single_owner(manifest, key, destination, state, planned, where, page_keys)
    except DistributorError as error:
        return _forced(error, state, force)
    if isinstance(step, Decision):
        return step

    def with_listing(present: frozenset) -> Decision:
        try:
            return step(present)
        except DistributorError as error:
            return _forced(error, state, force)(present)

    return with_listing


def _forced(error: DistributorError, state: State | None, force: bool) -> AfterListing:
    """Force replaces a single-owner bundle path over a conflict, unmanaged content or invalid
    state, deleting every unmanaged file there: which ones, only the listing tells."""
    if not (force and error.reason in _FORCEABLE):
        raise error
    managed = set(state.by_path()) if state else set()
    return lambda present: Decision("force_replace", "forced replacement of the bundle path: " + error.message, "replace",
                                    state, forced=frozenset(present - managed))


def _single_owner(manifest, key, destination, state, planned, where, page_keys) -> Decision | AfterListing:
    """The single-owner rows: no state, another identity (takeover), the same source."""
    if state is None:
        return lambda present: _new_bundle_path(present, destination, where)
    owner = state.owners[0]
    mismatch = identity_mismatch(owner, key, manifest)
    if mismatch:
        if not may_take_over(destination):
            raise DistributorError(
                "conflict",
                "%s: %s. Set takeover.mode: managed (or transfer.on_conflict: replace) to take "
                "ownership of its managed outputs." % (where, mismatch),
            )
        return lambda present: _takeover(present, mismatch, state, planned, where)
    compared = _compare_same_source(owner, manifest, key, destination, state, page_keys)
    if isinstance(compared, Decision):
        return compared
    return lambda present: _rewrite(present, compared, destination, state, planned, where)


def _new_bundle_path(present: frozenset, destination: Destination, where: str) -> Decision:
    """No state: publish, unless the bundle path holds content distributor does not manage."""
    if present:
        raise _unmanaged(present, where)
    return Decision("publish", "no state and no content at the bundle path: publish new outputs", destination.reconciliation)


def _takeover(present: frozenset, mismatch: str, state: State, planned: frozenset, where: str) -> Decision:
    """Takeover replaces the previous owner's managed outputs, never unmanaged content."""
    unmanaged = present - set(state.by_path())
    if unmanaged:
        raise _unmanaged(unmanaged, where)
    return Decision("takeover", mismatch + "; takeover replaces its managed outputs", "replace", state,
                    taken_over=frozenset(planned & set(state.by_path())))


def _rewrite(present: frozenset, why: str, destination: Destination, state: State, planned: frozenset, where: str) -> Decision:
    """The same source changed (or its storage settings did): replace refuses any unmanaged
    file, merge only those a planned output would overwrite or that are in its way."""
    managed = state.by_path()
    unmanaged = present - set(managed)
    if destination.reconciliation == "replace":
        if unmanaged:
            raise _unmanaged(unmanaged, where)
        return Decision("replace", why, "replace", state)
    blocking = (unmanaged & planned) | in_the_way(planned, unmanaged)
    if blocking:
        raise _unmanaged(blocking, where)
    _refuse_retained_in_the_way(planned, set(managed) - planned, where)
    return Decision("merge", why, "merge", state)


def _shared_root(manifest, key, destination, state, planned, force, where, page_keys) -> Decision | AfterListing:
    """The contract's shared-root rows, in its order: migrate this owner's own single-owner
    state, compare within the owner's scope, take over colliding paths, refuse what is in the
    way, then (with the listing) unmanaged collisions, which force overwrites."""
    migrated = state is not None and state.mode == SINGLE_OWNER
    if migrated:
        state = _migrated(state, key, where)
    compared = _compare_owner(manifest, key, destination, state, where, page_keys)
    if isinstance(compared, Decision):
        if migrated and compared.action == "skip":
            return replace(compared, action="migrate", reason="single-owner state becomes shared_root state; " + compared.reason)
        return compared
    action, reconciliation, why = compared
    owners = state.owners_by_path() if state else {}
    taken = _taken_over(planned, owners, key, destination, where)
    if taken:
        action, reconciliation = "takeover", "replace"
        why += "; takes over %s" % _some(taken)
    _refuse_other_owners_in_the_way(planned, owners, key, where)
    if reconciliation == "merge":
        _refuse_retained_in_the_way(planned, {p for p, o in owners.items() if o == key} - planned, where)

    def with_listing(present: frozenset) -> Decision:
        unmanaged = present - set(owners)
        unmanaged = (planned & unmanaged) | in_the_way(planned, unmanaged)
        chosen, because = action, why
        if unmanaged:
            if not force:
                raise _unmanaged(unmanaged, where)
            chosen = "force_replace"
            because += "; force overwrites unmanaged %s" % _some(unmanaged)
        if migrated:
            chosen, because = "migrate", "single-owner state becomes shared_root state; " + because
        return Decision(chosen, because, reconciliation, state, taken, unmanaged)

    return with_listing


def _migrated(state: State, key: OwnerKey, where: str) -> State:
    """Only an owner's own single-owner state becomes a shared root."""
    if state.owners[0].key != key:
        raise DistributorError(
            "conflict",
            "%s holds single-owner state of pipeline %s and destination %s; distributor converts "
            "only its own single-owner state to a shared root" % (where, *state.owners[0].key),
        )
    return to_shared(state)


def _compare_owner(manifest, key, destination, state, where, page_keys):
    """The comparison scoped to this owner: a final Decision (a skip, or a migration of an
    unchanged source), or (action, reconciliation, why) for a publish that writes outputs."""
    owner = state.owner(key) if state else None
    if owner is None:
        return "publish", destination.reconciliation, "owner %s is new in this shared root" % (key,)
    if owner.manifest.id != manifest.id:
        if not may_take_over(destination):
            raise DistributorError(
                "conflict",
                "%s: owner %s records source %s, not %s. Set takeover.mode: managed to replace it."
                % (where, key, owner.manifest.id, manifest.id),
            )
        return "takeover", "replace", "owner %s moves from source %s to %s" % (key, owner.manifest.id, manifest.id)
    compared = _compare_same_source(owner, manifest, key, destination, state, page_keys)
    if isinstance(compared, Decision):
        return compared
    return destination.reconciliation, destination.reconciliation, compared


def _compare_same_source(owner: Owner, manifest: Manifest, key: OwnerKey, destination: Destination, state: State,
                         page_keys: dict):
    """An owner whose recorded source has the new one's id: a skip Decision when neither the
    source nor the settings its outputs were written with changed, else why its outputs are
    written. Settings are compared only when the destination holds this very source: an older
    one skipped under on_destination_newer leaves the newer publication's outputs as they are
    (their render keys are of another source), until that source is published again."""
    update, why = compare_sources(owner.manifest, manifest, destination)
    if update:
        return why
    if not same_source(owner.manifest, manifest):
        return Decision("skip", why, destination.reconciliation, state, rewrites_outputs=False)
    resettle, because = settings_changed(state, key, destination, page_keys)
    if not resettle:
        return Decision("skip", why, destination.reconciliation, state, rewrites_outputs=False)
    return why + "; " + because


def _taken_over(planned: frozenset, owners: Mapping, key: OwnerKey, destination: Destination, where: str) -> frozenset:
    """One path has one owner: planned paths another owner manages (`owners`: each managed
    path's owner) move to this one only under takeover.mode managed."""
    taken = frozenset(p for p in planned if p in owners and owners[p] != key)
    if taken and not may_take_over(destination):
        first = sorted(taken)[0]
        raise DistributorError(
            "ownership_conflict",
            "%s: %s is owned by %s (and %d more planned paths by other owners); one path has one "
            "owner. Set takeover.mode: managed to take it over." % (where, first, owners[first], len(taken) - 1),
        )
    return taken


def _refuse_retained_in_the_way(planned: frozenset, retained: set, where: str) -> None:
    """Merge keeps this owner's omitted outputs, but one cannot stay where a planned output
    needs its path as a directory (or inside a directory where a planned file goes)."""
    blocking = in_the_way(planned, retained)
    if blocking:
        raise DistributorError(
            "conflict",
            "%s: merge would retain %s where a planned output needs the path as a directory (or the "
            "other way round), and a path cannot be both; publish once with reconciliation.mode: "
            "replace to drop it" % (where, _some(blocking)),
        )


def _refuse_other_owners_in_the_way(planned: frozenset, owners: Mapping, key: OwnerKey, where: str) -> None:
    """Takeover moves a path from one owner to another; it cannot turn another owner's file into
    this owner's directory, so that is refused whatever the takeover mode."""
    theirs = compress(owners, map(key.__ne__, owners.values()))
    blocking = in_the_way(planned, theirs)
    if blocking:
        first = sorted(blocking)[0]
        raise DistributorError(
            "ownership_conflict",
            "%s: %s of owner %s (and %d more) is in the way of this owner's planned outputs: one "
            "needs the other's path as a directory, and a path cannot be both. Takeover does not "
            "apply; the owners must agree on their paths" % (where, first, owners[first], len(blocking) - 1),
        )
