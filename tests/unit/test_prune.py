# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Retention selection as pure data, and the prune shell on the memory backend."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest

from ansible_collections.distributor.core.plugins.module_utils._distributor.records.config import Retention
from ansible_collections.distributor.core.plugins.module_utils._distributor.errors import DistributorError
from ansible_collections.distributor.core.plugins.module_utils._distributor.paths import LOCK_NAME, STATE_NAME
from ansible_collections.distributor.core.plugins.module_utils._distributor.operations.prune import prune, select_expired
from ansible_collections.distributor.core.plugins.module_utils._distributor.records.state import OwnerKey, serialize_state
from ansible_collections.distributor.core.plugins.module_utils._distributor.records.state_parse import parse_state
from ansible_collections.distributor.core.plugins.module_utils._distributor.timestamps import format_rfc3339

from builders import MEMORY_STORAGE, NOW, manifest, shared_state, single_state
from memory_storage import MemoryStorage

M = manifest()
KEY = OwnerKey("reports", "archive")
OTHER = OwnerKey("events", "archive")


def aged(state, **ages):
    """`state` with each named output's updated_at set to NOW minus that many hours."""
    stamps = {path.replace("_", "."): format_rfc3339(NOW - timedelta(hours=h)) for path, h in ages.items()}
    return replace(state, outputs=tuple(o._replace(updated_at=stamps.get(o.path, o.updated_at)) for o in state.outputs))


def paths(outputs):
    return [o.path for o in outputs]


def retention(max_age_seconds=None, max_outputs=None):
    return Retention(max_age_seconds, max_outputs)


# select_expired

def test_empty_state_selects_nothing():
    assert select_expired((), retention(3600, 0), NOW) == []


def test_nothing_expired():
    state = aged(single_state(M, ("a.html", "b.html")), a_html=1, b_html=2)
    assert select_expired(state.outputs, retention(3 * 3600, 2), NOW) == []


def test_everything_expired_by_age():
    state = aged(single_state(M, ("a.html", "b.html")), a_html=10, b_html=20)
    assert paths(select_expired(state.outputs, retention(3600), NOW)) == ["a.html", "b.html"]


def test_max_outputs_zero_expires_everything():
    state = single_state(M, ("a.html", "b.html"))
    assert paths(select_expired(state.outputs, retention(max_outputs=0), NOW)) == ["a.html", "b.html"]


def test_age_exactly_max_age_is_kept_and_one_second_older_is_not():
    state = single_state(M, ("a.html", "b.html"))
    state = replace(state, outputs=(
        state.outputs[0]._replace(updated_at=format_rfc3339(NOW - timedelta(seconds=3600))),
        state.outputs[1]._replace(updated_at=format_rfc3339(NOW - timedelta(seconds=3601))),
    ))
    assert paths(select_expired(state.outputs, retention(3600), NOW)) == ["b.html"]


def test_max_outputs_keeps_the_newest():
    state = aged(single_state(M, ("a.html", "b.html", "c.html")), a_html=3, b_html=1, c_html=2)
    assert paths(select_expired(state.outputs, retention(max_outputs=2), NOW)) == ["a.html"]


def test_ties_keep_the_first_paths_whatever_the_record_order():
    state = single_state(M, ("c.html", "a.html", "b.html"))  # one publication: one timestamp
    for outputs in (state.outputs, tuple(reversed(state.outputs))):
        assert paths(select_expired(outputs, retention(max_outputs=1), NOW)) == ["b.html", "c.html"]


def test_timestamps_compare_as_instants_not_text():
    state = single_state(M, ("a.html", "b.html"))
    state = replace(state, outputs=(
        state.outputs[0]._replace(updated_at="2026-06-04T13:00:00+02:00"),  # 11:00Z, older
        state.outputs[1]._replace(updated_at="2026-06-04T11:30:00Z"),
    ))
    assert paths(select_expired(state.outputs, retention(max_outputs=1), NOW)) == ["a.html"]


def test_max_outputs_counts_per_owner_in_a_shared_root():
    state = shared_state(("reports", "archive", M, ("r1.html", "r2.html")), ("events", "archive", M, ("e1.html", "e2.html")))
    state = aged(state, r1_html=2, r2_html=1, e1_html=1, e2_html=2)
    assert paths(select_expired(state.outputs, retention(max_outputs=1), NOW)) == ["e2.html", "r1.html"]


def test_max_age_and_max_outputs_select_their_union():
    state = aged(single_state(M, ("a.html", "b.html", "c.html", "d.html")), a_html=1, b_html=2, c_html=3, d_html=30)
    # max_outputs=2 selects c and d; max_age=24h selects d only
    assert paths(select_expired(state.outputs, retention(24 * 3600, 2), NOW)) == ["c.html", "d.html"]
    # max_outputs=3 selects d; max_age=90m selects b, c and d
    assert paths(select_expired(state.outputs, retention(90 * 60, 3), NOW)) == ["b.html", "c.html", "d.html"]


# the shell, on the memory backend

def memory(store):
    return lambda cfg, base, token: MemoryStorage(store, base, token)


def dest(**extra):
    return dict({"id": "archive", "storage": MEMORY_STORAGE, "retention": {"max_age": "1d"}}, **extra)


def seeded(state, extra=()):
    store = {STATE_NAME: serialize_state(state)}
    store.update({o.path: b"x" for o in state.outputs})
    store.update({p: b"unmanaged" for p in extra})
    return store


def test_check_mode_reports_and_changes_nothing():
    store = seeded(aged(single_state(M, ("old.html", "new.html")), old_html=48, new_html=1))
    before = dict(store)
    result = prune("reports", dest(), check_mode=True, now=NOW, opener=memory(store))
    assert (result["changed"], result["planned"], result["deleted"], result["kept"]) == (True, ["old.html"], ["old.html"], ["new.html"])
    assert store == before


def test_apply_deletes_planned_outputs_forgets_them_and_stamps_state():
    store = seeded(aged(single_state(M, ("old.html", "new.html")), old_html=48, new_html=1), extra=("old-unmanaged.html",))
    result = prune("reports", dest(), now=NOW, opener=memory(store))
    assert (result["changed"], result["planned"], result["deleted"]) == (True, ["old.html"], ["old.html"])
    assert sorted(store) == [STATE_NAME, "new.html", "old-unmanaged.html"]
    state = parse_state(store[STATE_NAME], "test")
    assert [o.path for o in state.outputs] == ["new.html"] and state.updated_at == format_rfc3339(NOW)
    again = prune("reports", dest(), now=NOW, opener=memory(store))
    assert (again["changed"], again["planned"]) == (False, [])
    assert store[STATE_NAME] == serialize_state(state)


def test_a_planned_output_already_gone_loses_its_record_but_is_not_reported_deleted():
    store = seeded(aged(single_state(M, ("gone.html", "old.html")), gone_html=48, old_html=48))
    del store["gone.html"]
    result = prune("reports", dest(), now=NOW, opener=memory(store))
    assert (result["planned"], result["deleted"]) == (["gone.html", "old.html"], ["old.html"])
    assert parse_state(store[STATE_NAME], "test").outputs == ()


def test_shared_root_prunes_only_the_selected_owner():
    state = aged(shared_state(("reports", "archive", M, ("r.html",)), ("events", "archive", M, ("e.html",))), r_html=48, e_html=48)
    store = seeded(state)
    result = prune("reports", dest(state={"mode": "shared_root"}), now=NOW, opener=memory(store))
    assert (result["planned"], result["kept"]) == (["r.html"], [])
    after = parse_state(store[STATE_NAME], "test")
    assert [(o.path, o.owner) for o in after.outputs] == [("e.html", OTHER)] and "e.html" in store
    assert [o.key for o in after.owners] == [KEY, OTHER]


def test_the_lock_is_held_while_pruning_and_released_after():
    store = seeded(aged(single_state(M, ("old.html",)), old_html=48))
    seen = []

    class Watching(MemoryStorage):
        def delete(self, path):
            seen.append(LOCK_NAME in self.files)
            return super().delete(path)

    prune("reports", dest(), now=NOW, opener=lambda cfg, base, token: Watching(store, base, token))
    assert seen == [True] and LOCK_NAME not in store


@pytest.mark.parametrize("destination, state, reason, words", [
    (dest(retention=None), single_state(M), "invalid_config", "retention"),
    (dest(), None, "unmanaged", "does not exist"),
    (dest(), single_state(M, pipeline_id="other"), "conflict", "pipeline other"),
    (dest(), shared_state(("reports", "archive", M, ())), "conflict", "single_owner"),
])
def test_refusals(destination, state, reason, words):
    store = seeded(state) if state else {"a.html": b"x"}
    before = dict(store)
    with pytest.raises(DistributorError) as failure:
        prune("reports", destination, now=NOW, opener=memory(store))
    assert failure.value.reason == reason and words in failure.value.message
    assert store == before
