# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""One test per row of the contract's Comparison Semantics, single-owner and shared-root."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from hypothesis import given, strategies as st

from ansible_collections.distributor.core.plugins.module_utils._distributor.planning.decide import decide, decide_from_state
from ansible_collections.distributor.core.plugins.module_utils._distributor.errors import DistributorError
from ansible_collections.distributor.core.plugins.module_utils._distributor.paths import in_the_way
from ansible_collections.distributor.core.plugins.module_utils._distributor.records.state import OwnerKey, state_to_dict
from ansible_collections.distributor.core.plugins.module_utils._distributor.records.state_parse import parse_state

from builders import destination, manifest, shared_state, single_state

KEY = OwnerKey("reports", "archive")
OLD = manifest(created="2026-06-03T11:55:00Z")
NEW = manifest(created="2026-06-04T11:55:00Z")
PLANNED = frozenset({"report.md"})


def run(m=NEW, recorded=None, present=frozenset(), planned=PLANNED, force=False, state_error=None, key=KEY, page_keys=None, **dest):
    return decide(manifest=m, key=key, destination=destination(**dest), state=recorded, state_error=state_error,
                  present=frozenset(present), planned=planned, force=force, where="memory:/", page_keys=page_keys)


def fails(reason, **kwargs):
    with pytest.raises(DistributorError) as caught:
        run(**kwargs)
    assert caught.value.reason == reason
    return caught.value.message


# Single owner

def test_no_state_and_no_content_publishes_new_outputs():
    assert run().action == "publish"


def test_no_state_and_existing_content_is_unmanaged():
    message = fails("unmanaged", present={"index.html"})
    assert "index.html" in message


def test_matching_embedded_source_manifest_skips():
    decision = run(recorded=single_state(NEW))
    assert decision.action == "skip"


def test_same_source_id_with_older_created_replaces():
    assert run(recorded=single_state(OLD)).action == "replace"


def test_same_source_id_with_older_created_merges_when_reconciliation_is_merge():
    decision = run(recorded=single_state(OLD), reconciliation={"mode": "merge"})
    assert (decision.action, decision.reconciliation) == ("merge", "merge")


def test_same_source_id_with_newer_created_skips_by_default():
    decision = run(m=OLD, recorded=single_state(NEW))
    assert decision.action == "skip"
    assert "newer" in decision.reason


def test_same_source_id_with_newer_created_replaces_when_on_destination_newer_is_replace():
    decision = run(m=OLD, recorded=single_state(NEW), transfer={"on_destination_newer": "replace"})
    assert decision.action == "replace"


def test_same_created_different_digest_is_a_conflict_by_default():
    other = manifest(created=NEW.created, files={"report.md": b"# Changed\n"})
    message = fails("conflict", m=other, recorded=single_state(NEW))
    assert "on_conflict" in message


def test_same_created_different_digest_replaces_when_on_conflict_is_replace():
    other = manifest(created=NEW.created, files={"report.md": b"# Changed\n"})
    assert run(m=other, recorded=single_state(NEW), transfer={"on_conflict": "replace"}).action == "replace"


@pytest.mark.parametrize("state", [
    single_state(manifest(id="other.source")),
    single_state(NEW, pipeline_id="events"),
    single_state(NEW, destination_id="mirror"),
], ids=["source id", "pipeline id", "destination id"])
def test_different_identity_in_single_owner_state_is_a_conflict(state):
    assert "takeover.mode: managed" in fails("conflict", recorded=state)


@pytest.mark.parametrize("policy", [{"takeover": {"mode": "managed"}}, {"transfer": {"on_conflict": "replace"}}])
def test_identity_mismatch_is_taken_over_when_policy_permits(policy):
    decision = run(recorded=single_state(manifest(id="other.source")), **policy)
    assert (decision.action, decision.reconciliation) == ("takeover", "replace")


def test_takeover_never_claims_unmanaged_content():
    fails("unmanaged", recorded=single_state(manifest(id="other")), present={"report.md", "stray.txt"},
          takeover={"mode": "managed"})


def test_invalid_state_is_a_failure():
    error = DistributorError("invalid_state", "bad")
    assert fails("invalid_state", state_error=error) == "bad"


def test_invalid_state_is_replaced_when_forced():
    error = DistributorError("invalid_state", "bad")
    assert run(state_error=error, force=True).action == "force_replace"


def test_force_replaces_unmanaged_content_in_the_bundle_path():
    assert run(present={"stray.txt"}, force=True).action == "force_replace"


def test_force_does_not_change_a_decision_that_would_succeed():
    assert run(recorded=single_state(NEW), force=True).action == "skip"
    assert run(recorded=single_state(OLD), force=True).action == "replace"


def test_replace_requires_the_bundle_path_to_hold_only_managed_outputs():
    message = fails("unmanaged", recorded=single_state(OLD), present={"report.md", "notes.txt"})
    assert "notes.txt" in message


def test_merge_fails_only_when_a_planned_path_is_unmanaged_content():
    state = single_state(OLD)
    assert run(recorded=state, present={"report.md", "notes.txt"}, reconciliation={"mode": "merge"}).action == "merge"
    fails("unmanaged", recorded=state, present={"report.md", "new.md"}, planned=frozenset({"report.md", "new.md"}),
          reconciliation={"mode": "merge"})


def test_shared_root_state_at_a_single_owner_destination_is_a_conflict_even_when_forced():
    shared = shared_state(("reports", "archive", NEW, ["report.md"]), ("events", "archive", manifest(id="e"), ["e.md"]))
    assert "shared_root" in fails("conflict", recorded=shared)
    assert "force never applies" in fails("conflict", recorded=shared, force=True)


# Shared root

SHARED = {"state": {"mode": "shared_root"}}


def test_shared_root_without_state_publishes_beside_unrelated_content():
    assert run(present={"other/site.html"}, **SHARED).action == "publish"


def test_shared_root_new_owner_publishes_when_paths_are_disjoint():
    state = shared_state(("events", "archive", manifest(id="events"), ["event.md"]))
    assert run(recorded=state, present={"event.md"}, **SHARED).action == "publish"


def test_shared_root_path_owned_by_a_different_owner_is_an_ownership_conflict():
    state = shared_state(("events", "archive", manifest(id="events"), ["report.md"]))
    message = fails("ownership_conflict", recorded=state, present={"report.md"}, **SHARED)
    assert "events/archive" in message


@pytest.mark.parametrize("policy", [{"takeover": {"mode": "managed"}}, {"transfer": {"on_conflict": "replace"}}])
def test_shared_root_takeover_takes_only_the_colliding_paths(policy):
    state = shared_state(("events", "archive", manifest(id="events"), ["report.md", "event.md"]))
    decision = run(recorded=state, present={"report.md", "event.md"}, **SHARED, **policy)
    assert decision.action == "takeover"
    assert decision.taken_over == {"report.md"}


def test_shared_root_force_never_overrides_an_ownership_conflict():
    state = shared_state(("events", "archive", manifest(id="events"), ["report.md"]))
    fails("ownership_conflict", recorded=state, present={"report.md"}, force=True, **SHARED)


def test_shared_root_planned_path_on_unmanaged_content_fails_unless_forced():
    fails("unmanaged", present={"report.md"}, **SHARED)
    decision = run(present={"report.md"}, force=True, **SHARED)
    assert decision.action == "force_replace"
    assert decision.forced == {"report.md"}


def test_shared_root_comparison_is_scoped_to_the_publishing_owner():
    state = shared_state(("reports", "archive", NEW, ["report.md"]), ("events", "archive", manifest(id="events"), ["e.md"]))
    assert run(recorded=state, present={"report.md", "e.md"}, **SHARED).action == "skip"
    older = shared_state(("reports", "archive", OLD, ["report.md"]), ("events", "archive", manifest(id="events"), ["e.md"]))
    assert run(recorded=older, present={"report.md", "e.md"}, **SHARED).action == "replace"


def test_shared_root_invalid_state_is_never_forced():
    error = DistributorError("invalid_state", "bad")
    assert "other owners" in fails("invalid_state", state_error=error, force=True, **SHARED)


def test_migration_of_the_same_owners_single_owner_state():
    decision = run(recorded=single_state(OLD), present={"report.md"}, **SHARED)
    assert decision.action == "migrate"
    assert decision.state.mode == "shared_root"
    assert decision.reconciliation == "replace"


def test_migration_of_an_unchanged_source_rewrites_state_only():
    decision = run(recorded=single_state(NEW), present={"report.md"}, **SHARED)
    assert (decision.action, decision.rewrites_outputs) == ("migrate", False)


def test_migration_of_another_owners_single_owner_state_is_a_conflict():
    fails("conflict", recorded=single_state(NEW, pipeline_id="events"), present={"report.md"}, **SHARED)


# Deciding before listing the root (decide_from_state): only what needs no listing is decided.

def unlisted(**kwargs):
    return decide_from_state(manifest=kwargs.pop("m", NEW), key=KEY, destination=destination(**kwargs.pop("dest", {})),
                             state=kwargs.pop("recorded", None), state_error=None, planned=PLANNED,
                             force=kwargs.pop("force", False), where="memory:/")


def test_a_skip_is_decided_without_listing_the_root():
    assert unlisted(recorded=single_state(NEW)).action == "skip"
    assert unlisted(recorded=shared_state(("reports", "archive", NEW, ["report.md"])), dest={"state": {"mode": "shared_root"}}).action == "skip"


def test_anything_that_writes_asks_for_the_listing_first():
    assert callable(unlisted())
    assert callable(unlisted(recorded=single_state(OLD)))
    assert callable(unlisted(recorded=shared_state(("reports", "archive", OLD, ["report.md"])), dest={"state": {"mode": "shared_root"}}))


def test_the_rest_decided_with_the_listing_is_what_decide_makes_of_it():
    """decide_from_state's rest, given the listing, is decide's decision: a publish decides once."""
    shared = shared_state(("events", "site", OLD, ["other.md"]), ("reports", "archive", OLD, ["report.md"]))
    for kwargs, present in (({}, {"report.md"}), ({"recorded": single_state(OLD)}, {"report.md", "stray.md"}),
                            ({"recorded": shared, "dest": {"state": {"mode": "shared_root"}}}, {"report.md", "a/b.md"})):
        dest = kwargs.get("dest", {})
        rest = unlisted(**dict(kwargs, dest=dest))
        try:
            expected = run(present=present, recorded=kwargs.get("recorded"), **dest)
        except DistributorError as error:
            with pytest.raises(DistributorError) as caught:
                rest(frozenset(present))
            assert (caught.value.reason, caught.value.message) == (error.reason, error.message)
        else:
            assert rest(frozenset(present)) == expected


def test_a_forced_publish_over_a_conflict_lists_first_and_an_unforced_one_fails_alike():
    same_time = manifest(files={"other.md": b"x"})
    assert callable(unlisted(m=same_time, recorded=single_state(NEW), force=True))
    with pytest.raises(DistributorError) as caught:
        unlisted(m=same_time, recorded=single_state(NEW))
    assert caught.value.reason == "conflict"


# Page records (decide.page_settings_changed): a record without a render key is a match (issue 38).

PAGE = frozenset({"report.html"})
PAGE_KEYS = {"report.html": "sha256:" + "1" * 64}


def paged(state, render_key=None, kind="generated"):
    """`state` with its one output report.html from report.md: a page rendered under `render_key`,
    or with kind source a copy at that path."""
    record = state.outputs[0]._replace(path="report.html", kind=kind, transform="markdown_to_html" if kind == "generated" else None,
                                       render_key=render_key)
    return replace(state, outputs=(record,))


def schema_1(state):
    """`state` as a schema-1 record, written before render keys existed, read back."""
    data = state_to_dict(state)
    v1 = {k: v for k, v in data.items() if k in ("pipeline_id", "destination_id", "published_at", "source", "links")}
    v1.update(schema_version=1, outputs=[{k: v for k, v in o.items() if k not in ("created_at", "updated_at", "render_key")}
                                         for o in data["outputs"]])
    return parse_state(json.dumps(v1).encode(), "memory:/.distributor.json")


def test_a_schema_1_record_embedding_the_same_manifest_is_a_skip_with_pages():
    """The seed contract: v1 state embedding the same manifest must compare as a match, although
    its page records cannot say how their pages were rendered."""
    recorded = schema_1(paged(single_state(NEW)))
    assert (recorded.schema_version, recorded.outputs[0].kind, recorded.outputs[0].render_key) == (1, "generated", None)
    decision = run(recorded=recorded, planned=PAGE, page_keys=PAGE_KEYS)
    assert (decision.action, decision.rewrites_outputs) == ("skip", False)
    unlisted = decide_from_state(manifest=NEW, key=KEY, destination=destination(), state=recorded, state_error=None,
                                 planned=PAGE, force=False, where="memory:/", page_keys=PAGE_KEYS)
    assert (unlisted.action, unlisted.rewrites_outputs) == ("skip", False)


@pytest.mark.parametrize("recorded, dest", [
    (paged(single_state(NEW)), {}),
    (paged(shared_state(("reports", "archive", NEW, ["report.md"]))), SHARED),
], ids=["schema 2", "schema 3"])
def test_a_page_record_without_a_render_key_is_a_match(recorded, dest):
    assert run(recorded=recorded, planned=PAGE, page_keys=PAGE_KEYS, **dest).action == "skip"


@pytest.mark.parametrize("dest", [{}, SHARED], ids=["single owner", "shared root"])
def test_a_recorded_render_key_that_differs_renders_the_page_again(dest):
    differs = paged(single_state(NEW) if not dest else shared_state(("reports", "archive", NEW, ["report.md"])), "sha256:" + "2" * 64)
    decision = run(recorded=differs, present=PAGE, planned=PAGE, page_keys=PAGE_KEYS, **dest)
    assert (decision.action, decision.rewrites_outputs) == ("replace", True)
    assert "the page settings of report.html changed" in decision.reason
    same = paged(differs, PAGE_KEYS["report.html"])
    assert run(recorded=same, planned=PAGE, page_keys=PAGE_KEYS, **dest).action == "skip"


def test_a_copy_recorded_where_a_page_is_planned_is_no_match():
    """Only a page record may lack a key: a copy at the path the pipeline now renders a page to
    is another output, whatever the source."""
    decision = run(recorded=paged(single_state(NEW), kind="source"), present=PAGE, planned=PAGE, page_keys=PAGE_KEYS)
    assert decision.action == "replace" and "page settings of report.html" in decision.reason


# A file where a planned output needs a directory, or the other way round: caught before any write.

MERGE = {"reconciliation": {"mode": "merge"}}
NESTED = frozenset({"docs/report.html"})


@pytest.mark.parametrize("obstacle", ["docs", "report.md/old.html"], ids=["file where a directory goes", "directory where a file goes"])
def test_merge_refuses_unmanaged_content_in_the_way_of_a_planned_output(obstacle):
    planned = NESTED if obstacle == "docs" else PLANNED
    message = fails("unmanaged", recorded=single_state(OLD), present={obstacle}, planned=planned, **MERGE)
    assert obstacle in message


def test_replace_over_its_own_file_where_a_directory_now_goes_is_a_plain_replace():
    assert run(recorded=single_state(OLD, paths=("docs",)), present={"docs"}, planned=NESTED).action == "replace"


def test_merge_cannot_retain_its_own_output_where_a_planned_output_needs_a_directory():
    message = fails("conflict", recorded=single_state(OLD, paths=("docs",)), present={"docs"}, planned=NESTED, **MERGE)
    assert "docs" in message and "replace" in message


@pytest.mark.parametrize("obstacle", ["docs", "docs/report.html/index.html"])
def test_shared_root_unmanaged_content_in_the_way_is_unmanaged_and_force_overwrites_it(obstacle):
    assert obstacle in fails("unmanaged", present={obstacle}, planned=NESTED, **SHARED)
    decision = run(present={obstacle}, planned=NESTED, force=True, **SHARED)
    assert decision.action == "force_replace" and decision.forced == {obstacle}


@pytest.mark.parametrize("takeover", ["none", "managed"])
def test_shared_root_another_owners_file_in_the_way_is_an_ownership_conflict_takeover_or_not(takeover):
    state = shared_state(("events", "archive", manifest(id="events"), ["docs"]))
    message = fails("ownership_conflict", recorded=state, present={"docs"}, planned=NESTED, takeover={"mode": takeover}, **SHARED)
    assert "docs" in message and "events" in message


def test_a_single_owner_takeover_names_the_paths_it_takes_and_force_the_unmanaged_ones():
    other = single_state(NEW, pipeline_id="events")
    decision = run(recorded=other, present={"report.md"}, takeover={"mode": "managed"})
    assert (decision.action, decision.taken_over) == ("takeover", {"report.md"})
    forced = run(recorded=single_state(OLD), present={"report.md", "stray.txt"}, force=True)
    assert (forced.action, forced.forced) == ("force_replace", {"stray.txt"})


PATHS = st.lists(st.sampled_from("ab"), min_size=1, max_size=4).map("/".join)


@given(st.frozensets(PATHS, max_size=6), st.frozensets(PATHS, max_size=6))
def test_in_the_way_is_exactly_the_occupied_paths_that_cannot_coexist_with_a_planned_one(planned, occupied):
    """A file cannot be where another needs a directory, either way round; equal paths are not
    "in the way" (they are the same output, replaced or taken over)."""
    expected = {q for q in occupied if any(p.startswith(q + "/") or q.startswith(p + "/") for p in planned)}
    assert in_the_way(planned, occupied) == expected
