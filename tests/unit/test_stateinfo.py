# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""distributor_state_info: one bundle path described, read-only, invalid records reported."""

from __future__ import annotations

import json

import pytest

from ansible_collections.distributor.core.plugins.module_utils._distributor.operations.managed_root import Selector
from ansible_collections.distributor.core.plugins.module_utils._distributor.errors import DistributorError
from ansible_collections.distributor.core.plugins.module_utils._distributor.paths import JOURNAL_NAME, LOCK_NAME, STATE_NAME
from ansible_collections.distributor.core.plugins.module_utils._distributor.operations.publish import publish
from ansible_collections.distributor.core.plugins.module_utils._distributor.operations.state_info import state_info

from builders import MEMORY_STORAGE, NOW, write_bundle
from memory_storage import MemoryStorage

SHARED = {"id": "site", "storage": MEMORY_STORAGE, "state": {"mode": "shared_root"},
          "links": {"base_url": "https://example.com/"}}
AT = 1780574400.0  # 2026-06-04T12:00:00Z


class Recorder:
    """A memory opener that records every storage operation."""

    def __init__(self, store):
        self.store, self.operations = store, []

    def __call__(self, cfg, base, token):
        return MemoryStorage(self.store, base, token, lambda op, path: self.operations.append((op, path)))


def two_owners(tmp_path) -> dict:
    store = {}
    reports = write_bundle(tmp_path / "r", {"index.md": b"# R\n", "r.png": b"r"}, id="reports.daily")
    events = write_bundle(tmp_path / "e", {"e.png": b"e"}, id="events.daily", created="2026-06-04T10:00:00Z")
    publish(reports, {"id": "reports", "outputs": [{"match": "*.md", "transform": "markdown_to_html"}, {"match": "*.png"}]},
            SHARED, now=NOW, opener=Recorder(store))
    publish(events, {"id": "events"}, SHARED, now=NOW, opener=Recorder(store))
    return store


def info(store, **options):
    recorder = Recorder(store)
    result = state_info(SHARED, opener=recorder, now=AT, **options)
    assert all(op == "read" for op, _path in recorder.operations), "state info changed storage"
    return result


def test_a_shared_root_is_described_owner_by_owner(tmp_path):
    store = two_owners(tmp_path)
    before = dict(store)
    result = info(store)
    assert store == before
    assert (result["exists"], result["valid"], result["error"]) == (True, True, None)
    assert (result["schema_version"], result["mode"], result["bundle_path"]) == (3, "shared_root", "")
    assert result["created_at"] == result["updated_at"] == "2026-06-04T12:00:00Z"
    reports, events = result["owners"]
    assert reports == {"pipeline_id": "reports", "destination_id": "site", "reconciliation": "replace",
                       "primary_url": "https://example.com/index.html", "outputs": 2,
                       "source": {"id": "reports.daily", "created": "2026-06-04T11:55:00Z",
                                  "digest": json.loads(store[STATE_NAME])["owners"][0]["source"]["manifest"]["digest"]}}
    assert (events["pipeline_id"], events["outputs"], events["source"]["id"]) == ("events", 1, "events.daily")
    assert [o["path"] for o in result["outputs"]] == ["e.png", "index.html", "r.png"]
    assert (result["interrupted"], result["lock"]) == (None, None)


def test_pipeline_id_limits_owners_and_outputs_to_that_owner(tmp_path):
    result = info(two_owners(tmp_path), pipeline_id="events")
    assert [o["pipeline_id"] for o in result["owners"]] == ["events"]
    assert [(o["path"], o["pipeline_id"], o["source_id"]) for o in result["outputs"]] == [("e.png", "events", "events.daily")]


def test_single_owner_outputs_carry_their_owner_like_shared_root_ones(tmp_path):
    store = {}
    publish(write_bundle(tmp_path / "b", {"a.txt": b"a"}), {"id": "reports"}, dict(SHARED, state={"mode": "single_owner"}),
            now=NOW, opener=Recorder(store))
    result = info(store)
    assert (result["schema_version"], result["mode"]) == (2, "single_owner")
    [output] = result["outputs"]
    assert (output["pipeline_id"], output["destination_id"], output["source_id"]) == ("reports", "site", "reports.example")


def test_a_root_without_state_does_not_exist_and_is_valid():
    result = info({})
    assert (result["exists"], result["valid"], result["owners"], result["outputs"], result["schema_version"]) == (
        False, True, [], [], None)


def test_invalid_state_is_reported_not_raised(tmp_path):
    store = two_owners(tmp_path)
    record = json.loads(store[STATE_NAME])
    record["outputs"][0]["path"] = "../escape"
    store[STATE_NAME] = json.dumps(record).encode()
    result = info(store)
    assert (result["exists"], result["valid"], result["owners"], result["mode"]) == (True, False, [], None)
    assert "outputs[0].path" in result["error"] and "memory:/.distributor.json" in result["error"]


def test_an_interrupted_attempt_names_what_the_next_publish_removes(tmp_path):
    store = two_owners(tmp_path)
    store[JOURNAL_NAME] = json.dumps({"token": "dead01", "writes": ["index.html", "new.html"]}).encode()
    result = info(store)
    assert result["valid"]
    assert result["interrupted"] == {"attempt": "dead01", "writes": ["index.html", "new.html"], "unrecorded": ["new.html"]}


def test_an_invalid_journal_is_reported_and_the_state_still_shown(tmp_path):
    store = two_owners(tmp_path)
    store[JOURNAL_NAME] = json.dumps({"token": "dead01", "writes": ["/etc/passwd"]}).encode()
    result = info(store)
    assert not result["valid"] and "writes[0]" in result["error"] and JOURNAL_NAME in result["error"]
    assert result["interrupted"] is None and len(result["owners"]) == 2


@pytest.mark.parametrize("record, expected", [
    ({"holder": "web1:42", "acquired_at": AT - 60, "expires_at": AT + 540},
     {"holder": "web1:42", "acquired_at": "2026-06-04T11:59:00Z", "expires_at": "2026-06-04T12:09:00Z", "expired": False}),
    ({"holder": "web1:42", "acquired_at": AT - 900, "expires_at": AT - 300},
     {"holder": "web1:42", "acquired_at": "2026-06-04T11:45:00Z", "expires_at": "2026-06-04T11:55:00Z", "expired": True}),
    ({"holder": ["x"], "acquired_at": "soon", "expires_at": 1e400},
     {"holder": None, "acquired_at": None, "expires_at": None, "expired": True}),
    ([1, 2], {"holder": None, "acquired_at": None, "expires_at": None, "expired": True}),
])
def test_the_lock_record_is_shown_with_its_expiry_whatever_it_holds(tmp_path, record, expected):
    store = two_owners(tmp_path)
    store[LOCK_NAME] = json.dumps(record).encode()
    assert info(store)["lock"] == expected


def test_a_lock_record_that_is_not_json_is_shown_as_unreadable(tmp_path):
    store = two_owners(tmp_path)
    store[LOCK_NAME] = b"\xff\x00"
    assert info(store)["lock"] == {"holder": None, "acquired_at": None, "expires_at": None, "expired": True}


def test_placeholders_are_rendered_like_reconcile_state_and_missing_values_named():
    dated = dict(SHARED, path="{pipeline_id}/{created:%Y-%m-%d}")
    recorder = Recorder({})
    assert state_info(dated, pipeline_id="reports", selector=Selector(None, "2026-06-04T11:55:00Z"), opener=recorder)["bundle_path"] == "reports/2026-06-04"
    for pipeline_id, created, missing in (("reports", None, "{created}"), (None, "2026-06-04T11:55:00Z", "{pipeline_id}")):
        with pytest.raises(DistributorError) as caught:
            state_info(dated, pipeline_id=pipeline_id, selector=Selector(None, created), opener=recorder)
        assert caught.value.reason == "invalid_config" and missing in caught.value.message
