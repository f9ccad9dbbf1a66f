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

from . import report
from .attributes import attributes_for
from .bundle import Bundle
from .changes import publish_changes
from .config import Pipeline, parse_destination, parse_pipeline, render_bundle_path, render_url
from .contentdiff import content_diffs
from .decide import decide, decide_from_state
from .drift import repairs
from .digest import check_expected, plan_digest, publish_facts
from .execute import execute, output_chunks, recover, recovery_deletes
from .guards import check_delete_limit, first_paths
from .invalidation import changed_urls, invalidation_paths
from .journal import Journal
from .paths import STATE_NAME
from .plan import Content, Plan, plan, plan_outputs, with_data
from .root import opened, present_in, read_records
from .state import OwnerKey, output_to_dict, state_to_dict
from .storage.select import open_storage
from .timestamps import utc_now
from .transforms import Page, read_template, render_key, render_markdown
from .vocabulary import SHARED_ROOT


def page_of(pipeline: Pipeline) -> Page:
    """The pipeline's page options with its template read now, before the destination is
    opened: a template that cannot be used fails before anything is locked or read there."""
    if pipeline.template is None:
        return Page(pipeline.allow_raw_html, pipeline.stylesheet)
    return Page(pipeline.allow_raw_html, pipeline.stylesheet, read_template(pipeline.template, "pipeline %s" % pipeline.id))


def reusable(state, key: OwnerKey) -> dict:
    """This owner's generated records that carry a render key, by path: the renders a publish
    may reuse. Other owners' records are not: their pages are theirs to vouch for."""
    return {o.path: o for o in state.outputs_of(key) if o.kind == "generated" and o.render_key} if state else {}


def render_contents(bundle: Bundle, planned, page: Page, storage: dict, recorded: dict) -> dict:
    """Content for each planned output: copies are described by the manifest and streamed later;
    generated outputs are rendered now (reading verifies their source) so the plan knows them,
    unless their render key equals the one `recorded` for their path (reusable): then the
    record's digest and size stand for the page, which is rendered only if it is written.
    Each carries the storage settings it is written with (`storage`: the destination's)."""
    contents = {}
    configured = attributes_for(storage)
    for item in planned:
        attributes = configured(item.path)
        entry = bundle.manifest.file(item.source_path)
        if item.kind == "source":
            contents[item.path] = Content(entry.sha256, entry.size, attributes=attributes)
            continue
        key = render_key(item.transform, entry.sha256, item.source_path, page)
        record = recorded.get(item.path)
        if record is not None and record.render_key == key:
            contents[item.path] = Content(record.sha256, record.size, None, attributes, key)
        else:
            contents[item.path] = _rendered(bundle, item.source_path, page, attributes, key)
    return contents


def _rendered(bundle: Bundle, source_path: str, page: Page, attributes: tuple, key: str) -> Content:
    data = render_markdown(bundle.read(source_path), source_path, page)
    return Content("sha256:" + hashlib.sha256(data).hexdigest(), len(data), data, attributes, key)


def pages_rendered(make_plan, contents: dict, bundle: Bundle, page: Page) -> Plan:
    """`make_plan(contents)` with every page it writes or repairs rendered: a page whose render
    was reused is rendered only now that the plan writes it (absent at the destination, drifted,
    its settings changed), in check mode too, so both make the same plan. Should a page's bytes
    differ from the record it was reused from, the plan is made again from the rendered content:
    what is written and what is recorded are the same bytes."""
    the_plan = make_plan(contents)
    while True:
        late = {w.path: _rendered(bundle, w.source_path, page, w.content.attributes, w.content.render_key)
                for w in the_plan.writes + the_plan.repairs if w.content.render_key is not None and w.content.data is None}
        if all((c.sha256, c.size) == (contents[p].sha256, contents[p].size) for p, c in late.items()):
            return with_data(the_plan, late)
        contents = dict(contents, **late)
        the_plan = make_plan(contents)


def publish(source: str, pipeline: dict, destination: dict, *, force: bool = False, lock_timeout: float = 60.0,
            check_mode: bool = False, now: datetime | None = None, opener=open_storage, full_result: bool = True,
            manifest_option: dict | None = None, diff_contents: bool = False, expect_plan_digest: str | None = None,
            verify: str = "none") -> dict:
    """Publish one bundle to one destination; `opener` lets tests hand in a fault-injecting backend.
    With `expect_plan_digest` a run whose plan digest differs fails (plan_changed) before it
    touches storage, recovery of an interrupted attempt included: recovery runs after the check.

    Without `full_result` the result leaves out `outputs`, `state` and `diff`, which hold every
    output record (the state the whole manifest too): Ansible copies and scans a result several
    times, so for 10,000 files they cost more than the publish. The module asks for them only
    with --diff or return_records. `manifest_option` is used in place of the bundle's manifest.json;
    `diff_contents` (--diff) adds content diffs of the outputs written to the `diff`. `verify`
    (size, sha256) also rewrites this owner's kept outputs that drifted at the destination, even
    when the decision is `skip` (drift.py); the result lists them in `repaired`."""
    now = now or utc_now()
    pipeline_cfg = parse_pipeline(pipeline)
    destination_cfg = parse_destination(destination)
    page = page_of(pipeline_cfg)
    bundle = Bundle.load(source, manifest_option)
    manifest = bundle.manifest
    planned = plan_outputs(manifest, pipeline_cfg)
    bundle_path = render_bundle_path(destination_cfg, pipeline_cfg.id, manifest.id, manifest.created_at)
    base_url = render_url(destination_cfg, pipeline_cfg.id, manifest.id, manifest.created_at)
    key = OwnerKey(pipeline_cfg.id, destination_cfg.id)
    warnings = []
    with opened(destination_cfg, bundle_path, lock_timeout, check_mode, opener) as storage:
        state, state_error, journal = read_records(storage)
        facts = dict(manifest=manifest, key=key, destination=destination_cfg, state=state, state_error=state_error,
                     planned=frozenset(p.path for p in planned), force=force, where=storage.describe())
        decision = decide_from_state(**facts) if journal is None else None
        present, listing, leftovers = None, None, []
        if decision is None or verify != "none":
            listing = frozenset(storage.list_files())
            present = present_in(listing)
        if decision is None:
            if journal is not None and state_error is None:
                leftovers = _leftovers(journal, state, listing, check_mode, warnings)
                present -= set(leftovers)
            decision = decide(present=present, **facts)
        rendered = decision.rewrites_outputs or verify != "none"
        contents = render_contents(bundle, planned, page, destination_cfg.storage, reusable(state, key)) if rendered else {}

        def make_plan(chosen: dict) -> Plan:
            made = plan(decision=decision, key=key, destination=destination_cfg, manifest=manifest, planned=planned,
                        contents=chosen, before=state, present=present, bundle_path=bundle_path, base_url=base_url, now=now)
            check_delete_limit(made, destination_cfg, manifest)
            return with_repairs(made, planned, chosen, listing, storage.measure, verify)
        the_plan = pages_rendered(make_plan, contents, bundle, page)
        review = plan_review(the_plan, manifest, present, leftovers)
        check_expected(expect_plan_digest, *review)
        shown = _content_diffs(the_plan, present, storage, bundle) if diff_contents else []
        if not check_mode:
            if journal is not None and state_error is None:
                recover(storage, journal, set(state.by_path()) if state else set(), listing)
            if the_plan.changed:
                execute(the_plan, storage, bundle)
    stale = invalidation_paths(changed_urls(the_plan, base_url), destination_cfg.invalidation_limit)
    return result(the_plan, storage.warnings + warnings, storage.describe(STATE_NAME), review, full_result, shown, stale)


def with_repairs(the_plan: Plan, planned, contents: dict, listing, measure, verify: str) -> Plan:
    """The plan with `verify`'s repairs: this owner's outputs that the plan keeps as they are
    (managed by it before, neither written nor deleted) and that are missing or drifted at the
    destination. Only those are measured; other owners' outputs and unmanaged files are not."""
    if verify == "none":
        return the_plan
    key = the_plan.owner
    kept = {o.path for o in the_plan.before.outputs_of(key)} if the_plan.before else set()
    kept -= {w.path for w in the_plan.writes} | set(the_plan.deletes)
    mine = {o.path: o for o in the_plan.outputs()}
    return replace(the_plan, repairs=repairs(planned, contents, mine, kept, listing, measure, verify))


def _content_diffs(the_plan, present, storage, bundle) -> list:
    """Read before anything is written: the old content is gone once the plan runs."""
    writes = the_plan.writes + the_plan.repairs
    if not writes:
        return []
    managed = the_plan.before.by_path() if the_plan.before else {}
    return content_diffs(writes, managed, present, storage.read_bytes,
                         lambda write: b"".join(output_chunks(write, bundle)), storage.describe)


def _leftovers(journal: Journal, state, listing: frozenset, check_mode: bool, warnings: list) -> list:
    """The outputs a dead attempt left: a real run removes them once the plan is made (and its
    digest checked) and plans as if they were gone; check mode names the same ones."""
    leftovers = recovery_deletes(journal, set(state.by_path()) if state else set(), listing)[0]
    warnings.append("%s %d output(s) left by an interrupted publish (attempt %s)%s" % (
        "a real run first removes" if check_mode else "removed", len(leftovers), journal.token, first_paths(leftovers)))
    return leftovers


def plan_review(the_plan, manifest, present, leftovers) -> tuple:
    """(facts, plan_digest, changes): what the result shows a reviewer and the digest covers."""
    changes = publish_changes(the_plan, present)
    facts = publish_facts(the_plan, manifest, leftovers, changes)
    return facts, plan_digest(facts), changes


def result(the_plan, warnings: list, where: str, review: tuple, full: bool = True, contents: list = (),
           invalidation: list = ()) -> dict:
    """The module's return values, as distributor_publish's RETURN documents them. The `diff` is a
    list: the listing of managed outputs and state, then the `contents` diffs of the outputs written.
    `invalidation` is the CDN paths the plan makes stale."""
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
        "deleted": list(the_plan.deletes),
        "retained": list(the_plan.retained),
        "taken_over": sorted(decision.taken_over),
        "forced": sorted(decision.forced),
        "plan_digest": review[1],
        "changes": review[2],
        "invalidation_paths": list(invalidation),
        "warnings": warnings,
    }
    if full:
        values.update(outputs=[output_to_dict(o, shared) for o in the_plan.outputs()],
                      state=state_to_dict(after) if after else None, diff=[report.diff(the_plan.before, after, where), *contents])
    return values
