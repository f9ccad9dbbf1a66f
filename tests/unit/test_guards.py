# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The delete guard as a pure rule, and its place in a publish: before anything is written,
in check mode too."""

from __future__ import annotations

import pytest

from ansible_collections.distributor.core.plugins.module_utils._distributor.records.config import DEFAULT_MAX_DELETES
from ansible_collections.distributor.core.plugins.module_utils._distributor.errors import DistributorError
from ansible_collections.distributor.core.plugins.module_utils._distributor.planning.guards import check_delete_limit
from ansible_collections.distributor.core.plugins.module_utils._distributor.planning.plan import Plan
from ansible_collections.distributor.core.plugins.module_utils._distributor.operations.publish import publish

from builders import LATER, MEMORY_STORAGE, NOW, destination, manifest, write_bundle
from memory_storage import MemoryStorage

EMPTY = manifest(files={})
FULL = manifest()


def deleting(count):
    """A plan that deletes `count` outputs; the guard reads nothing else of it."""
    return Plan(None, None, "", (), tuple("p%03d.html" % i for i in range(count)), None, None, ())


def refusal(plan, dest, m):
    with pytest.raises(DistributorError) as caught:
        check_delete_limit(plan, dest, m)
    assert caught.value.reason == "delete_limit"
    return caught.value.message


def test_the_default_limit_is_256():
    assert destination().max_deletes == DEFAULT_MAX_DELETES == 256


def test_deletes_up_to_the_limit_pass():
    check_delete_limit(deleting(3), destination(transfer={"max_deletes": 3}), FULL)


def test_deletes_over_the_limit_are_refused_naming_count_limit_and_first_paths():
    message = refusal(deleting(25), destination(transfer={"max_deletes": 3}), FULL)
    assert "destination archive" in message
    assert "delete 25 output(s), more than transfer.max_deletes (3)" in message
    assert "p000.html, p001.html" in message and "p019.html and 5 more" in message
    assert "p020.html" not in message


def test_minus_one_is_no_limit():
    check_delete_limit(deleting(10000), destination(transfer={"max_deletes": -1}), FULL)


def test_zero_refuses_any_delete():
    refusal(deleting(1), destination(transfer={"max_deletes": 0}), FULL)


@pytest.mark.parametrize("value", [-2, "many"])
def test_other_limits_are_invalid_config(value):
    with pytest.raises(DistributorError) as caught:
        destination(transfer={"max_deletes": value})
    assert caught.value.reason == "invalid_config"


def test_an_empty_bundle_that_deletes_is_refused_saying_the_bundle_is_empty():
    assert "the bundle is empty" in refusal(deleting(1), destination(), EMPTY)


def test_an_empty_bundle_that_deletes_passes_with_allow_empty():
    check_delete_limit(deleting(1), destination(transfer={"allow_empty": True}), EMPTY)


def test_allow_empty_does_not_lift_the_limit():
    refusal(deleting(5), destination(transfer={"allow_empty": True, "max_deletes": 4}), EMPTY)


def test_an_empty_bundle_that_deletes_nothing_passes():
    check_delete_limit(deleting(0), destination(), EMPTY)


def memory(store):
    return lambda cfg, base, token: MemoryStorage(store, base, token)


PIPELINE = {"id": "reports"}


def published(tmp_path, count):
    """A store holding `count` managed outputs of one publish."""
    store = {}
    bundle = write_bundle(tmp_path / "v1", {"f%03d.txt" % i: b"x" for i in range(count)}, created="2026-06-03T00:00:00Z")
    publish(bundle, PIPELINE, {"id": "archive", "storage": MEMORY_STORAGE}, now=NOW, opener=memory(store))
    return store


@pytest.mark.parametrize("check_mode", [False, True])
def test_a_publish_over_the_limit_changes_nothing(tmp_path, check_mode):
    store = published(tmp_path, 5)
    before = dict(store)
    smaller = write_bundle(tmp_path / "v2", {"f000.txt": b"y"})
    dest = {"id": "archive", "storage": MEMORY_STORAGE, "transfer": {"max_deletes": 3}}
    with pytest.raises(DistributorError) as caught:
        publish(smaller, PIPELINE, dest, now=LATER, check_mode=check_mode, opener=memory(store))
    assert caught.value.reason == "delete_limit"
    assert "delete 4 output(s)" in caught.value.message
    assert store == before


@pytest.mark.parametrize("allow_empty", [False, True])
def test_an_empty_bundle_is_refused_unless_allowed(tmp_path, allow_empty):
    store = published(tmp_path, 2)
    (tmp_path / "v2").mkdir()
    empty = write_bundle(tmp_path / "v2", {})
    dest = {"id": "archive", "storage": MEMORY_STORAGE, "transfer": {"allow_empty": allow_empty}}
    if allow_empty:
        assert publish(empty, PIPELINE, dest, now=LATER, opener=memory(store))["deleted"] == ["f000.txt", "f001.txt"]
        return
    before = dict(store)
    with pytest.raises(DistributorError) as caught:
        publish(empty, PIPELINE, dest, now=LATER, opener=memory(store))
    assert caught.value.reason == "delete_limit" and "the bundle is empty" in caught.value.message
    assert store == before


# -- every way a publish deletes is counted (issue 29, item 11) --------------------------------
# Each scenario builds a root and returns (store, bundle, destination, force): the publish then
# deletes LIMIT + 1 outputs by one path of plan.py/decide.py, and with transfer.max_deletes:
# LIMIT it fails delete_limit before anything is written, in check mode too.

LIMIT = 4
MANY = {"old%d.txt" % i: b"o" for i in range(LIMIT + 1)}
SHARED = {"state": {"mode": "shared_root"}}


def _root(tmp_path, files, extra=None, pipeline_id="reports", id="reports.example", store=None, created="2026-06-03T00:00:00Z"):
    store = {} if store is None else store
    bundle = write_bundle(tmp_path / ("first-%s-%s" % (pipeline_id, id)), files, id=id, created=created)
    publish(bundle, {"id": pipeline_id}, dict({"id": "archive", "storage": MEMORY_STORAGE}, **(extra or {})), now=NOW, opener=memory(store))
    return store


def single_owner_takeover(tmp_path):
    store = _root(tmp_path, MANY)
    return store, write_bundle(tmp_path / "new", {"new.txt": b"n"}, id="other.source"), {"takeover": {"mode": "managed"}}, False


def shared_root_takeover_of_an_owner(tmp_path):
    store = _root(tmp_path, MANY, SHARED)
    return store, write_bundle(tmp_path / "new", {"new.txt": b"n"}, id="other.source"), dict(SHARED, takeover={"mode": "managed"}), False


def single_owner_force(tmp_path):
    store = {"unmanaged%d.txt" % i: b"u" for i in range(LIMIT + 1)}
    return store, write_bundle(tmp_path / "new", {"new.txt": b"n"}), {}, True


def shared_root_force(tmp_path):
    store = _root(tmp_path, {"e.txt": b"e"}, SHARED, pipeline_id="events", id="events.daily")
    store.update({"docs/u%d.txt" % i: b"u" for i in range(LIMIT + 1)})
    return store, write_bundle(tmp_path / "new", {"docs": b"now a file"}), SHARED, True


def shared_root_migration(tmp_path):
    store = _root(tmp_path, MANY)
    return store, write_bundle(tmp_path / "new", {"new.txt": b"n"}), SHARED, False


def many_owner_shared_root(tmp_path):
    store = _root(tmp_path, MANY, SHARED)
    _root(tmp_path, {"e%d.txt" % i: b"e" for i in range(LIMIT + 1)}, SHARED, pipeline_id="events", id="events.daily",
          store=store)
    return store, write_bundle(tmp_path / "new", {"new.txt": b"n"}), SHARED, False


DELETING = [single_owner_takeover, shared_root_takeover_of_an_owner, single_owner_force, shared_root_force,
            shared_root_migration, many_owner_shared_root]


@pytest.mark.parametrize("check_mode", [True, False], ids=["check", "real"])
@pytest.mark.parametrize("scenario", DELETING, ids=[s.__name__ for s in DELETING])
def test_every_way_a_publish_deletes_counts_toward_max_deletes(tmp_path, scenario, check_mode):
    store, bundle, extra, force = scenario(tmp_path)
    before = dict(store)
    limited = dict({"id": "archive", "storage": MEMORY_STORAGE, "transfer": {"max_deletes": LIMIT}}, **extra)
    with pytest.raises(DistributorError) as caught:
        publish(bundle, PIPELINE, limited, force=force, now=LATER, check_mode=check_mode, opener=memory(store))
    assert caught.value.reason == "delete_limit", caught.value.message
    assert "delete %d output(s)" % (LIMIT + 1) in caught.value.message
    assert store == before
    allowed = dict(limited, transfer={"max_deletes": LIMIT + 1})
    result = publish(bundle, PIPELINE, allowed, force=force, now=LATER, check_mode=check_mode, opener=memory(store))
    assert len(result["deleted"]) == LIMIT + 1, result["deleted"]
    assert result["action"] == ACTIONS[scenario.__name__]


ACTIONS = {"single_owner_takeover": "takeover", "shared_root_takeover_of_an_owner": "takeover",
           "single_owner_force": "force_replace", "shared_root_force": "force_replace",
           "shared_root_migration": "migrate", "many_owner_shared_root": "replace"}
