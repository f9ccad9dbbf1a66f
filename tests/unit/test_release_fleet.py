# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""distributor_release with `fleet` (#40 items 2-4), on the memory double: every destination
switches to one release or none does; a rename that fails after others switched switches them
back; a fleet rolls back together to the newest good release every destination holds; one
digest reviews the fleet; a forward switch clears what keep-N no longer keeps."""

from __future__ import annotations

from datetime import timedelta

import pytest

from ansible_collections.distributor.core.plugins.module_utils._distributor.errors import DistributorError
from ansible_collections.distributor.core.plugins.module_utils._distributor.operations.fleet import switch_fleet
from ansible_collections.distributor.core.plugins.module_utils._distributor.operations.switch import switch_release

from builders import LATER, NOW
from memory_storage import MemoryStorage
from test_release_publish import HOME, generations, index, live, publish_files, statuses

WEB = ("web1", "web2", "web3")


def member(where, **releases):
    return {"id": where, "storage": {"type": "local", "root": "/nonexistent/" + where}, "path": "site",
            "releases": dict({"keep": 3}, **releases)}


def fleet(**releases):
    return [member(where, **releases) for where in WEB]


def fleet_opener(stores, fault=None):
    """Each destination its own store; `fault(where, op, path)` cuts one destination's storage."""
    def opener(cfg, base, token):
        where = cfg["root"].rpartition("/")[2]
        return MemoryStorage(stores[where], base, token, (lambda op, path: fault(where, op, path)) if fault else None)
    return opener


def same_id(tmp_path, stores, name, hour) -> str:
    """One release id staged on every destination (releases.id), as the role stages a fleet: its id chosen once."""
    shared = "%s-%012x" % ((LATER + timedelta(hours=hour)).strftime("%Y%m%dT%H%M%SZ"), 0xf1ee7 + hour)
    for where in WEB:
        result = publish_files(tmp_path, stores[where], "%s-%s" % (name, where), {"index.html": name.encode()},
                               dest=member(where, activate=False, id=shared), now=LATER + timedelta(hours=hour))
        assert result["release"]["id"] == shared
    return shared


def active_everywhere(tmp_path, stores, name, hour) -> dict:
    """A release published and switched on each destination (each picks its own id)."""
    for where in WEB:
        publish_files(tmp_path, stores[where], "%s-%s" % (name, where), {"index.html": name.encode()}, dest=member(where),
                      now=LATER + timedelta(hours=hour))
    return {where: live(stores[where]) for where in WEB}


@pytest.fixture
def stores(tmp_path):
    stores = {where: {} for where in WEB}
    active_everywhere(tmp_path, stores, "one", 0)
    return stores


def test_a_fleet_switches_every_destination_to_one_release_and_reports_each(tmp_path, stores):
    before = {where: live(stores[where]) for where in WEB}
    new = same_id(tmp_path, stores, "two", 1)
    check = switch_fleet("site", fleet(), new, check_mode=True, opener=fleet_opener(stores))
    assert check["changed"] and check["window_seconds"] is None and all(live(stores[w]) == before[w] for w in WEB)
    result = switch_fleet("site", fleet(), new, opener=fleet_opener(stores), expect_plan_digest=check["plan_digest"])
    assert result["changed"] and result["release"] == new and not result["rollback"] and result["window_seconds"] >= 0
    assert all(live(stores[w]) == new and statuses(stores[w])[new] == "active" for w in WEB)
    assert [(d["id"], d["from"], d["release"], d["changed"]) for d in result["destinations"]] == [
        (w, before[w], new, True) for w in WEB]
    assert [d["plan_digest"] for d in result["destinations"]] == [d["plan_digest"] for d in check["destinations"]]
    again = switch_fleet("site", fleet(), new, opener=fleet_opener(stores))
    assert not again["changed"] and again["window_seconds"] is None


def test_a_rename_failing_on_the_third_destination_switches_the_first_two_back_and_names_them(tmp_path, stores):
    before = {where: live(stores[where]) for where in WEB}
    indexes = {where: index(stores[where]) for where in WEB}
    new = same_id(tmp_path, stores, "two", 1)
    staged = {where: index(stores[where]) for where in WEB}

    def fault(where, op, path):
        if where == "web3" and op == "switch":
            raise OSError("disk on fire")
    with pytest.raises(DistributorError) as failed:
        switch_fleet("site", fleet(), new, opener=fleet_opener(stores, fault))
    assert failed.value.reason == "storage_error"
    assert "destination web3 failed" in failed.value.message
    assert "web1 (to %s), web2 (to %s)" % (before["web1"], before["web2"]) in failed.value.message
    assert failed.value.details == {"switched_back": ["web1", "web2"], "not_switched_back": []}
    assert all(live(stores[w]) == before[w] and index(stores[w]) == staged[w] for w in WEB)
    assert all(not any(".distributor.switch." in key for key in stores[w]) for w in WEB)
    assert indexes != staged


def test_a_rename_that_took_effect_and_still_failed_is_switched_back_with_the_others(tmp_path, stores):
    before = {where: live(stores[where]) for where in WEB}
    new = same_id(tmp_path, stores, "two", 1)
    staged = {where: index(stores[where]) for where in WEB}

    def fault(where, op, path):
        if where == "web2" and op == "switched":
            raise OSError("the reply was lost")
    with pytest.raises(DistributorError) as failed:
        switch_fleet("site", fleet(), new, opener=fleet_opener(stores, fault))
    assert failed.value.details == {"switched_back": ["web1", "web2"], "not_switched_back": []}
    assert all(live(stores[w]) == before[w] and index(stores[w]) == staged[w] for w in WEB)


def test_a_destination_that_cannot_be_prepared_leaves_every_destination_unswitched(tmp_path, stores):
    before = {where: live(stores[where]) for where in WEB}
    new = same_id(tmp_path, stores, "two", 1)

    def fault(where, op, path):
        if where == "web2" and op == "symlink":
            raise OSError("no space left")
    with pytest.raises(DistributorError) as failed:
        switch_fleet("site", fleet(), new, opener=fleet_opener(stores, fault))
    assert "destination web2" in failed.value.message and "no destination of the fleet was switched" in failed.value.message
    assert all(live(stores[w]) == before[w] and statuses(stores[w])[new] == "staged" for w in WEB)
    assert all(not any(".distributor.switch." in key for key in stores[w]) for w in WEB)


def test_a_release_one_destination_lacks_is_refused_naming_it_and_nothing_switches(tmp_path, stores):
    before = {where: live(stores[where]) for where in WEB}
    new = same_id(tmp_path, stores, "two", 1)
    del stores["web3"][HOME + "/%s/index.html" % new]
    with pytest.raises(DistributorError) as refused:
        switch_fleet("site", fleet()[:2] + [member("web4")], new, opener=fleet_opener(dict(stores, web4={})))
    assert refused.value.reason == "invalid_config" and "web4 does not hold it" in refused.value.message
    with pytest.raises(DistributorError) as refused:
        switch_fleet("site", fleet(), new, opener=fleet_opener(stores))
    assert refused.value.reason == "storage_error" and "destination web3: release %s is not whole" % new in refused.value.message
    assert all(live(stores[w]) == before[w] for w in WEB)


def test_a_fleet_rolls_back_together_and_a_mixed_fleet_is_refused_unless_an_id_is_named(tmp_path, stores):
    first, second, third = [same_id(tmp_path, stores, name, hour) for name, hour in (("two", 1), ("three", 2), ("four", 3))]
    for release in (first, second, third):
        switch_fleet("site", fleet(), release, opener=fleet_opener(stores))
    switch_release("site", member("web2"), "previous", opener=fleet_opener(stores))
    with pytest.raises(DistributorError) as refused:
        switch_fleet("site", fleet(), "previous", opener=fleet_opener(stores))
    assert refused.value.reason == "conflict"
    assert "web1: %s, web2: %s, web3: %s" % (third, second, third) in refused.value.message
    converged = switch_fleet("site", fleet(), second, opener=fleet_opener(stores))
    assert [d["changed"] for d in converged["destinations"]] == [True, False, True] and converged["rollback"]
    assert all(live(stores[w]) == second for w in WEB)
    result = switch_fleet("site", fleet(), "previous", opener=fleet_opener(stores))
    assert result["release"] == first and result["rollback"] and all(d["removed"] == [] for d in result["destinations"])
    assert all(live(stores[w]) == first and statuses(stores[w])[second] == "rolled_back" for w in WEB)


def test_a_forward_switch_clears_what_keep_no_longer_keeps_and_check_mode_predicts_it(tmp_path, stores):
    for hour in (1, 2, 3):
        active_everywhere(tmp_path, stores, "v%d" % hour, hour)
    new = same_id(tmp_path, stores, "v4", 4)
    check = switch_fleet("site", fleet(keep=2), new, check_mode=True, opener=fleet_opener(stores))
    predicted = {d["id"]: d["removed"] for d in check["destinations"]}
    assert all(len(predicted[w]) == 2 for w in WEB)
    result = switch_fleet("site", fleet(keep=2), new, opener=fleet_opener(stores))
    assert {d["id"]: d["removed"] for d in result["destinations"]} == predicted
    assert all(len(generations(stores[w])) == 2 for w in WEB)


def test_a_forward_single_destination_switch_clears_what_keep_no_longer_keeps(tmp_path):
    store = {}
    for hour in range(4):
        publish_files(tmp_path, store, "v%d" % hour, {"index.html": b"%d" % hour}, dest=member("web1", keep=5),
                      now=NOW + timedelta(hours=hour))
    staged = publish_files(tmp_path, store, "v9", {"index.html": b"9"}, dest=member("web1", keep=5, activate=False),
                           now=NOW + timedelta(hours=9))["release"]["id"]
    opener = fleet_opener({"web1": store})
    check = switch_release("site", member("web1", keep=2), staged, check_mode=True, opener=opener)
    assert len(check["removed"]) == 3 and len(generations(store)) == 5
    result = switch_release("site", member("web1", keep=2), staged, opener=opener, expect_plan_digest=check["plan_digest"])
    assert result["removed"] == check["removed"] and len(generations(store)) == 2


def test_fleet_refuses_a_destination_listed_twice_under_one_id_or_two_or_without_releases(tmp_path):
    opener = fleet_opener({"web1": {}})
    with pytest.raises(DistributorError) as refused:
        switch_fleet("site", [member("web1"), member("web1")], "previous")
    assert refused.value.reason == "invalid_config" and "web1 is listed more than once" in refused.value.message
    with pytest.raises(DistributorError) as refused:
        switch_fleet("site", [member("web1"), dict(member("web1"), id="web0")], "previous", lock_timeout=0.5, opener=opener)
    assert refused.value.reason == "invalid_config" and "destinations web0 and web1 are the same bundle path site" in refused.value.message
    plain = dict(member("web2"))
    del plain["releases"]
    with pytest.raises(DistributorError) as refused:
        switch_fleet("site", [member("web1"), plain], "previous")
    assert refused.value.reason == "invalid_config" and "fleet[1]: destination web2 has no releases" in refused.value.message


def test_check_mode_of_a_switch_does_not_list_a_release_the_run_keeps_because_it_holds_what_no_record_names(tmp_path, stores):
    for hour in (1, 2, 3):
        active_everywhere(tmp_path, stores, "v%d" % hour, hour)
    new = same_id(tmp_path, stores, "v4", 4)
    oldest = sorted(generations(stores["web2"]))[0]
    stores["web2"]["%s/%s/planted.txt" % (HOME, oldest)] = b"not distributor's"
    check = switch_fleet("site", fleet(keep=2), new, check_mode=True, opener=fleet_opener(stores))
    single = switch_release("site", member("web2", keep=2), new, check_mode=True, opener=fleet_opener(stores))
    result = switch_fleet("site", fleet(keep=2), new, opener=fleet_opener(stores))
    removed = {d["id"]: d["removed"] for d in result["destinations"]}
    assert oldest in generations(stores["web2"]) and oldest not in removed["web2"] and len(removed["web2"]) == 1
    assert {d["id"]: d["removed"] for d in check["destinations"]} == removed and single["removed"] == removed["web2"]
