# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""distributor_release: switch a bundle path to a release it already holds, forward or back.

Nothing is uploaded: the generation is there, whole, with its own record. The switch is the one
rename a publish ends with, after the same look a publish's switch relies on (every output its
record names is there at its recorded size), so a generation someone emptied is refused, not
served. A rollback marks the release it leaves `rolled_back`: `previous` never returns to it. A
forward switch then clears what keep-N no longer keeps, as a publish's switch does. A fleet
(several destinations switched together) is operations.fleet's, built of the same steps.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from ..records.config import Destination, parse_destination, render_bundle_path
from ..planning.digest import PLAN_FORMAT, check_expected, plan_digest
from ..errors import DistributorError
from .managed_root import Selector, parse_created
from ..releases.build import check_whole, clear_old, switch, would_clear_each
from ..releases.home import ReleaseRoot, opened_release
from ..releases.index import release_to_dict
from ..releases.rules import chosen, earlier_good, removable_releases, with_active
from ..execution.root import read_state
from ..storage.select import open_storage
from ..timestamps import utc_now


@dataclass(frozen=True)
class Step:
    """One destination's switch as planned: from `before` to `target`, whether it is a rollback,
    whose outputs change, which releases keep-N then clears, and the facts its digest covers."""

    bundle_path: str
    before: str | None
    target: str
    rollback: bool
    owners: list
    clears: list
    facts: dict

    @property
    def changed(self) -> bool:
        """Whether the link moves: a switch to the release already active changes nothing."""
        return self.target != self.before

    @property
    def changes(self) -> list:
        """The review's one entry per switch, as plan_changed reports it."""
        return [{"release": self.target, "change": "rollback" if self.rollback else "activate"}] if self.changed else []


def switch_release(pipeline_id: str, destination: dict, release: str, *, selector: Selector = Selector(),
                   check_mode: bool = False, lock_timeout: float = 60.0, now: datetime | None = None,
                   opener=open_storage, expect_plan_digest: str | None = None) -> dict:
    """Make `release` (an id, or `previous`) the live one; check mode says what would change.
    With `expect_plan_digest` a run whose plan differs fails (plan_changed) before switching."""
    now = now or utc_now()
    destination_cfg = release_destination(destination)
    bundle_path = render_bundle_path(destination_cfg, pipeline_id, selector.source_id, parse_created(selector.created))
    with opened_release(destination_cfg, bundle_path, lock_timeout, check_mode, opener) as root:
        require_releases(root)
        step = planned(root, destination_cfg, chosen(root.index, release).id, now)
        digest = plan_digest(step.facts)
        check_expected(expect_plan_digest, step.facts, digest, step.changes)
        removed, warnings = [], []
        if step.changed:
            check_whole(root, step.target, "size")
            root.parent.require_switch()
            if not check_mode:
                switch(root, step.target, now, step.rollback)
                removed, warnings = cleared(root, step, destination_cfg)
        releases = [release_to_dict(entry) for entry in root.index.releases]
        values = outcome(root, step, removed if not check_mode else would_clear(root, step))
    return dict(values, **{
        "releases": releases,
        "plan_digest": digest,
        "plan": step.facts,
        "changes": step.changes,
        "diff": {"before": "release: %s\n" % step.before, "after": "release: %s\n" % step.target,
                 "before_header": bundle_path, "after_header": bundle_path},
        "warnings": root.parent.warnings + warnings,
    })


def release_destination(destination: dict) -> Destination:
    """The destination, which must be in release mode."""
    destination_cfg = parse_destination(destination)
    if destination_cfg.releases is None:
        raise DistributorError("invalid_config", "destination %s has no releases setting: distributor_release switches "
                               "the releases of a destination in release mode" % destination_cfg.id)
    return destination_cfg


def require_releases(root: ReleaseRoot) -> None:
    """A plain directory holds no release: converting it is a publish's, never a switch's."""
    if root.plain:
        raise DistributorError("no_release", "%s is a plain directory, not in release mode: it holds no release to switch to. "
                               "Publish once with releases.convert: true to make the directory the first release "
                               "(docs/config.md, releases)" % root.parent.describe(root.name))


def planned(root: ReleaseRoot, destination_cfg: Destination, target: str, now: datetime) -> Step:
    """The switch of `root` to `target`, decided and not yet made. A forward switch clears what
    keep-N no longer keeps once `target` is active (releases.rules.removable_releases)."""
    rollback = root.live is not None and target < root.live
    owners = affected_owners(root, target)
    changed = target != root.live
    after = with_active(root.index, target, now, rollback)
    clears = list(removable_releases(after, destination_cfg.releases.keep)) if changed and not rollback else []
    facts = {"plan_format": PLAN_FORMAT, "operation": "release", "bundle_path": root.bundle_path, "from": root.live,
             "to": target, "rollback": rollback, "owners": owners, "clears": clears}
    return Step(root.bundle_path, root.live, target, rollback, owners, clears, facts)


def cleared(root: ReleaseRoot, step: Step, destination_cfg: Destination) -> tuple[list, list]:
    """(removed ids, warnings) of a forward switch's clearing; a release that holds what no
    record names is kept whole and named, as after a publish's switch."""
    if step.rollback:
        return [], []
    done = clear_old(root, destination_cfg.releases.keep)
    return list(done.removed), ["%s: release %s was kept: it %s" % (step.bundle_path, release, why) for release, why in done.kept]


def would_clear(root: ReleaseRoot, step: Step) -> list:
    """Check mode's `removed`: what the run's clearing removes, each release judged as it judges
    it (one holding what no record names is kept), not every release keep-N lets go."""
    return list(would_clear_each(root, step.clears).removed)


def outcome(root: ReleaseRoot, step: Step, removed: list) -> dict:
    """The result values of one destination's switch."""
    back = earlier_good(root.index)
    return {"changed": step.changed, "bundle_path": step.bundle_path, "release": step.target, "from": step.before,
            "rollback": step.rollback, "owners": step.owners, "previous": back.id if back else None, "removed": removed}


def affected_owners(root: ReleaseRoot, release: str) -> list[str]:
    """The owners whose published source differs between the live generation and `release`:
    in a shared root a switch replaces every owner's tree, so the result names whose changes."""
    def sources(state) -> dict:
        return {str(o.key): o.manifest.digest for o in state.owners} if state else {}
    now = sources(read_state(root.generation(root.live))[0]) if root.live else {}
    then = sources(read_state(root.generation(release))[0])
    return sorted(k for k in set(now) | set(then) if now.get(k) != then.get(k))
