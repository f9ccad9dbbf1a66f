# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The release rules, pure: a release goes staged → built → active → superseded (or failed,
rolled_back); `previous` returns only to a good release; keep-N counts good releases only and
never removes the active release or the one a rollback returns to."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from ansible_collections.distributor.core.plugins.module_utils._distributor import vocabulary
from ansible_collections.distributor.core.plugins.module_utils._distributor.errors import DistributorError
from ansible_collections.distributor.core.plugins.module_utils._distributor.records.formats import RELEASE_ID_PATTERN
from ansible_collections.distributor.core.plugins.module_utils._distributor.releases.index import (
    Release, ReleaseIndex, parse_index, serialize_index)
from ansible_collections.distributor.core.plugins.module_utils._distributor.releases.rules import (
    dead_releases, fleet_target, is_dead, is_failed_or_unbuilt, next_release_id, previous, release_id, removable_releases,
    staged_release, switch_link_name, token_of, with_active, with_built, with_failed, with_staged, without_releases)
from ansible_collections.distributor.core.plugins.module_utils._distributor.records.state import OwnerKey

from builders import manifest, sha, shared_state

START = datetime(2026, 12, 6, 5, 30, tzinfo=timezone.utc)


def rid(n: int) -> str:
    """The id of the n-th release, n minutes after START."""
    return release_id(START + timedelta(minutes=n), "%012x" % n)


def entry(n: int, status: str = "staged", built_at: str | None = None) -> Release:
    return Release(rid(n), status, "docs", sha(b"%d" % n), (OwnerKey("docs", "web"),), "2026-12-06T05:30:00Z",
                   built_at, None, None)


def index_of(*statuses: str) -> ReleaseIndex:
    """Releases 0, 1, ... with these statuses, all built."""
    return ReleaseIndex("site", tuple(entry(n, status, "2026-12-06T05:31:00Z") for n, status in enumerate(statuses)))


def publish(index: ReleaseIndex, n: int, fail: bool = False) -> ReleaseIndex:
    """What a publish does to the index: begin, then fail, or build and switch."""
    index = with_staged(index, entry(n))
    if fail:
        return with_failed(index, [rid(n)])
    return with_active(with_built(index, rid(n), START), rid(n), START)


def test_a_release_id_sorts_by_time_and_matches_its_pattern():
    assert release_id(START, "0123456789ab") == "20261206T053000Z-0123456789ab"
    assert release_id(datetime(2026, 12, 6, 6, 30, tzinfo=timezone(timedelta(hours=1))), "0123456789ab") == \
        "20261206T053000Z-0123456789ab"
    assert rid(1) < rid(2) < rid(100) and all(RELEASE_ID_PATTERN.match(rid(n)) for n in (0, 1, 4095))


@pytest.mark.parametrize("token", ["t", "0123456789AB", "../0123456789", "0123456789abc"])
def test_a_release_id_is_never_made_of_a_token_that_is_not_one(token):
    with pytest.raises(ValueError):
        release_id(START, token)


def test_the_token_of_a_release_id_is_the_one_it_was_made_with_and_names_its_switch_link():
    assert token_of(release_id(START, "0123456789ab")) == "0123456789ab"
    assert switch_link_name("0123456789ab") == ".distributor.switch.0123456789ab"


def test_a_new_release_is_staged_unbuilt_from_its_manifest_for_the_owners_of_its_record():
    made = manifest("docs")
    state = shared_state(("docs", "web", made, ["a.md"]), ("blog", "web", manifest("blog"), ["b.md"]))
    assert staged_release(rid(1), made, state, START, rid(0)) == Release(
        rid(1), "staged", "docs", made.digest, (OwnerKey("docs", "web"), OwnerKey("blog", "web")), "2026-12-06T05:30:00Z",
        None, None, rid(0))
    assert staged_release(rid(1), None, None, START) == Release(rid(1), "staged", "", "", (), "2026-12-06T05:30:00Z")


@pytest.mark.parametrize("status, built_at, dead, never_served", [
    ("staged", None, True, True),
    ("staged", "2026-12-06T05:31:00Z", False, False),
    ("failed", None, False, True),
    ("failed", "2026-12-06T05:31:00Z", False, True),
    ("superseded", "2026-12-06T05:31:00Z", False, False),
])
def test_a_dead_attempt_is_staged_and_unbuilt_and_a_failed_or_unbuilt_one_is_never_served(status, built_at, dead,
                                                                                          never_served):
    assert (is_dead(entry(1, status, built_at)), is_failed_or_unbuilt(entry(1, status, built_at))) == (dead, never_served)


def test_a_release_is_staged_then_built_then_active_and_the_old_one_superseded():
    index = publish(ReleaseIndex("site"), 0)
    staged = with_staged(index, entry(1))
    assert staged.by_id(rid(1)).status == "staged" and dead_releases(staged) == (staged.by_id(rid(1)),)
    done = with_built(staged, rid(1), START)
    assert done.by_id(rid(1)).built == "2026-12-06T05:30:00Z" and dead_releases(done) == ()
    switched = with_active(done, rid(1), START + timedelta(seconds=5))
    assert (switched.active.id, switched.active.activated) == (rid(1), "2026-12-06T05:30:05Z")
    assert switched.by_id(rid(0)).status == "superseded"


def test_a_rollback_marks_the_release_it_leaves_rolled_back():
    index = index_of("superseded", "active")
    back = with_active(index, previous(index).id, START, rollback=True)
    assert back.active.id == rid(0) and back.by_id(rid(1)).status == "rolled_back"


def test_activating_the_active_release_changes_nothing():
    index = index_of("superseded", "active")
    assert with_active(index, rid(1), START) is index


@pytest.mark.parametrize("statuses, target, words", [
    (("active", "failed"), 1, "failed"),
    (("active",), 7, "holds no release"),
])
def test_a_failed_or_unknown_release_is_never_activated(statuses, target, words):
    with pytest.raises(DistributorError) as caught:
        with_active(index_of(*statuses), rid(target), START)
    assert caught.value.reason == "invalid_config" and words in caught.value.message


def test_an_attempt_never_built_is_never_activated():
    with pytest.raises(DistributorError) as caught:
        with_active(with_staged(index_of("active"), entry(1)), rid(1), START)
    assert caught.value.reason == "invalid_config" and "never completely built" in caught.value.message


def test_previous_skips_rolled_back_and_failed_releases():
    index = index_of("superseded", "superseded", "failed", "rolled_back", "active")
    assert previous(index).id == rid(1)
    assert previous(index_of("superseded", "rolled_back", "failed", "active", "superseded")).id == rid(0)


@pytest.mark.parametrize("statuses, words", [
    (("failed", "rolled_back", "active"), "no earlier good release to return to"),
    (("staged", "superseded"), "no release of it is active; name the one to activate by id (distributor_state_info lists them)"),
    (("active", "superseded"), "no earlier good release to return to"),
    ((), "it holds no release yet; a publish with releases makes the first one"),
])
def test_without_a_good_release_before_the_active_one_previous_is_refused(statuses, words):
    """Nothing in the configuration is wrong: the destination holds no such release (no_release)."""
    with pytest.raises(DistributorError) as caught:
        previous(index_of(*statuses))
    assert caught.value.reason == "no_release" and words in caught.value.message


def test_five_failed_publishes_then_one_success_still_leave_the_active_and_the_previous_good_one():
    index = publish(ReleaseIndex("site"), 0)
    for n in range(1, 6):
        index = publish(index, n, fail=True)
    index = publish(index, 6)
    for keep in (1, 2, 3):
        gone = removable_releases(index, keep)
        assert gone == tuple(rid(n) for n in range(1, 6))
        left = without_releases(index, gone)
        assert [(r.id, r.status) for r in left.releases] == [(rid(0), "superseded"), (rid(6), "active")]
        assert previous(left).id == rid(0)


def test_keep_counts_good_releases_with_the_active_one():
    index = index_of("superseded", "superseded", "superseded", "superseded", "active")
    assert removable_releases(index, 3) == (rid(0), rid(1))
    assert removable_releases(index, 5) == removable_releases(index, 50) == ()


def test_keep_1_still_keeps_the_release_previous_returns_to():
    index = index_of("superseded", "superseded", "active")
    assert removable_releases(index, 1) == (rid(0),)


def test_failed_and_rolled_back_releases_go_at_once():
    assert removable_releases(index_of("failed", "superseded", "rolled_back", "active"), 10) == (rid(0), rid(2))


def test_a_staged_release_older_than_the_active_one_goes_and_a_newer_one_stays():
    index = index_of("staged", "superseded", "active", "staged")
    assert removable_releases(index, 3) == (rid(0),)


def test_without_an_active_release_no_staged_release_goes():
    assert removable_releases(index_of("staged", "staged"), 1) == ()


def test_dead_attempts_are_the_staged_ones_never_built_and_are_marked_failed():
    index = with_staged(with_staged(index_of("active"), entry(1)), entry(2))
    index = with_built(index, rid(2), START)
    assert [r.id for r in dead_releases(index)] == [rid(1)]
    assert with_failed(index, [r.id for r in dead_releases(index)]).by_id(rid(1)).status == "failed"


def test_the_active_release_is_never_marked_failed():
    with pytest.raises(ValueError):
        with_failed(index_of("active"), [rid(0)])


def test_a_release_is_begun_once_and_built_only_while_staged():
    with pytest.raises(ValueError):
        with_staged(index_of("active"), entry(0))
    with pytest.raises(ValueError):
        with_built(index_of("active"), rid(0), START)


INDEXES = st.lists(st.sampled_from(vocabulary.RELEASE_STATUSES), max_size=12).map(
    lambda statuses: [s if s != "active" or statuses.index("active") == n else "superseded" for n, s in enumerate(statuses)])


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(INDEXES, st.integers(min_value=1, max_value=6), st.sets(st.integers(min_value=0, max_value=11)))
def test_removable_never_holds_the_active_or_previous_release_and_holds_every_failed_one(statuses, keep, unbuilt):
    index = ReleaseIndex("site", tuple(
        entry(n, status, None if n in unbuilt and status == "staged" else "2026-12-06T05:31:00Z")
        for n, status in enumerate(statuses)))
    assert parse_index(serialize_index(index), "index") == index
    gone = set(removable_releases(index, keep))
    spared = {r.id for r in (index.active,) if r is not None}
    try:
        spared.add(previous(index).id)
    except DistributorError:
        pass
    assert not gone & spared
    assert {r.id for r in index.releases if r.status == "failed"} <= gone
    if index.active is not None:
        good = [r for r in index.releases if r.status in ("active", "superseded")]
        assert len([r for r in good if r.id not in gone]) >= min(keep, len(good))


def test_a_planted_index_dated_where_no_clock_reaches_is_invalid_state_not_a_traceback():
    newest = "99991231T235959Z-0123456789ab"
    planted = ReleaseIndex("site", (Release(newest, "superseded", "m", "sha256:" + "0" * 64, (), "2026-06-04T12:00:00Z",
                                            "2026-06-04T12:00:00Z", "2026-06-04T12:00:00Z"),))
    with pytest.raises(DistributorError) as refused:
        next_release_id(planted, datetime(2026, 6, 4, tzinfo=timezone.utc), "0123456789ab")
    assert refused.value.reason == "invalid_state" and newest in str(refused.value)


def fleet_of(**statuses) -> dict:
    """Destination id -> an index with releases 0, 1, ... of these statuses (None: not held)."""
    return {where: ReleaseIndex("site", tuple(entry(n, status, "2026-12-06T05:31:00Z") for n, status in enumerate(each) if status))
            for where, each in statuses.items()}


def test_a_fleet_returns_to_the_newest_good_release_every_destination_holds():
    fleet = fleet_of(web1=("superseded", "superseded", "superseded", "active"),
                     web2=("superseded", "superseded", "rolled_back", "active"),
                     web3=("superseded", "superseded", None, "active"))
    assert fleet_target(fleet, "previous") == rid(1)


def test_a_mixed_fleet_is_not_rolled_back_and_each_destination_active_release_is_named():
    fleet = fleet_of(web1=("superseded", "active"), web2=("active", "staged"), web3=("superseded", "superseded"))
    with pytest.raises(DistributorError) as refused:
        fleet_target(fleet, "previous")
    assert refused.value.reason == "conflict"
    for named in ("web1: %s" % rid(1), "web2: %s" % rid(0), "web3: none", "release: <id>"):
        assert named in refused.value.message


def test_a_mixed_fleet_converges_on_a_release_named_by_id():
    fleet = fleet_of(web1=("superseded", "active"), web2=("active", "superseded"))
    assert fleet_target(fleet, rid(1)) == rid(1)


@pytest.mark.parametrize("web1, web2, words", [
    (("superseded", "superseded", "active"), ("rolled_back", "failed", "active"), "no good release older than the active %s" % rid(2)),
    (("staged",), ("staged",), "no release of the fleet is active"),
])
def test_a_fleet_without_a_common_release_to_return_to_is_no_release(web1, web2, words):
    with pytest.raises(DistributorError) as refused:
        fleet_target(fleet_of(web1=web1, web2=web2), "previous")
    assert refused.value.reason == "no_release" and words in refused.value.message


def test_a_release_named_for_a_fleet_is_refused_naming_each_destination_that_cannot_activate_it():
    fleet = fleet_of(web1=("superseded", "active", "staged"), web2=("superseded", "active", "failed"), web3=("active", "superseded"))
    fleet["web4"] = ReleaseIndex("site", (entry(0, "active", "x"), entry(2, "staged", None)))
    with pytest.raises(DistributorError) as refused:
        fleet_target(fleet, rid(2))
    assert refused.value.reason == "invalid_config"
    message = refused.value.message
    assert "web2 holds it failed" in message and "web3 does not hold it" in message and "web4 holds it never completely built" in message
    assert "web1" not in message
