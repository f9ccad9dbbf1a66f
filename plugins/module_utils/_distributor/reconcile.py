# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""State repair ("reconcile-state"): forget managed outputs that are gone from storage.

Repair only ever shrinks a valid record to what storage holds. It never validates digests, deletes
files, adopts unmanaged entries or rewrites state it cannot trust (invalid, or another owner's),
because each of those would need a judgement only a person or a publish can make.

`open_managed_root` is shared with prune: both act on an existing record of one selected owner,
opened the same way and refused for the same reasons.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Iterator

from . import report
from .changes import forget_changes
from .config import Destination, parse_destination, render_bundle_path
from .digest import check_expected, forget_facts, plan_digest
from .errors import DistributorError
from .paths import JOURNAL_NAME, STATE_NAME
from .root import inspect, opened
from .state import SHARED_ROOT, Output, OwnerKey, State, schema_version_for, serialize_state, state_to_dict
from .storage.base import Storage
from .storage.select import open_storage
from .timestamps import format_rfc3339, parse_rfc3339, utc_now
from .version import COLLECTION_VERSION


@dataclass(frozen=True)
class Repair:
    owners: tuple[OwnerKey, ...]
    missing: tuple[Output, ...]
    unmanaged: tuple[str, ...]
    before: State
    after: State

    @property
    def changed(self) -> bool:
        return bool(self.missing)


def check_owner(state: State | None, state_error: DistributorError | None, key: OwnerKey,
                destination: Destination, where: str) -> State:
    """The record both operations may act on, or the failure that says why not.

    No record fails rather than succeeding quietly: it almost always means a wrong `path` or
    `created`, and success would hide that. Its reason is `unmanaged`, the contract's word for a
    root without state, so automation can tell it from a corrupt record (`invalid_state`), which
    needs a person. A record of another owner (or a shared root opened as
    single-owner, which publish refuses too) is `conflict`, as in publish. The owner's own
    single-owner state under a shared_root configuration is accepted and kept single-owner:
    converting it is the next publish's migration, not a repair.
    """
    if state_error is not None:
        raise DistributorError(
            "invalid_state",
            state_error.message + "; distributor never rewrites invalid state: repair the file or restore it from backup",
        )
    if state is None:
        raise DistributorError(
            "unmanaged",
            "%s does not exist: distributor manages nothing there. Check destination.path and created, "
            "or publish first" % where,
        )
    if state.mode == SHARED_ROOT and not destination.shared_root:
        raise DistributorError(
            "conflict",
            "%s holds shared_root state but destination %s is configured single_owner; set "
            "state.mode: shared_root" % (where, destination.id),
        )
    if state.mode != SHARED_ROOT and state.owners[0].key != key:
        raise DistributorError(
            "conflict",
            "%s belongs to pipeline %s and destination %s, not %s and %s; distributor never rewrites "
            "another owner's state" % (where, *state.owners[0].key, *key),
        )
    return state


def reconcile_plan(state: State, key: OwnerKey, all_owners: bool, present: frozenset, now: datetime) -> Repair:
    """Which records of the checked owners name files that are gone, and the state without them.

    `present` holds the non-reserved files under the bundle path. Unmanaged entries are reported
    against every owner's records, even when only one owner is checked: a path another owner
    manages is not unmanaged.
    """
    owners = tuple(o.key for o in state.owners) if all_owners else tuple(o.key for o in state.owners if o.key == key)
    missing = tuple(o for o in state.outputs if o.owner in owners and o.path not in present)
    unmanaged = tuple(sorted(present - set(state.by_path())))
    if not missing:
        return Repair(owners, (), unmanaged, state, state)
    return Repair(owners, missing, unmanaged, state, forget(state, missing, now))


def forget(state: State, outputs, now: datetime) -> State:
    """`state` without the records of `outputs`, stamped as updated now. Owner records, links and
    `published_at` stay: forgetting outputs is not a publication."""
    gone = {o.path for o in outputs}
    return replace(
        state,
        schema_version=schema_version_for(state.mode),
        outputs=tuple(o for o in state.outputs if o.path not in gone),
        updated_at=format_rfc3339(now),
        distributor_version=COLLECTION_VERSION,
    )


@dataclass(frozen=True)
class ManagedRoot:
    storage: Storage
    key: OwnerKey
    bundle_path: str
    state: State
    present: frozenset
    warnings: list


def parse_created(created: str | None) -> datetime | None:
    if created is None:
        return None
    try:
        return parse_rfc3339(created)
    except ValueError as exc:
        raise DistributorError("invalid_config", "created: %s" % exc) from exc


@contextmanager
def open_managed_root(pipeline_id: str, destination: Destination, selector: tuple, lock_timeout: float,
                      check_mode: bool, opener) -> Iterator[ManagedRoot]:
    """Open the selected root under its lock and read the record the body may act on.
    `selector` is (source_id, created): what fills the bundle path's placeholders."""
    source_id, created = selector
    bundle_path = render_bundle_path(destination, pipeline_id, source_id, parse_created(created))
    with opened(destination, bundle_path, lock_timeout, check_mode, opener) as storage:
        where = storage.describe(STATE_NAME)
        state, state_error, journal, present = inspect(storage)
        key = OwnerKey(pipeline_id, destination.id)
        state = check_owner(state, state_error, key, destination, where)
        warnings = []
        if state.owner(key) is None:
            warnings.append("owner %s has no record in %s" % (key, where))
        if journal is not None:
            warnings.append(
                "%s records an interrupted publish (attempt %s); its unrecorded outputs are left for "
                "the next publish to remove" % (storage.describe(JOURNAL_NAME), journal.token))
        yield ManagedRoot(storage, key, bundle_path, state, present, warnings)


def owner_to_dict(key: OwnerKey) -> dict:
    return {"pipeline_id": key.pipeline_id, "destination_id": key.destination_id}


def reconcile_state(pipeline_id: str, destination: dict, *, all_owners: bool = False, selector: tuple = (None, None),
                    check_mode: bool = False, lock_timeout: float = 60.0, now: datetime | None = None,
                    opener=open_storage, expect_plan_digest: str | None = None) -> dict:
    """Repair one root's record; check mode reports the same repair without writing it. With
    `expect_plan_digest` a run whose plan digest differs fails (plan_changed) before writing."""
    now = now or utc_now()
    with open_managed_root(pipeline_id, parse_destination(destination), selector, lock_timeout, check_mode, opener) as root:
        repair = reconcile_plan(root.state, root.key, all_owners, root.present, now)
        facts = forget_facts("reconcile_state", root.bundle_path, root.key, root.state, repair.owners, repair.missing, ())
        digest, changes = plan_digest(facts), forget_changes(repair.missing)
        check_expected(expect_plan_digest, facts, digest, changes)
        if repair.changed and not check_mode:
            root.storage.write_bytes(STATE_NAME, serialize_state(repair.after))
    return {
        "changed": repair.changed,
        "bundle_path": root.bundle_path,
        "owners": [owner_to_dict(k) for k in repair.owners],
        "missing": sorted(o.path for o in repair.missing),
        "unmanaged": list(repair.unmanaged),
        "state": state_to_dict(repair.after),
        "plan_digest": digest,
        "changes": changes,
        "diff": report.diff(repair.before, repair.after, root.storage.describe(STATE_NAME)),
        "warnings": root.warnings,
    }
