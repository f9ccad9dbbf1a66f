# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The publish operation: the imperative shell around the contract's order of work.

Read the records (state, journal) → decide from the state alone → list the bundle path only when
that decision needs it (or a dead attempt's leftovers must be found) → decide with the listing →
plan → execute. It alone reads the clock, the bundle and the destination; check mode stops after
planning, so what check mode reports is, by construction, what a real run does.
"""

from __future__ import annotations

import hashlib
from dataclasses import replace
from datetime import datetime
from functools import partial
from typing import NamedTuple

from ..planning import report
from ..records.attributes import attributes_for
from ..planning.authorship import check_authorship, overwritten_or_deleted
from ..budget import Mapped
from ..records.bundle import Bundle
from ..planning.changes import publish_changes
from ..errors import DistributorError
from ..records.config import Destination, Pipeline, parse_destination, parse_pipeline, render_bundle_path, render_url
from ..planning.contentdiff import content_diffs
from ..planning.decide import Decision, decide, decide_from_state
from ..planning.drift import repairs
from ..planning.digest import check_expected, plan_digest, publish_facts
from ..execution.execute import Leftovers, execute, find_leftovers, output_chunks, recover
from ..planning.guards import check_delete_limit, first_paths
from ..planning.invalidation import changed_urls, invalidation_paths
from ..limits import UNLIMITED
from ..records.manifest_build import described
from ..paths import STATE_NAME
from ..planning.plan import Content, Plan, plan, plan_outputs, with_data
from ..execution.root import opened, present_in, read_records
from ..records.state import OwnerKey, output_to_dict, state_to_dict
from ..storage.select import open_storage
from ..timestamps import utc_now
from ..records.transforms import Page, read_template, render_key, render_markdown
from ..vocabulary import SHARED_ROOT


def page_of(pipeline: Pipeline) -> Page:
    """The pipeline's page options with its template read now, before the destination is
    opened: a template that cannot be used fails before anything is locked or read there."""
    if pipeline.template is None:
        return Page(pipeline.allow_raw_html, pipeline.stylesheet, lang=pipeline.lang)
    return Page(pipeline.allow_raw_html, pipeline.stylesheet, read_template(pipeline.template, "pipeline %s" % pipeline.id),
                pipeline.lang)


def reusable(state, key: OwnerKey) -> dict:
    """This owner's generated records that carry a render key, by path: the renders a publish
    may reuse. Other owners' records are not: their pages are theirs to vouch for."""
    return {o.path: o for o in state.outputs_of(key) if o.kind == "generated" and o.render_key} if state else {}


def page_keys_of(planned, manifest, page: Page) -> dict:
    """The render key of each planned page with the pipeline's page settings now: what decides
    whether a page of an unchanged source is rendered again (decide.settings_changed) and whether
    its render is reused (render_contents)."""
    return {item.path: render_key(item.transform, manifest.file(item.source_path).sha256, item.source_path, page)
            for item in planned if item.kind == "generated"}


def render_contents(bundle: Bundle, planned, page: Page, storage: dict, recorded: dict, page_keys: dict,
                    keep: bool = True) -> dict:
    """Content for each planned output: copies are described by the manifest and streamed later;
    generated outputs are rendered now (reading verifies their source) so the plan knows them,
    unless their render key equals the one `recorded` for their path (reusable): then the
    record's digest and size stand for the page, which is rendered only if it is written.
    Each carries the storage settings it is written with (`storage`: the destination's). Without
    `keep` (check mode) a page's bytes are dropped once hashed: 25,000 pages held 90 MiB."""
    contents = {}
    configured = attributes_for(storage)
    for item in planned:
        attributes = configured(item.path)
        entry = bundle.manifest.file(item.source_path)
        if item.kind == "source":
            contents[item.path] = Content(entry.sha256, entry.size, attributes=attributes)
            continue
        key = page_keys[item.path]
        record = recorded.get(item.path)
        if record is not None and record.render_key == key:
            contents[item.path] = Content(record.sha256, record.size, None, attributes, key, reused=True)
        else:
            contents[item.path] = _rendered(bundle, item.source_path, page, attributes, key, keep)
    return contents


def _rendered(bundle: Bundle, source_path: str, page: Page, attributes: tuple, key: str, keep: bool = True) -> Content:
    data = render_markdown(bundle.read(source_path), source_path, page)
    return Content("sha256:" + hashlib.sha256(data).hexdigest(), len(data), data if keep else None, attributes, key)


def pages_rendered(make_plan, contents: dict, bundle: Bundle, page: Page) -> Plan:
    """`make_plan(contents)` with every page it writes, repairs or resettles rendered (a resettle
    writes the page after all when the file there is not the one recorded): a page whose render
    was reused is rendered only now that the plan writes it (absent at the destination, drifted,
    its settings changed), in check mode too, so both make the same plan. Should a page's bytes
    differ from the record it was reused from, the plan is made again from the rendered content:
    what is written and what is recorded are the same bytes."""
    the_plan = make_plan(contents)
    while True:
        late = {w.path: _rendered(bundle, w.source_path, page, w.content.attributes, w.content.render_key)
                for w in the_plan.writes + the_plan.repairs + the_plan.resettles if w.content.reused}
        if all((c.sha256, c.size) == (contents[p].sha256, contents[p].size) for p, c in late.items()):
            return with_data(the_plan, late)
        contents = dict(contents, **late)
        the_plan = make_plan(contents)


def publish(source: str, pipeline: dict, destination: dict, *, force: bool = False, lock_timeout: float = 60.0,
            check_mode: bool = False, now: datetime | None = None, opener=open_storage, full_result: bool = True,
            manifest_option: dict | None = None, diff_contents: bool = False, expect_plan_digest: str | None = None,
            verify: str = "none", result_limit: int = UNLIMITED, manifest_id: str | None = None) -> dict:
    """Publish one bundle to one destination; `opener` lets tests hand in a fault-injecting backend.
    With `expect_plan_digest` a run whose plan digest differs fails (plan_changed) before it
    touches storage, recovery of an interrupted attempt included: recovery runs after the check.

    Without `full_result` the result leaves out `outputs`, `state` and `diff`, which hold every
    output record (the state the whole manifest too): Ansible copies and scans a result several
    times, so for 10,000 files they cost more than the publish. The module asks for them only
    with --diff or return_records. `manifest_option` is used in place of the bundle's manifest.json;
    with `manifest_id` the bundle is described as it is now (what distributor_manifest would write),
    here, so that no task hands a manifest of every file to this one;
    `diff_contents` (--diff) adds content diffs of the outputs written to the `diff`. `verify`
    (size, sha256) also rewrites this owner's kept outputs that drifted at the destination, even
    when the decision is `skip` (drift.py); the result lists them in `repaired`. `result_limit`
    bounds the `diff` (report.py, contentdiff.py); the result's lists are whole, and `plan` holds
    the facts the digest is taken over, for the record file (the module cuts the lists and
    returns no `plan`: adapter.run_module)."""
    now = now or utc_now()
    pipeline_cfg = parse_pipeline(pipeline)
    destination_cfg = parse_destination(destination)
    page = page_of(pipeline_cfg)
    if manifest_id is not None:
        if manifest_option is not None:
            raise DistributorError("invalid_config", "give either manifest (a manifest to publish with) or manifest_id "
                                   "(describe the bundle as it is now with that source id), not both")
        manifest_option = described(source, manifest_id)[0].to_dict()
    bundle = Bundle.load(source, manifest_option)
    manifest = bundle.manifest
    planned = plan_outputs(manifest, pipeline_cfg)
    page_keys = page_keys_of(planned, manifest, page)
    bundle_path = render_bundle_path(destination_cfg, pipeline_cfg.id, manifest.id, manifest.created_at)
    base_url = render_url(destination_cfg, pipeline_cfg.id, manifest.id, manifest.created_at)
    key = OwnerKey(pipeline_cfg.id, destination_cfg.id)
    job = Job(bundle, planned, page, page_keys, key, destination_cfg, bundle_path, base_url, now, force, verify, check_mode)
    released = None  # release mode: releases.publish.Released
    if destination_cfg.releases is None:
        with opened(destination_cfg, bundle_path, lock_timeout, check_mode, opener) as storage:
            made = _made(job, storage, diff_contents, expect_plan_digest, result_limit)
            if not check_mode:
                made = _recovered(made, storage)
                if made.plan.changed:
                    execute(made.plan, storage, bundle)
    else:
        from ..releases.home import opened_release  # see _outside_shared
        from ..releases.publish import publish_release
        with opened_release(destination_cfg, bundle_path, lock_timeout, check_mode, opener, switching=True) as root:
            released = publish_release(
                job, root, lambda storage, facts: _made(job, storage, diff_contents, expect_plan_digest, result_limit, facts))
            made, storage = released.made, root.parent
    stale = invalidation_paths(changed_urls(made.plan, base_url), destination_cfg.invalidation_limit)
    warnings = storage.warnings + leftover_warnings(made.found, made.plan, made.recovered, made.staging, check_mode)
    values = result(made.plan, warnings, made.where, made.review, full_result, made.shown, stale, made.recovered,
                    made.staging, result_limit)
    if released is not None:
        values.update(release=released.values, changed=values["changed"] or released.builds)
        if full_result:
            values["diff"].insert(1, released.diff)
    return values


class Job(NamedTuple):
    """What one publish brings to its destination, whatever the mode."""

    bundle: Bundle
    planned: tuple
    page: Page
    page_keys: dict
    key: OwnerKey
    destination: Destination
    bundle_path: str
    base_url: str | None
    now: datetime
    force: bool
    verify: str
    check_mode: bool


class Made(NamedTuple):
    """A plan made against the live tree and reviewed: what the result reports and a run does."""

    plan: Plan
    found: Leftovers
    recovered: list
    staging: list
    review: tuple
    present: frozenset | None
    shown: list
    where: str


def _made(job: Job, storage, diff_contents: bool, expect_plan_digest: str | None, limit: int,
          release_facts=None) -> Made:
    """Read, decide, plan and review at `storage` (the bundle path, or the live generation of a
    release), checked against the approved digest; check mode's look ahead too. In place, every
    file the plan deletes or writes over must be distributor's (authorship.py), before the run
    writes its journal. `release_facts` (release mode, where the live generation is neither
    deleted from nor written to: its files go when it is cleared, releases.build.clear) lists the
    whole tree (every kept output is linked into the new generation) but its shared paths (the
    links to what a web server keeps, releases.rules.outside_shared), and adds to the digest what
    the release part of the run does, from the plan."""
    manifest = job.bundle.manifest
    state, state_error, journal = read_records(storage)
    facts = dict(manifest=manifest, key=job.key, destination=job.destination, state=state, state_error=state_error,
                 planned=frozenset(p.path for p in job.planned), force=job.force, where=storage.describe(),
                 page_keys=job.page_keys)
    step = decide_from_state(**facts) if journal is None else None
    decision = step if isinstance(step, Decision) else None
    present, listing, found = None, None, Leftovers()
    whole = release_facts is not None and (decision is None or decision.action != "skip" or job.destination.releases.build == "always")
    if decision is None or job.verify != "none" or whole:
        listing = frozenset(storage.list_files()) if release_facts is None else _outside_shared(storage, job.destination)
        present = present_in(listing)
        if state_error is None:
            found = find_leftovers(storage, journal, set(state.by_path()) if state else set(), listing)
            present -= {entry.path for entry in found.outputs}
    if decision is None:
        decision = decide(present=present, **facts) if step is None else step(present)
    rendered = decision.rewrites_outputs or job.verify != "none"
    contents = (render_contents(job.bundle, job.planned, job.page, job.destination.storage, reusable(state, job.key),
                                job.page_keys, not job.check_mode) if rendered else {})

    def make_plan(chosen: dict) -> Plan:
        made = plan(decision=decision, key=job.key, destination=job.destination, manifest=manifest, planned=job.planned,
                    contents=chosen, before=state, present=present, bundle_path=job.bundle_path, base_url=job.base_url,
                    now=job.now)
        check_delete_limit(made, job.destination, manifest, found.deletes(made))
        return with_repairs(made, job.planned, chosen, listing, storage.measure, job.verify)
    the_plan = pages_rendered(make_plan, contents, job.bundle, job.page)
    recovered, staging = found.deletes(the_plan), list(found.staging)
    review = plan_review(the_plan, manifest, present, recovered, release_facts(the_plan, present) if release_facts else None)
    check_expected(expect_plan_digest, *review)
    if release_facts is None:
        check_authorship(overwritten_or_deleted(the_plan, present or frozenset()), storage.doubt_files, storage.describe(),
                         "this publish would delete or write over")
    if job.check_mode:
        read_sources(the_plan, job.bundle)
        if release_facts is None:
            storage.check_writable(the_plan.directories_changed())
    shown = _content_diffs(the_plan, present, storage, job.bundle, job.page, limit) if diff_contents else []
    return Made(the_plan, found, recovered, staging, review, present, shown, storage.describe(STATE_NAME))


def _outside_shared(storage, destination: Destination) -> frozenset:
    """A generation's listing without its shared paths (releases.rules.outside_shared). The
    releases package is imported here, by publish in release mode and by _content_diffs only: a
    module run through Ansible compiles every module it imports on every run, and a publish in
    place needs none of it (about 15 ms of a 0.2 s start)."""
    from ..releases.rules import outside_shared
    return outside_shared(storage.list_files(), destination.releases.shared)


def _recovered(made: Made, storage) -> Made:
    """A real run first undoes what a dead in-place attempt left (execute.recover)."""
    if made.found.token is None and not made.staging:
        return made
    recovered, staging = recover(storage, made.found, made.recovered, len(made.recovered) < len(made.found.outputs))
    return made._replace(recovered=recovered, staging=staging)


def read_sources(the_plan: Plan, bundle: Bundle) -> None:
    """Check mode reads every bundle file a run would stream, verified against the manifest as
    the run verifies it (Bundle.chunks): a bundle edited after its manifest fails
    verification_failed in the review, not in the approved run. Pages were read when rendered."""
    for write in the_plan.writes + the_plan.repairs + the_plan.resettles:
        if write.content.render_key is None:
            for _chunk in bundle.chunks(write.source_path):
                pass


def with_repairs(the_plan: Plan, planned, contents: dict, listing, measure, verify: str) -> Plan:
    """The plan with `verify`'s repairs: this owner's outputs that the plan keeps as they are
    (managed by it before, neither written nor deleted) and that are missing or drifted at the
    destination. Only those are measured; other owners' outputs and unmanaged files are not."""
    if verify == "none":
        return the_plan
    key = the_plan.owner
    kept = {o.path for o in the_plan.before.outputs_of(key)} if the_plan.before else set()
    kept -= {w.path for w in the_plan.writes + the_plan.resettles} | set(the_plan.deletes)
    mine = {o.path: o for o in the_plan.outputs()}
    return replace(the_plan, repairs=repairs(planned, contents, mine, kept, listing, measure, verify))


def _content_diffs(the_plan, present, storage, bundle, page: Page, limit: int) -> list:
    """Read before anything is written: the old content is gone once the plan runs. A page whose
    bytes check mode dropped is rendered again, for the few a content diff shows."""
    writes = the_plan.writes + the_plan.repairs
    if not writes:
        return []
    managed = the_plan.before.by_path() if the_plan.before else {}

    def new_bytes(write) -> bytes:
        if write.content.render_key is not None and write.content.data is None:
            return render_markdown(bundle.read(write.source_path), write.source_path, page)
        return b"".join(output_chunks(write, bundle))
    from ..releases.home import vouched_read  # see _outside_shared
    return content_diffs(writes, managed, present, vouched_read(storage, managed), new_bytes, storage.describe, limit)


def leftover_warnings(found: Leftovers, the_plan: Plan, recovered: list, staging: list, check_mode: bool) -> list[str]:
    """What recovery did (check mode: would do) and what it leaves, for the operator: the files
    a journal names that distributor cannot vouch for are named with why, since nobody else
    will remove them."""
    done = "a real run first removes" if check_mode else "removed"
    warnings = []
    if found.token is not None:
        again = len(found.outputs) - len(found.deletes(the_plan))
        warnings.append("%s %d output(s) left by an interrupted publish (attempt %s)%s%s" % (
            done, len(recovered), found.token, first_paths(recovered),
            "; this publish writes %d more of them again" % again if again > 0 else ""))
    if found.left:
        warnings.append(
            "%d file(s) that the journal of the interrupted publish (attempt %s) names are left alone, as distributor "
            "cannot vouch it wrote them%s. Remove them by hand if that publish left them" % (
                len(found.left), found.token, first_paths(["%s (%s)" % pair for pair in found.left])))
    if staging:
        warnings.append("%s %d empty staging director(ies) of interrupted publishes%s" % (done, len(staging), first_paths(staging)))
    if found.staging_left:
        warnings.append("%d staging director(ies) of interrupted publishes are left%s. Remove them by hand once you know "
                        "what they hold" % (len(found.staging_left), first_paths(["%s (%s)" % pair for pair in found.staging_left])))
    return warnings


def plan_review(the_plan, manifest, present, leftovers, release: dict | None = None) -> tuple:
    """(facts, plan_digest, changes): what the result shows a reviewer and the digest covers;
    in release mode also what the release part of the run does (`release`)."""
    changes = publish_changes(the_plan, present)
    facts = publish_facts(the_plan, manifest, leftovers, changes)
    if release is not None:
        facts["release"] = release
    return facts, plan_digest(facts), changes


def result(the_plan, warnings: list, where: str, review: tuple, full: bool = True, contents: list = (),
           invalidation: list = (), recovered: list = (), staging: list = (), limit: int = UNLIMITED) -> dict:
    """The module's return values, as distributor_publish's RETURN documents them, every list
    whole, and the `plan` facts. The `diff` is a list: the listing of managed outputs and state
    (at most `limit` lines of outputs), then the `contents` diffs of the outputs written.
    `invalidation` is the CDN paths the plan makes stale; `recovered` and `staging` what recovery
    removed (check mode: would remove) of interrupted attempts."""
    decision = the_plan.decision
    after = the_plan.after
    shared = after is not None and after.mode == SHARED_ROOT
    values = {
        "changed": the_plan.changed,
        "action": decision.action,
        "reason": decision.reason,
        "bundle_path": the_plan.bundle_path,
        "primary_url": the_plan.primary_url,
        "written": [w.path for w in the_plan.writes],
        "repaired": [w.path for w in the_plan.repairs],
        "resettled": [w.path for w in the_plan.resettles],
        "deleted": list(the_plan.deletes),
        "recovered": list(recovered),
        "staging_removed": list(staging),
        "retained": list(the_plan.retained),
        "taken_over": sorted(decision.taken_over),
        "forced": sorted(decision.forced),
        "plan_digest": review[1],
        "plan": review[0],
        "changes": review[2],
        "invalidation_paths": list(invalidation),
        "warnings": warnings,
    }
    if full:
        values.update(outputs=Mapped(the_plan.outputs(), partial(output_to_dict, shared=shared)),
                      state=state_to_dict(after, Mapped) if after else None,
                      diff=[report.diff(the_plan.before, after, where, limit), *contents])
    return values
