# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""distributor_release: switch a bundle path to a release it already holds, forward or back.

Nothing is uploaded: the generation is there, whole, with its own record. The switch is the one
rename a publish ends with, after the same look a publish's switch relies on (every output its
record names is there at its recorded size), so a generation someone emptied is refused, not
served. A rollback marks the release it leaves `rolled_back`: `previous` never returns to it.
"""

from __future__ import annotations

from datetime import datetime

from ..records.config import parse_destination, render_bundle_path
from ..planning.digest import PLAN_FORMAT, check_expected, plan_digest
from ..errors import DistributorError
from .managed_root import Selector, parse_created
from ..releases.build import check_whole, switch
from ..releases.home import ReleaseRoot, opened_release
from ..releases.index import release_to_dict
from ..releases.rules import chosen, earlier_good
from ..execution.root import read_state
from ..storage.select import open_storage
from ..timestamps import utc_now


def switch_release(pipeline_id: str, destination: dict, release: str, *, selector: Selector = Selector(),
                   check_mode: bool = False, lock_timeout: float = 60.0, now: datetime | None = None,
                   opener=open_storage, expect_plan_digest: str | None = None) -> dict:
    """Make `release` (an id, or `previous`) the live one; check mode says what would change.
    With `expect_plan_digest` a run whose plan differs fails (plan_changed) before switching."""
    now = now or utc_now()
    destination_cfg = parse_destination(destination)
    if destination_cfg.releases is None:
        raise DistributorError("invalid_config", "destination %s has no releases setting: distributor_release switches "
                               "the releases of a destination in release mode" % destination_cfg.id)
    bundle_path = render_bundle_path(destination_cfg, pipeline_id, selector.source_id, parse_created(selector.created))
    with opened_release(destination_cfg, bundle_path, lock_timeout, check_mode, opener) as root:
        if root.plain:
            raise DistributorError("no_release", "%s is a plain directory, not in release mode: it holds no release to switch to. "
                                   "Publish once with releases.convert: true to make the directory the first release "
                                   "(docs/config.md, releases)" % root.parent.describe(root.name))
        target = chosen(root.index, release)
        rollback = root.live is not None and target.id < root.live
        owners = affected_owners(root, target.id)
        facts = {"plan_format": PLAN_FORMAT, "operation": "release", "bundle_path": bundle_path, "from": root.live,
                 "to": target.id, "rollback": rollback, "owners": owners}
        digest = plan_digest(facts)
        changed = target.id != root.live
        changes = [{"release": target.id, "change": "rollback" if rollback else "activate"}] if changed else []
        check_expected(expect_plan_digest, facts, digest, changes)
        before = root.live
        if changed:
            check_whole(root, target.id, "size")
            root.parent.require_switch()
            if not check_mode:
                switch(root, target.id, now, rollback)
        releases = [release_to_dict(entry) for entry in root.index.releases]
        back = earlier_good(root.index)
    return {
        "changed": changed,
        "bundle_path": bundle_path,
        "release": target.id,
        "from": before,
        "rollback": rollback,
        "owners": owners,
        "previous": back.id if back else None,
        "releases": releases,
        "plan_digest": digest,
        "plan": facts,
        "changes": changes,
        "diff": {"before": "release: %s\n" % before, "after": "release: %s\n" % target.id,
                 "before_header": bundle_path, "after_header": bundle_path},
        "warnings": root.parent.warnings,
    }


def affected_owners(root: ReleaseRoot, release: str) -> list[str]:
    """The owners whose published source differs between the live generation and `release`:
    in a shared root a switch replaces every owner's tree, so the result names whose changes."""
    def sources(state) -> dict:
        return {str(o.key): o.manifest.digest for o in state.owners} if state else {}
    now = sources(read_state(root.generation(root.live))[0]) if root.live else {}
    then = sources(read_state(root.generation(release))[0])
    return sorted(k for k in set(now) | set(then) if now.get(k) != then.get(k))
