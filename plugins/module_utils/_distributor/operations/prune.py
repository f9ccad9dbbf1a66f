# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Prune: delete the selected owner's managed outputs that the destination's retention expires.

Only paths recorded for that owner are ever candidates, so unmanaged files, other owners' outputs
and `.distributor.json` cannot be selected. Files are deleted before the record is rewritten: if a
run dies in between, the record names files that are gone, and the next prune (or
reconcile-state) forgets them, so every order of failures converges.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime, timedelta

from ..planning import report
from ..planning.authorship import check_authorship
from ..budget import Mapped
from ..planning.changes import forget_changes
from ..records.config import Destination, Retention, parse_destination, render_url
from ..planning.digest import check_expected, forget_facts, plan_digest
from ..errors import DistributorError
from ..planning.invalidation import invalidation_paths
from ..limits import UNLIMITED
from ..paths import STATE_NAME
from .managed_root import ManagedRoot, Selector, open_managed_root, parse_created
from .reconcile import forget
from ..records.state import Output, serialize_state, state_to_dict
from ..storage.select import open_storage
from ..timestamps import parse_rfc3339, utc_now
from ..urls import output_url


def select_expired(outputs, retention: Retention, now: datetime) -> list[Output]:
    """The outputs retention removes, by path: the union of those older than `max_age` (age over
    `updated_at`, strictly greater) and, per owner, those beyond the newest `max_outputs`.

    Equal `updated_at` values are common (one publication stamps all its outputs alike), so the
    newest-first order breaks ties by path: which outputs survive never depends on record order.
    """
    expired = set()
    if retention.max_age_seconds is not None:
        cutoff = now - timedelta(seconds=retention.max_age_seconds)
        expired.update(o for o in outputs if parse_rfc3339(o.updated_at) < cutoff)
    if retention.max_outputs is not None:
        by_owner = defaultdict(list)
        for output in outputs:
            by_owner[output.owner].append(output)
        for group in by_owner.values():
            newest_first = sorted(group, key=lambda o: (-parse_rfc3339(o.updated_at).timestamp(), o.path))
            expired.update(newest_first[retention.max_outputs:])
    return sorted(expired, key=lambda o: o.path)


def prune(pipeline_id: str, destination: dict, *, selector: Selector = Selector(), check_mode: bool = False,
          lock_timeout: float = 60.0, now: datetime | None = None, opener=open_storage,
          expect_plan_digest: str | None = None, result_limit: int = UNLIMITED) -> dict:
    """Apply retention to the selected owner; check mode reports the plan and touches nothing.
    With `expect_plan_digest` a run whose plan digest differs fails (plan_changed) before deleting.
    `result_limit` bounds the `diff` listing; the lists are whole, with the `plan` facts beside
    them (as publish returns them).

    A planned output whose file is already gone loses its record too (it is not in `deleted`):
    otherwise it would be planned again by every later run and prune would never settle. One
    whose file distributor cannot vouch it wrote (authorship.py) fails the run, `unmanaged`,
    before anything is deleted, in check mode too.
    """
    now = now or utc_now()
    destination_cfg = parse_destination(destination)
    retention = destination_cfg.retention
    if retention.max_age_seconds is None and retention.max_outputs is None:
        raise DistributorError(
            "invalid_config",
            "destination %s: retention is not configured; set retention.max_age and/or "
            "retention.max_outputs to say what prune deletes" % destination_cfg.id,
        )
    with open_managed_root(pipeline_id, destination_cfg, selector, lock_timeout, check_mode, opener) as root:
        mine = root.state.outputs_of(root.key)
        planned = select_expired(mine, retention, now)
        after = forget(root.state, planned, now) if planned else root.state
        deleted = [o.path for o in planned if o.path in root.present]
        facts = forget_facts("prune", root.bundle_path, root.key, root.state, (root.key,), planned, deleted)
        digest, changes = plan_digest(facts), forget_changes(planned)
        check_expected(expect_plan_digest, facts, digest, changes)
        check_authorship(deleted, root.storage.doubt_files, root.storage.describe(), "prune would delete")
        base_url = _base_url(destination_cfg, root, selector) if planned else None
        if planned and not check_mode:
            deleted = root.storage.delete_many(o.path for o in planned)
            root.storage.write_bytes(STATE_NAME, serialize_state(after))
    gone = {o.path for o in planned}
    removed = set(deleted)
    stale = invalidation_paths((output_url(base_url, o.path) for o in planned if o.path in removed),
                               destination_cfg.invalidation_limit)
    return {
        "changed": bool(planned),
        "bundle_path": root.bundle_path,
        "planned": sorted(gone),
        "deleted": sorted(deleted),
        "deleted_count": len(removed),
        "invalidation_paths": stale,
        "kept": sorted(o.path for o in mine if o.path not in gone),
        "state": state_to_dict(after, Mapped),
        "plan_digest": digest,
        "plan": facts,
        "changes": changes,
        "diff": report.diff(root.state, after, root.storage.describe(STATE_NAME), result_limit),
        "warnings": root.storage.warnings + root.warnings,
    }


def _base_url(destination: Destination, root: ManagedRoot, selector: Selector) -> str | None:
    """`links.base_url` as a publish of this owner renders it, for the URLs of what prune deletes
    (made from their paths, never read from their records): placeholders filled from the
    selector, else from the source this owner last published, as recorded. Rendered before
    anything is deleted, so a base URL that cannot be rendered fails the run before it acts."""
    if not destination.base_url:
        return None
    owner = root.state.owner(root.key)
    source_id = selector.source_id or (owner.manifest.id if owner else None)
    created = parse_created(selector.created) or (owner.manifest.created_at if owner else None)
    return render_url(destination, root.key.pipeline_id, source_id, created)
