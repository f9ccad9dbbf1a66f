# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""State repair ("reconcile-state"): forget managed outputs that are gone from storage.

Repair only ever shrinks a valid record to what storage holds. It never validates digests, deletes
files, adopts unmanaged entries or rewrites state it cannot trust (invalid, or another owner's),
because each of those would need a judgement only a person or a publish can make.

It opens its root with prune's `operations.managed_root.open_managed_root`: both act on an existing record of
one selected owner, opened the same way and refused for the same reasons.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime

from ..planning import report
from ..budget import Mapped
from ..planning.changes import forget_changes
from ..records.config import parse_destination
from ..planning.digest import check_expected, forget_facts, plan_digest
from ..limits import UNLIMITED
from .managed_root import Selector, open_managed_root
from ..paths import STATE_NAME
from ..records.state import Output, OwnerKey, State, schema_version_for, serialize_state, state_to_dict
from ..storage.select import open_storage
from ..timestamps import format_rfc3339, utc_now
from ..version import COLLECTION_VERSION


@dataclass(frozen=True)
class Repair:
    """What reconcile-state does, as data: the records of vanished files it forgets, the
    unmanaged files it reports, and the state before and after; check mode shows it unwritten."""

    owners: tuple[OwnerKey, ...]
    missing: tuple[Output, ...]
    unmanaged: tuple[str, ...]
    before: State
    after: State

    @property
    def changed(self) -> bool:
        """Only forgetting a record changes the root; unmanaged files are reported, never touched."""
        return bool(self.missing)


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


def owner_to_dict(key: OwnerKey) -> dict:
    """An owner key as the result shows it, in the state file's field names."""
    return {"pipeline_id": key.pipeline_id, "destination_id": key.destination_id}


def reconcile_state(pipeline_id: str, destination: dict, *, all_owners: bool = False, selector: Selector = Selector(),
                    check_mode: bool = False, lock_timeout: float = 60.0, now: datetime | None = None,
                    opener=open_storage, expect_plan_digest: str | None = None, result_limit: int = UNLIMITED) -> dict:
    """Repair one root's record; check mode reports the same repair without writing it. With
    `expect_plan_digest` a run whose plan digest differs fails (plan_changed) before writing.
    `result_limit` bounds the `diff` listing; the lists are whole, with the `plan` facts beside
    them (as publish returns them)."""
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
        "state": state_to_dict(repair.after, Mapped),
        "plan_digest": digest,
        "plan": facts,
        "changes": changes,
        "diff": report.diff(repair.before, repair.after, root.storage.describe(STATE_NAME), result_limit),
        "warnings": root.storage.warnings + root.warnings,
    }
