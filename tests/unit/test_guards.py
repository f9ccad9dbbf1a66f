# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The delete guard as a pure rule, and its place in a publish: before anything is written,
in check mode too."""

from __future__ import annotations

import pytest

from ansible_collections.distributor.core.plugins.module_utils._distributor.config import DEFAULT_MAX_DELETES
from ansible_collections.distributor.core.plugins.module_utils._distributor.errors import DistributorError
from ansible_collections.distributor.core.plugins.module_utils._distributor.guards import check_delete_limit
from ansible_collections.distributor.core.plugins.module_utils._distributor.plan import Plan
from ansible_collections.distributor.core.plugins.module_utils._distributor.publish import publish

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
