# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""An approved plan is exactly what runs: over random sequences of publishes, prunes and repairs
(new, replace, merge, takeover, force, shared-root owners, migration), check mode's result and
digest equal the real run's that follows; the check's digest lets the run proceed after another
owner published unrelated paths, and is refused (plan_changed, nothing changed) after a publish
that changes the plan, or after an unmanaged file appears where the plan writes."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from ansible_collections.distributor.core.plugins.module_utils._distributor.errors import DistributorError
from ansible_collections.distributor.core.plugins.module_utils._distributor.operations.prune import prune
from ansible_collections.distributor.core.plugins.module_utils._distributor.operations.publish import publish
from ansible_collections.distributor.core.plugins.module_utils._distributor.operations.reconcile import reconcile_state

from builders import LATER, MEMORY_STORAGE, NOW, write_bundle
from memory_storage import MemoryStorage

COMPARED = ("changed", "action", "written", "deleted", "retained", "changes", "plan_digest", "state", "taken_over", "forced")
DESTINATIONS = {
    "single replace": {},
    "single merge": {"reconciliation": {"mode": "merge"}},
    "single takeover": {"takeover": {"mode": "managed"}},
    "shared replace": {"state": {"mode": "shared_root"}},
    "shared merge takeover": {"state": {"mode": "shared_root"}, "reconciliation": {"mode": "merge"}, "takeover": {"mode": "managed"}},
    "migration": {},
}
PATHS = {"reports": ["r/a.html", "r/b.html", "common.html"], "events": ["e/a.html", "common.html"]}
# (owner, version, force, a path where an unmanaged file appears between the check and the run)
STEP = st.tuples(st.sampled_from(["reports", "events"]), st.integers(0, 3), st.booleans(),
                 st.sampled_from([None] + sorted(set(PATHS["reports"] + PATHS["events"]))))
_counter = itertools.count()


def opener(store):
    return lambda cfg, base, token: MemoryStorage(store, base, token)


def destination(name):
    return dict({"id": "archive", "storage": MEMORY_STORAGE, "retention": {"max_outputs": 1}}, **DESTINATIONS[name])


def bundle(tmp_path_factory, owner, version):
    """Version v of an owner's bundle: a newer created time, and a file set and content that
    change with v (so replace, merge and takeover all happen)."""
    paths = [p for i, p in enumerate(PATHS[owner]) if (version + i) % 3 != 0] or PATHS[owner][:1]
    files = {p: b"%s v%d %s" % (owner.encode(), version // 2, p.encode()) for p in paths}
    directory = tmp_path_factory.mktemp("b%d" % next(_counter))
    return write_bundle(directory, files, id="%s.src" % owner, created="2026-06-0%dT00:00:00Z" % (version + 1))


def outcome(run, **kwargs):
    try:
        return run(**kwargs)
    except DistributorError as error:
        return {"failed": error.reason}


def same(check, real):
    if "failed" in check:
        assert real == check
        return
    assert {k: check.get(k) for k in COMPARED} == {k: real.get(k) for k in COMPARED}


def publisher(tmp_path_factory, store, dest, owner, version, force):
    source = bundle(tmp_path_factory, owner, version)

    def run(check_mode=False, expect_plan_digest=None):
        return publish(source, {"id": owner}, dest, force=force, check_mode=check_mode, now=NOW, opener=opener(store),
                       expect_plan_digest=expect_plan_digest)
    return run


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.sampled_from(sorted(DESTINATIONS)), st.lists(STEP, min_size=1, max_size=6))
def test_check_mode_predicts_the_real_run_and_its_digest_lets_exactly_that_run_proceed(tmp_path_factory, name, steps):
    store, dest = {}, destination(name)
    for index, (owner, version, force, planted) in enumerate(steps):
        if name == "migration":  # single-owner first, then the same root opened as a shared root
            dest = destination("single replace" if index < len(steps) // 2 else "shared replace")
        run = publisher(tmp_path_factory, store, dest, owner, version, force)
        before = dict(store)
        check = outcome(run, check_mode=True)
        assert store == before, "check mode wrote"
        if "failed" in check:
            same(check, outcome(run))
            continue
        if planted is not None and planted not in store:
            store[planted] = b"appeared after the review"
        before = dict(store)
        real = outcome(run, expect_plan_digest=check["plan_digest"])
        if planted is not None and real in ({"failed": "plan_changed"}, {"failed": "unmanaged"}):
            assert store == before  # refused (without force, as unmanaged before the digest is compared)
            continue
        same(check, real)
    for operation in (prune, reconcile_state):
        for owner in ("reports", "events"):
            def run(check_mode=False, expect_plan_digest=None):
                return operation(owner, dest, check_mode=check_mode, now=LATER, opener=opener(store),
                                 expect_plan_digest=expect_plan_digest)
            before = dict(store)
            check = outcome(run, check_mode=True)
            assert store == before
            if "failed" not in check:
                same(check, outcome(run, expect_plan_digest=check["plan_digest"]))


def test_another_owner_publishing_unrelated_paths_does_not_change_the_approved_plan(tmp_path_factory):
    store, dest = {}, destination("shared replace")
    approved = publisher(tmp_path_factory, store, dest, "reports", 1, False)
    digest = approved(check_mode=True)["plan_digest"]
    publish(write_bundle(tmp_path_factory.mktemp("other"), {"e/x.html": b"x"}, id="events.src"), {"id": "events"}, dest,
            now=NOW, opener=opener(store))
    result = approved(expect_plan_digest=digest)
    assert result["changed"] and result["plan_digest"] == digest


@pytest.mark.parametrize("intervening", ["reports", "events"])
def test_a_publish_that_changes_the_plan_in_between_is_refused_and_nothing_changes(tmp_path_factory, intervening):
    store, dest = {}, destination("shared merge takeover")
    publisher(tmp_path_factory, store, dest, "reports", 1, False)()
    approved = publisher(tmp_path_factory, store, dest, "reports", 2, False)
    digest = approved(check_mode=True)["plan_digest"]
    publisher(tmp_path_factory, store, dest, intervening, 3, False)()
    before = dict(store)
    with pytest.raises(DistributorError) as caught:
        approved(expect_plan_digest=digest)
    assert caught.value.reason == "plan_changed" and digest in caught.value.message
    assert caught.value.details["plan_digest"] != digest
    assert store == before


def test_a_malformed_expected_digest_is_invalid_config_and_changes_nothing(tmp_path_factory):
    store = {}
    run = publisher(tmp_path_factory, store, destination("single replace"), "reports", 1, False)
    with pytest.raises(DistributorError) as caught:
        run(expect_plan_digest="abc")
    assert caught.value.reason == "invalid_config" and store == {}


def test_a_migration_is_predicted_and_approved_like_any_publish(tmp_path_factory):
    store = {}
    publisher(tmp_path_factory, store, destination("single replace"), "reports", 1, False)()
    migrate = publisher(tmp_path_factory, store, destination("shared replace"), "reports", 1, False)
    check = migrate(check_mode=True)
    assert check["action"] == "migrate"
    same(check, migrate(expect_plan_digest=check["plan_digest"]))


@pytest.mark.parametrize("name", ["single replace", "shared replace"])
def test_an_unmanaged_file_planted_at_a_planned_path_after_review_turns_create_into_force_overwrite_and_is_refused(
        tmp_path_factory, name):
    """The review already forces one collision (so the action is force_replace either way); a
    second unmanaged file appears at a path the review showed as a `create`."""
    store, dest = {}, destination(name)
    store["r/a.html"] = b"unmanaged, seen by the review"
    approved = publisher(tmp_path_factory, store, dest, "reports", 1, True)
    check = approved(check_mode=True)
    assert check["action"] == "force_replace"
    assert {c["path"]: c["change"] for c in check["changes"]} == {"r/a.html": "force_overwrite", "r/b.html": "create"}
    store["r/b.html"] = b"planted after the review"
    before = dict(store)
    with pytest.raises(DistributorError) as caught:
        approved(expect_plan_digest=check["plan_digest"])
    assert caught.value.reason == "plan_changed"
    assert "overwrite files no record manages r/a.html, r/b.html" in caught.value.message
    assert {c["path"]: c["change"] for c in caught.value.details["changes"]}["r/b.html"] == "force_overwrite"
    assert store == before


def test_a_takeover_of_another_owners_file_with_the_same_bytes_is_in_the_review_though_nothing_is_written(tmp_path):
    """The path moves to the new owner without a write: the review still names it (its change
    and the digest the run is approved by), or a reviewer would approve a takeover unseen."""
    store, dest = {}, destination("shared merge takeover")
    same_bytes = {"common.html": b"shared page", "r/a.html": b"reports"}
    publish(write_bundle(tmp_path / "r", same_bytes, id="reports.src"), {"id": "reports"}, dest, now=NOW, opener=opener(store))
    events = write_bundle(tmp_path / "e", {"common.html": b"shared page", "e/a.html": b"events"}, id="events.src")

    def run(**kwargs):
        return publish(events, {"id": "events"}, dest, now=LATER, opener=opener(store), **kwargs)
    check = run(check_mode=True)
    assert "common.html" not in [c["path"] for c in check["changes"] if c["change"] == "create"]
    taken = [c for c in check["changes"] if c["path"] == "common.html"]
    assert taken == [{"path": "common.html", "change": "take_over", "owner": "events/archive", "previous_owner": "reports/archive",
                      "before": taken[0]["after"], "after": taken[0]["after"]}]
    real = run(expect_plan_digest=check["plan_digest"])
    assert real["changes"] == check["changes"] and "common.html" not in real["written"]


def test_an_approved_takeover_of_one_owners_file_does_not_take_it_from_another_owner_with_the_same_bytes(tmp_path):
    """Between the review and the run another owner takes the path over, bytes unchanged: the run
    would take it from an owner the review never named, so its digest no longer matches."""
    store, dest = {}, destination("shared merge takeover")
    page = {"common.html": b"shared page"}
    publish(write_bundle(tmp_path / "r", page, id="reports.src"), {"id": "reports"}, dest, now=NOW, opener=opener(store))
    events = write_bundle(tmp_path / "e", dict(page, **{"e/a.html": b"events"}), id="events.src")
    check = publish(events, {"id": "events"}, dest, check_mode=True, now=LATER, opener=opener(store))
    assert [c["previous_owner"] for c in check["changes"] if c["path"] == "common.html"] == ["reports/archive"]
    publish(write_bundle(tmp_path / "n", page, id="news.src"), {"id": "news"}, dest, now=NOW, opener=opener(store))
    before = dict(store)
    with pytest.raises(DistributorError) as caught:
        publish(events, {"id": "events"}, dest, now=LATER, opener=opener(store), expect_plan_digest=check["plan_digest"])
    assert caught.value.reason == "plan_changed" and store == before
