# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""State repair as pure data, and the reconcile-state shell on the memory backend."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from ansible_collections.distributor.core.plugins.module_utils._distributor.operations.managed_root import Selector
from ansible_collections.distributor.core.plugins.module_utils._distributor.errors import DistributorError
from ansible_collections.distributor.core.plugins.module_utils._distributor.paths import JOURNAL_NAME, STATE_NAME
from ansible_collections.distributor.core.plugins.module_utils._distributor.operations.reconcile import reconcile_plan, reconcile_state
from ansible_collections.distributor.core.plugins.module_utils._distributor.records.state import OwnerKey, serialize_state
from ansible_collections.distributor.core.plugins.module_utils._distributor.records.state_parse import parse_state

from builders import LATER, LATER_S, MEMORY_STORAGE, NOW_S, manifest, shared_state, single_state
from memory_storage import MemoryStorage

M = manifest()
KEY = OwnerKey("reports", "archive")
OTHER = OwnerKey("events", "archive")
SHARED = shared_state(("reports", "archive", M, ("r1.html", "r2.html")), ("events", "archive", M, ("e1.html", "e2.html")))


# reconcile_plan

def test_nothing_missing_keeps_the_state_as_it_is():
    state = single_state(M, ("a.html", "b.html"))
    repair = reconcile_plan(state, KEY, False, frozenset({"a.html", "b.html"}), LATER)
    assert (repair.changed, repair.missing, repair.unmanaged, repair.owners) == (False, (), (), (KEY,))
    assert repair.after is state


def test_missing_records_are_removed_and_the_state_stamped():
    state = single_state(M, ("a.html", "b.html"))
    repair = reconcile_plan(state, KEY, False, frozenset({"b.html", "notes.txt"}), LATER)
    assert repair.changed and [o.path for o in repair.missing] == ["a.html"]
    assert repair.unmanaged == ("notes.txt",)
    assert [o.path for o in repair.after.outputs] == ["b.html"]
    assert (repair.after.updated_at, repair.after.created_at, repair.after.published_at) == (LATER_S, NOW_S, NOW_S)
    assert repair.after.owners == state.owners


def test_output_records_other_than_the_missing_ones_are_untouched():
    state = single_state(M, ("a.html", "b.html"))
    state = replace(state, outputs=(state.outputs[0], state.outputs[1]._replace(updated_at="2026-06-01T00:00:00Z")))
    repair = reconcile_plan(state, KEY, False, frozenset({"b.html"}), LATER)
    assert repair.after.outputs == (state.outputs[1],)


def test_shared_root_checks_only_the_selected_owner_by_default():
    repair = reconcile_plan(SHARED, KEY, False, frozenset({"r2.html"}), LATER)
    assert repair.owners == (KEY,)
    assert [o.path for o in repair.missing] == ["r1.html"]
    assert sorted(o.path for o in repair.after.outputs) == ["e1.html", "e2.html", "r2.html"]
    assert repair.after.owners == SHARED.owners


def test_all_owners_checks_every_owner():
    repair = reconcile_plan(SHARED, KEY, True, frozenset({"r2.html"}), LATER)
    assert repair.owners == (KEY, OTHER)
    assert sorted(o.path for o in repair.missing) == ["e1.html", "e2.html", "r1.html"]
    assert [o.path for o in repair.after.outputs] == ["r2.html"]
    assert repair.after.owners == SHARED.owners


def test_other_owners_outputs_are_not_unmanaged_when_one_owner_is_checked():
    repair = reconcile_plan(SHARED, KEY, False, frozenset({"r1.html", "r2.html", "e1.html", "stray.txt"}), LATER)
    assert (repair.changed, repair.unmanaged) == (False, ("stray.txt",))


def test_an_owner_without_a_record_checks_nothing():
    repair = reconcile_plan(SHARED, OwnerKey("new", "archive"), False, frozenset(), LATER)
    assert (repair.owners, repair.changed) == ((), False)


# the shell, on the memory backend

def memory(store):
    return lambda cfg, base, token: MemoryStorage(store, base, token)


def dest(**extra):
    return dict({"id": "archive", "storage": MEMORY_STORAGE}, **extra)


def seeded(state, base="", gone=(), extra=()):
    prefix = base + "/" if base else ""
    store = {prefix + STATE_NAME: serialize_state(state)}
    store.update({prefix + o.path: b"x" for o in state.outputs if o.path not in gone})
    store.update({prefix + p: b"unmanaged" for p in extra})
    return store


def test_check_mode_reports_the_repair_and_writes_nothing():
    store = seeded(single_state(M, ("a.html", "b.html")), gone=("a.html",), extra=("notes.txt",))
    before = dict(store)
    result = reconcile_state("reports", dest(), check_mode=True, now=LATER, opener=memory(store))
    assert (result["changed"], result["missing"], result["unmanaged"]) == (True, ["a.html"], ["notes.txt"])
    assert result["owners"] == [{"pipeline_id": "reports", "destination_id": "archive"}]
    assert [o["path"] for o in result["state"]["outputs"]] == ["b.html"]
    assert "a.html" in result["diff"]["before"] and "a.html" not in result["diff"]["after"]
    assert store == before


def test_repair_writes_state_once_and_then_reports_no_change():
    store = seeded(single_state(M, ("a.html", "b.html")), gone=("a.html",), extra=("notes.txt",))
    result = reconcile_state("reports", dest(), now=LATER, opener=memory(store))
    assert result["changed"] and sorted(store) == [STATE_NAME, "b.html", "notes.txt"]
    written = parse_state(store[STATE_NAME], "test")
    assert [o.path for o in written.outputs] == ["b.html"] and written.updated_at == LATER_S
    again = reconcile_state("reports", dest(), now=LATER, opener=memory(store))
    assert (again["changed"], again["missing"], again["unmanaged"]) == (False, [], ["notes.txt"])
    assert again["diff"]["before"] == again["diff"]["after"]


def test_created_selects_the_dated_bundle_path():
    store = seeded(single_state(M, ("a.html",)), base="archive/2026-06-04", gone=("a.html",))
    result = reconcile_state("reports", dest(path="archive/{created:%Y-%m-%d}"), selector=Selector(None, "2026-06-04T11:55:00Z"),
                             now=LATER, opener=memory(store))
    assert (result["bundle_path"], result["missing"]) == ("archive/2026-06-04", ["a.html"])


def test_own_single_owner_state_under_a_shared_root_config_is_repaired_but_not_migrated():
    store = seeded(single_state(M, ("a.html", "b.html")), gone=("a.html",))
    result = reconcile_state("reports", dest(state={"mode": "shared_root"}), now=LATER, opener=memory(store))
    assert result["missing"] == ["a.html"]
    assert parse_state(store[STATE_NAME], "test").mode == "single_owner"


def test_a_journal_is_reported_and_left_alone():
    store = seeded(single_state(M, ("a.html",)), extra=("half.html",))
    store[JOURNAL_NAME] = json.dumps({"token": "dead", "writes": ["half.html"]}).encode()
    result = reconcile_state("reports", dest(), now=LATER, opener=memory(store))
    assert result["unmanaged"] == ["half.html"] and JOURNAL_NAME in store
    assert any("interrupted publish" in w for w in result["warnings"])


def test_a_shared_root_without_the_owner_warns():
    store = seeded(SHARED)
    result = reconcile_state("new", dest(state={"mode": "shared_root"}), now=LATER, opener=memory(store))
    assert (result["changed"], result["owners"]) == (False, [])
    assert any("new/archive has no record" in w for w in result["warnings"])


def reserved_output_state():
    state = single_state(M, ("a.html",))
    return replace(state, outputs=(state.outputs[0]._replace(path=".distributor.json"),))


@pytest.mark.parametrize("destination, store, created, reason, words", [
    (dest(), {"a.html": b"x"}, None, "unmanaged", "does not exist"),
    (dest(), {STATE_NAME: b"{not json"}, None, "invalid_state", "never rewrites invalid state"),
    (dest(), seeded(single_state(M, pipeline_id="other")), None, "conflict", "pipeline other"),
    (dest(), seeded(single_state(M, destination_id="elsewhere")), None, "conflict", "destination elsewhere"),
    (dest(), seeded(SHARED), None, "conflict", "single_owner"),
    (dest(), {STATE_NAME: serialize_state(reserved_output_state())}, None, "invalid_state", ".distributor.json"),
    (dest(path="{created:%Y}"), {}, None, "invalid_config", "{created}"),
    (dest(path="{created:%Y}"), {}, "yesterday", "invalid_config", "created"),
])
def test_refusals_change_nothing(destination, store, created, reason, words):
    before = dict(store)
    with pytest.raises(DistributorError) as failure:
        reconcile_state("reports", destination, selector=Selector(None, created), now=LATER, opener=memory(store))
    assert failure.value.reason == reason and words in failure.value.message, failure.value.message
    assert store == before
