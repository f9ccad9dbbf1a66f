# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Output rules, reconciliation and the contract's timestamp rules, planned as pure data."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ansible_collections.distributor.core.plugins.module_utils._distributor import globs
from ansible_collections.distributor.core.plugins.module_utils._distributor.planning.decide import decide
from ansible_collections.distributor.core.plugins.module_utils._distributor.errors import DistributorError
from ansible_collections.distributor.core.plugins.module_utils._distributor.globs import glob_match
from ansible_collections.distributor.core.plugins.module_utils._distributor.planning.plan import Content, plan, plan_outputs, primary_url
from ansible_collections.distributor.core.plugins.module_utils._distributor.records.state import OwnerKey

from builders import LATER, LATER_S, NOW_S, destination, manifest, pipeline, sha, shared_state, single_state

KEY = OwnerKey("reports", "archive")
OLD = manifest(created="2026-06-03T11:55:00Z", files={"a.md": b"a", "b.md": b"b"})
NEW = manifest(created="2026-06-04T11:55:00Z", files={"b.md": b"B", "c.md": b"c"})
SHARED = {"state": {"mode": "shared_root"}}


def make_plan(m=NEW, recorded=None, present=None, force=False, key=KEY, **dest):
    cfg = destination(**dest)
    planned = plan_outputs(m, pipeline())
    present = frozenset(present if present is not None else (recorded.by_path() if recorded else ()))
    decision = decide(manifest=m, key=key, destination=cfg, state=recorded, state_error=None, present=present,
                      planned=frozenset(p.path for p in planned), force=force, where="memory:/")
    contents = {p.path: Content(m.file(p.source_path).sha256, m.file(p.source_path).size) for p in planned}
    return plan(decision=decision, key=key, destination=cfg, manifest=m, planned=planned, contents=contents,
                before=recorded, present=present, bundle_path="", base_url=None, now=LATER)


def records(the_plan):
    return {o.path: o for o in the_plan.after.outputs}


# Output rules and links

def test_default_rules_copy_every_file():
    assert [(o.path, o.kind) for o in plan_outputs(NEW, pipeline())] == [("b.md", "source"), ("c.md", "source")]


def test_every_matching_rule_produces_one_output():
    rules = [{"match": "**/*.md", "transform": "markdown_to_html"}, {"match": "**/*.md", "transform": "copy"}]
    produced = plan_outputs(NEW, pipeline(outputs=rules))
    assert [(o.path, o.kind, o.transform) for o in produced] == [
        ("b.html", "generated", "markdown_to_html"), ("b.md", "source", "copy"),
        ("c.html", "generated", "markdown_to_html"), ("c.md", "source", "copy")]


def test_two_rules_producing_one_output_path_is_a_planning_error():
    m = manifest(files={"x.md": b"1", "x.html": b"2"})
    rules = [{"match": "*.md", "transform": "markdown_to_html"}, {"match": "*.html"}]
    with pytest.raises(DistributorError) as caught:
        plan_outputs(m, pipeline(outputs=rules))
    assert caught.value.reason == "invalid_config"
    assert "x.html" in caught.value.message


@pytest.mark.parametrize("pattern,path,expected", [
    ("**/*.md", "report.md", True),
    ("**/*.md", "a/b/report.md", True),
    ("*.md", "a/report.md", False),
    ("a/**", "a/b/c.png", True),
    ("**", "anything/at/all", True),
    ("img/?.png", "img/1.png", True),
    ("img/[ab].png", "img/c.png", False),
])
def test_glob_double_star_crosses_directories(pattern, path, expected):
    assert glob_match(pattern, path) is expected


@given(st.text(st.sampled_from("ab./*?[]\n\r\x00\u2028é") | st.characters(), max_size=30))
def test_the_default_rule_without_a_regex_matches_what_its_regex_matches(path):
    # glob_matcher answers `**` without running _glob's regex per file: the same answer always.
    assert (globs.glob_matcher("**")(path) is not None) is (globs._glob("**").match(path) is not None)
    assert glob_match("**", path) is (globs._glob("**").match(path) is not None)


def test_primary_url_takes_patterns_in_order_then_paths_in_order():
    paths = ["b.html", "a.html", "index.html"]
    assert primary_url(paths, ["index.html", "*.html"], "https://x.example/r/") == "https://x.example/r/index.html"
    assert primary_url(["b.html", "a.html"], ["index.html", "*.html"], "https://x.example/r") == "https://x.example/r/a.html"
    assert primary_url(["b.png"], ["*.html"], "https://x.example/") is None


# Single-owner reconciliation and timestamps

def test_publish_records_every_output_with_the_publication_time():
    the_plan = make_plan()
    assert the_plan.after.schema_version == 2
    assert {(o.created_at, o.updated_at) for o in the_plan.after.outputs} == {(LATER_S, LATER_S)}
    assert the_plan.after.created_at == the_plan.after.updated_at == the_plan.after.published_at == LATER_S


def test_replace_deletes_omitted_managed_outputs_and_records_exactly_the_new_plan():
    the_plan = make_plan(recorded=single_state(OLD, ["a.md", "b.md"]))
    assert the_plan.deletes == ("a.md",)
    assert [w.path for w in the_plan.writes] == ["b.md", "c.md"]
    assert sorted(records(the_plan)) == ["b.md", "c.md"]


def test_replace_writes_new_output_records_and_keeps_the_state_creation_time():
    the_plan = make_plan(recorded=single_state(OLD, ["a.md", "b.md"]))
    assert {(o.created_at, o.updated_at) for o in the_plan.after.outputs} == {(LATER_S, LATER_S)}
    assert (the_plan.after.created_at, the_plan.after.updated_at) == (NOW_S, LATER_S)


def test_merge_retained_outputs_keep_both_timestamps():
    the_plan = make_plan(recorded=single_state(OLD, ["a.md", "b.md"]), reconciliation={"mode": "merge"})
    kept = records(the_plan)["a.md"]
    assert (kept.created_at, kept.updated_at) == (NOW_S, NOW_S)
    assert the_plan.retained == ("a.md",)
    assert the_plan.deletes == ()


def test_merge_overwritten_outputs_keep_created_at_and_get_a_new_updated_at():
    the_plan = make_plan(recorded=single_state(OLD, ["a.md", "b.md"]), reconciliation={"mode": "merge"})
    rewritten = records(the_plan)["b.md"]
    assert (rewritten.created_at, rewritten.updated_at) == (NOW_S, LATER_S)
    assert rewritten.sha256 == sha(b"B")


def test_merge_new_outputs_get_the_publication_time_for_both_timestamps():
    the_plan = make_plan(recorded=single_state(OLD, ["a.md", "b.md"]), reconciliation={"mode": "merge"})
    new = records(the_plan)["c.md"]
    assert (new.created_at, new.updated_at) == (LATER_S, LATER_S)
    assert sorted(records(the_plan)) == ["a.md", "b.md", "c.md"]


def test_skip_changes_nothing():
    the_plan = make_plan(recorded=single_state(NEW, ["b.md", "c.md"]))
    assert the_plan.decision.action == "skip"
    assert not the_plan.changed and the_plan.writes == () and the_plan.deletes == ()


def test_takeover_replaces_the_previous_owners_managed_outputs():
    previous = single_state(manifest(id="other", files={"a.md": b"a"}), ["a.md"], pipeline_id="events")
    the_plan = make_plan(recorded=previous, takeover={"mode": "managed"})
    assert the_plan.deletes == ("a.md",)
    assert the_plan.after.owners[0].key == KEY


def test_forced_replacement_deletes_the_bounded_bundle_path():
    the_plan = make_plan(present={"stray.txt", "b.md"}, force=True)
    assert the_plan.decision.action == "force_replace"
    assert the_plan.deletes == ("stray.txt",)


# Shared root: owner scope and timestamps

def test_two_owners_with_disjoint_paths_coexist_in_one_state():
    events = ("events", "archive", manifest(id="events", files={"e.md": b"e"}), ["e.md"])
    the_plan = make_plan(recorded=shared_state(events), **SHARED)
    assert the_plan.decision.action == "publish"
    assert {str(o.key) for o in the_plan.after.owners} == {"events/archive", "reports/archive"}
    assert sorted(records(the_plan)) == ["b.md", "c.md", "e.md"]


def test_owner_scoped_replace_deletes_only_that_owners_omitted_outputs():
    state = shared_state(("reports", "archive", OLD, ["a.md", "b.md"]), ("events", "archive", manifest(id="events"), ["e.md"]))
    the_plan = make_plan(recorded=state, **SHARED)
    assert the_plan.deletes == ("a.md",)
    assert records(the_plan)["e.md"] == state.by_path()["e.md"]


def test_owner_scoped_merge_retains_own_and_other_outputs():
    state = shared_state(("reports", "archive", OLD, ["a.md", "b.md"]), ("events", "archive", manifest(id="events"), ["e.md"]))
    the_plan = make_plan(recorded=state, reconciliation={"mode": "merge"}, **SHARED)
    assert the_plan.deletes == ()
    assert sorted(records(the_plan)) == ["a.md", "b.md", "c.md", "e.md"]


def test_shared_root_timestamps_keep_created_at_and_move_updated_at_only_for_rewritten_paths():
    state = shared_state(("reports", "archive", OLD, ["a.md", "b.md"]), ("events", "archive", manifest(id="events"), ["e.md"]))
    the_plan = make_plan(recorded=state, **SHARED)
    got = records(the_plan)
    assert (got["b.md"].created_at, got["b.md"].updated_at) == (NOW_S, LATER_S)
    assert (got["c.md"].created_at, got["c.md"].updated_at) == (LATER_S, LATER_S)
    assert (got["e.md"].created_at, got["e.md"].updated_at) == (NOW_S, NOW_S)
    assert (the_plan.after.created_at, the_plan.after.updated_at) == (NOW_S, LATER_S)


def test_shared_root_takeover_rewrites_only_taken_records_and_the_publishing_owner():
    events_manifest = manifest(id="events", files={"c.md": b"x", "e.md": b"e"})
    state = shared_state(("events", "archive", events_manifest, ["c.md", "e.md"]))
    the_plan = make_plan(recorded=state, takeover={"mode": "managed"}, **SHARED)
    got = records(the_plan)
    assert the_plan.decision.action == "takeover"
    assert got["c.md"].owner == KEY and got["c.md"].created_at == NOW_S
    assert got["e.md"] == state.by_path()["e.md"]
    assert the_plan.after.owner(OwnerKey("events", "archive")) == state.owners[0]
    assert the_plan.deletes == ()


def test_shared_root_force_overwrites_colliding_unmanaged_paths_and_deletes_nothing():
    the_plan = make_plan(present={"b.md", "unrelated.txt"}, force=True, **SHARED)
    assert the_plan.decision.forced == {"b.md"}
    assert the_plan.deletes == ()
    assert "b.md" in records(the_plan)


def test_migration_writes_schema_3_state_for_the_same_owner():
    the_plan = make_plan(recorded=single_state(NEW, ["b.md", "c.md"]), **SHARED)
    assert the_plan.decision.action == "migrate"
    assert the_plan.after.mode == "shared_root" and the_plan.writes == ()
    assert the_plan.changed


def recorded_with(state, path, data):
    """`state` recording `data` as the bytes of `path`."""
    outputs = tuple(o._replace(sha256=sha(data), size=len(data)) if o.path == path else o for o in state.outputs)
    return replace(state, outputs=outputs)


def test_outputs_already_there_with_the_same_bytes_are_not_written_again_but_their_records_are_renewed():
    same_b = manifest(created="2026-06-04T11:55:00Z", files={"b.md": b"b", "c.md": b"c"})
    the_plan = make_plan(m=same_b, recorded=recorded_with(single_state(OLD, ["a.md", "b.md"]), "b.md", b"b"))
    assert [w.path for w in the_plan.writes] == ["c.md"]
    assert records(the_plan)["b.md"].updated_at == LATER_S


def test_an_unchanged_output_missing_from_storage_is_written_again():
    same_b = manifest(created="2026-06-04T11:55:00Z", files={"b.md": b"b"})
    recorded = recorded_with(single_state(OLD, ["b.md"]), "b.md", b"b")
    assert [w.path for w in make_plan(m=same_b, recorded=recorded, present=set()).writes] == ["b.md"]
