# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""distributor_release with `fleet`: several destinations switched to one release together.

One process holds every destination: connected in parallel, locked one by one in the order of
their ids (two fleets sharing destinations never wait on each other in a circle), read, and
decided together (releases.rules.fleet_target). Every target is checked whole and every new
link made before the first rename, so the renames follow one another with nothing between them
but the storage's own round trips: `window_seconds` measures them, first to last. A rename that
fails after others went through switches those back to the release they left before any index
records the switch; the run fails naming what it undid and what it could not.
"""

from __future__ import annotations

import json
import posixpath
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from datetime import datetime

from ..errors import DistributorError
from ..planning.digest import PLAN_FORMAT, check_expected, plan_digest
from ..records.config import render_bundle_path
from ..releases.build import abandon_switch, check_whole, finish_switch, point_link, prepare_switch
from ..releases.home import opened_release
from ..releases.rules import fleet_target, link_target, split_bundle_path
from ..storage.select import new_token, open_storage
from ..timestamps import utc_now
from .managed_root import Selector, parse_created
from .switch import cleared, outcome, planned, release_destination, require_releases, switch_release, would_clear


def switch_fleet(pipeline_id: str, fleet: list, release: str, *, selector: Selector = Selector(), check_mode: bool = False,
                 lock_timeout: float = 60.0, now: datetime | None = None, opener=open_storage,
                 expect_plan_digest: str | None = None) -> dict:
    """Switch every destination of `fleet` to `release` (an id, or `previous`: releases.rules.fleet_target),
    all or none; check mode says what would change. With `expect_plan_digest` (the fleet's digest)
    a run whose plan differs on any destination fails (plan_changed) before anything is written."""
    now = now or utc_now()
    configs = _configs(fleet)
    created = parse_created(selector.created)
    paths = {cfg.id: render_bundle_path(cfg, pipeline_id, selector.source_id, created) for cfg in configs}
    _refuse_one_place_twice(configs, paths)
    with ExitStack() as stack:
        storages = _connected(configs, paths, opener, stack)
        roots = {}
        for cfg in configs:
            with _named(cfg.id):
                roots[cfg.id] = stack.enter_context(opened_release(
                    cfg, paths[cfg.id], lock_timeout, check_mode, lambda *_ignored, held=storages[cfg.id]: held, switching=True))
                require_releases(roots[cfg.id])
        target = fleet_target({where: root.index for where, root in roots.items()}, release)
        steps = {cfg.id: planned(roots[cfg.id], cfg, target, now) for cfg in configs}
        facts = {"plan_format": PLAN_FORMAT, "operation": "fleet_release",
                 "destinations": [dict(step.facts, id=where) for where, step in steps.items()]}
        digest = plan_digest(facts)
        check_expected(expect_plan_digest, facts, digest, [dict(change, destination=where) for where, step in steps.items()
                                                           for change in step.changes])
        moving = [cfg for cfg in configs if steps[cfg.id].changed]
        for cfg in moving:
            with _named(cfg.id):
                check_whole(roots[cfg.id], target, "size")
        window, removed, warnings = None, {}, []
        if not check_mode and moving:
            window = _switched(roots, steps, moving, now)
            for cfg in moving:
                with _named(cfg.id):
                    removed[cfg.id], kept = cleared(roots[cfg.id], steps[cfg.id], cfg)
                    warnings += kept
        destinations = [dict(outcome(roots[cfg.id], steps[cfg.id],
                                     would_clear(roots[cfg.id], steps[cfg.id]) if check_mode else removed.get(cfg.id, [])),
                             id=cfg.id, plan_digest=plan_digest(steps[cfg.id].facts)) for cfg in configs]
        warnings = [w for cfg in configs for w in roots[cfg.id].parent.warnings] + warnings
    return {
        "changed": bool(moving),
        "release": target,
        "rollback": any(step.rollback for step in steps.values()),
        "window_seconds": window,
        "destinations": destinations,
        "plan_digest": digest,
        "plan": facts,
        "diff": [{"before": "release: %s\n" % step.before, "after": "release: %s\n" % step.target,
                  "before_header": "%s: %s" % (where, step.bundle_path), "after_header": "%s: %s" % (where, step.bundle_path)}
                 for where, step in steps.items()],
        "warnings": warnings,
    }


def release_operation(params: dict, check_mode: bool) -> dict:
    """distributor_release's operation: one destination (operations.switch) or a fleet, never both."""
    if (params["destination"] is None) == (params["fleet"] is None):
        raise DistributorError("invalid_config", "distributor_release takes either destination (one) or fleet (several "
                               "switched together), and exactly one of them")
    options = dict(selector=Selector(params["source_id"], params["created"]), check_mode=check_mode,
                   lock_timeout=params["lock_timeout"], expect_plan_digest=params["expect_plan_digest"])
    if params["fleet"] is not None:
        return switch_fleet(params["pipeline_id"], params["fleet"], params["release"], **options)
    return switch_release(params["pipeline_id"], params["destination"], params["release"], **options)


def _configs(fleet: list) -> list:
    """The fleet's destinations, each in release mode, ids unique, in the order of their ids (the order of the locks)."""
    if not fleet:
        raise DistributorError("invalid_config", "fleet is empty: list the destinations to switch together")
    configs = []
    for position, destination in enumerate(fleet):
        try:
            configs.append(release_destination(destination))
        except DistributorError as error:
            raise DistributorError(error.reason, "fleet[%d]: %s" % (position, error.message), error.details) from None
    ids = [cfg.id for cfg in configs]
    twice = sorted({where for where in ids if ids.count(where) > 1})
    if twice:
        raise DistributorError("invalid_config", "fleet: destination id %s is listed more than once; each destination of a "
                               "fleet is switched once" % ", ".join(twice))
    return sorted(configs, key=lambda cfg: cfg.id)


def _refuse_one_place_twice(configs: list, paths: dict) -> None:
    """Two ids with the same storage settings and bundle path are one release home: its lock
    taken twice by one process would wait on itself (lock_timeout), and check mode would count
    its switch twice. Refused naming both, before anything is opened."""
    seen = {}
    for cfg in configs:
        place = (json.dumps(dict(cfg.storage, root=posixpath.normpath(cfg.storage.get("root") or ".")), sort_keys=True),
                 paths[cfg.id])
        if place in seen:
            raise DistributorError("invalid_config", "fleet: destinations %s and %s are the same bundle path %s on the same "
                                   "storage; list each place once" % (seen[place], cfg.id, paths[cfg.id]))
        seen[place] = cfg.id


def _connected(configs: list, paths: dict, opener, stack: ExitStack) -> dict:
    """Each destination's storage, connected in a thread of its own (an SFTP session each), and
    able to switch atomically (Storage.require_switch, which opens the session); every failure
    named by its destination. Each is closed when the fleet's run ends."""
    def connect(cfg):
        storage = opener(cfg.storage, split_bundle_path(paths[cfg.id])[0], new_token())
        stack.callback(storage.close)
        storage.require_switch()
        return storage
    with ThreadPoolExecutor(max_workers=len(configs)) as pool:
        futures = {cfg.id: pool.submit(connect, cfg) for cfg in configs}
    failures = []
    for where, future in futures.items():
        error = future.exception()
        if isinstance(error, DistributorError):
            failures.append((where, error))
        elif error is not None:
            raise error
    if failures:
        raise DistributorError(failures[0][1].reason, "no destination of the fleet was switched: %s" % "; ".join(
            "%s: %s" % (where, error.message) for where, error in failures))
    return {where: future.result() for where, future in futures.items()}


def _switched(roots: dict, steps: dict, moving: list, now: datetime) -> float:
    """Prepare every switch, then rename them one after the other, then record each index; the
    seconds from the first rename to the end of the last. A destination that cannot be prepared
    leaves every link as it was; a rename that fails switches back those renamed before it."""
    prepared, after = [], {}
    try:
        for cfg in moving:
            with _named(cfg.id):
                after[cfg.id] = prepare_switch(roots[cfg.id], steps[cfg.id].target, now, steps[cfg.id].rollback)
            prepared.append(cfg.id)
    except DistributorError as error:
        _abandon(roots, prepared)
        raise DistributorError(error.reason, "%s; no destination of the fleet was switched" % error.message, error.details) from None
    renamed = []
    started = time.monotonic()
    try:
        for cfg in moving:
            finish_switch(roots[cfg.id], steps[cfg.id].target)
            renamed.append(cfg.id)
    except DistributorError as error:
        failed = moving[len(renamed)].id
        _abandon(roots, [where for where in prepared if where not in renamed and where != failed])
        if _serves(roots[failed], steps[failed].target):
            renamed.append(failed)
        raise _undone(roots, steps, renamed, failed, error) from None
    window = time.monotonic() - started
    for cfg in moving:
        with _named(cfg.id):
            roots[cfg.id].write_index(after[cfg.id])
    return round(window, 6)


def _abandon(roots: dict, ids: list) -> None:
    """Prepared links that will not be renamed go; one that stays is the next run's to tidy."""
    for where in ids:
        try:
            abandon_switch(roots[where])
        except DistributorError:
            pass


def _serves(root, release: str) -> bool:
    """Whether the bundle path holds `release` after all: a rename can take effect and still
    fail (a later fsync locally, a lost reply over SFTP), and that destination is switched back
    with the others. One that cannot be looked at is taken to have switched: switching back to
    the release it left is right either way, and a failure to do so is named."""
    try:
        return root.parent.entry(root.name) == ("link", link_target(root.name, release))
    except DistributorError:
        return True


def _undone(roots: dict, steps: dict, renamed: list, failed: str, error: DistributorError) -> DistributorError:
    """Each destination renamed before `failed` switched back to the release it left (its index
    still records that one active); the failure names those undone and those that could not be."""
    back, stuck = [], []
    for where in renamed:
        root, before = roots[where], steps[where].before
        try:
            if before is None:
                root.parent.delete_many([root.name])
            else:
                point_link(root, before)
            root.live = before
            back.append("%s (to %s)" % (where, before or "no release: the link is gone again"))
        except DistributorError as undo:
            stuck.append("%s (it serves %s: %s)" % (where, steps[where].target, undo.message))
    return DistributorError(
        "storage_error", "the switch of destination %s failed: %s. Switched back to the release each left: %s; could not "
        "switch back: %s. No release index records the switch%s" % (
            failed, error.message, ", ".join(back) or "none", ", ".join(stuck) or "none",
            "; a destination that could not switch back is taken as active by its next run (distributor_release switches it)"
            if stuck else ""),
        {"switched_back": [where for where in renamed if roots[where].live == steps[where].before], "not_switched_back":
         [where for where in renamed if roots[where].live != steps[where].before]})


class _named:
    """A failure while acting on one destination, its message prefixed with that destination's id."""

    def __init__(self, where: str):
        self.where = where

    def __enter__(self):
        return self

    def __exit__(self, kind, error, _traceback):
        if isinstance(error, DistributorError) and not error.message.startswith("destination "):
            raise DistributorError(error.reason, "destination %s: %s" % (self.where, error.message), error.details) from None
        return False
