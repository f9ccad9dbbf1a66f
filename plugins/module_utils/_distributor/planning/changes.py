# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The `changes` a result carries: one entry per affected path, so a reviewer and a playbook read
one list instead of piecing together `written`, `deleted` and two state listings.

Pure functions of a plan and of what the shell read; the same entries go into the plan digest.
"""

from __future__ import annotations

from .plan import Plan


def change(path: str, kind: str, owner, previous_owner, before: str | None, after: str | None) -> dict:
    """`owner` is who manages the path after the change (for a delete: whom it is deleted from);
    `previous_owner` who managed it before (None: nobody)."""
    return {
        "path": path,
        "change": kind,
        "owner": str(owner) if owner is not None else None,
        "previous_owner": str(previous_owner) if previous_owner is not None else None,
        "before": before,
        "after": after,
    }


def publish_changes(the_plan: Plan, present: frozenset | None) -> list[dict]:
    """Each written path is a `create` (nobody managed it and nothing is there), an `update`
    (this owner managed it), a `take_over` (another owner did) or a `force_overwrite` (an
    unmanaged file is there); a planned path another owner managed that needs no write is a
    `take_over` too (only its record changes hands). Each deleted path is a `delete`; each output
    `verify` found drifted or missing and rewrites as recorded is a `repair`; each output whose bytes
    stay and whose storage settings change in place is a `settings` change.

    `present` is None only when the root was not listed, which happens only for plans that write
    and delete nothing."""
    key = the_plan.owner
    base = the_plan.decision.state
    others = others_before(base, key)
    # A skip's records need no index by path: 100,000 of them cost 0.03 s to index.
    touches = the_plan.writes or the_plan.resettles or the_plan.deletes or others
    previous = base.by_path() if base and touches else {}
    entries = {}
    for write in the_plan.writes:
        old = previous.get(write.path)
        if old is None:
            kind = "force_overwrite" if write.path in (present or ()) else "create"
        else:
            kind = "update" if old.owner == key else "take_over"
        entries[write.path] = change(write.path, kind, key, old.owner if old else None, old.sha256 if old else None,
                                     write.content.sha256)
    for record in the_plan.outputs() if others else ():
        old = previous.get(record.path)
        if record.path not in entries and old is not None and old.owner != key:
            entries[record.path] = change(record.path, "take_over", key, old.owner, old.sha256, record.sha256)
    for write in the_plan.repairs:
        entries[write.path] = change(write.path, "repair", key, key, write.content.sha256, write.content.sha256)
    for write in the_plan.resettles:
        old = previous[write.path]
        entries[write.path] = change(write.path, "settings" if old.owner == key else "take_over", key, old.owner,
                                     old.sha256, write.content.sha256)
    for path in the_plan.deletes:
        old = previous.get(path)
        entries[path] = change(path, "delete", old.owner if old else None, old.owner if old else None,
                               old.sha256 if old else None, None)
    return [entries[p] for p in sorted(entries)]


def others_before(state, key) -> bool:
    """Whether another owner than `key` has a record in `state`: only then can a planned output
    be taken over, which is worth a look at each of 100,000 outputs. Told by the owners' records,
    not by indexing every output's owner: parse_state refuses an output whose owner has none."""
    return state is not None and any(owner.key != key for owner in state.owners)


def forget_changes(records) -> list[dict]:
    """prune and reconcile-state: each removed record is a `delete` of the path from its owner
    (prune also deletes the file when it is there)."""
    return [change(o.path, "delete", o.owner, o.owner, o.sha256, None) for o in sorted(records, key=lambda o: o.path)]
