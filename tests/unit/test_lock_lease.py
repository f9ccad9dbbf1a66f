# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A publish keeps its lock however long it runs, and one that lost it never writes state: the
lease of the memory backend, which follows the SFTP and S3 protocol, driven through publish."""

from __future__ import annotations

import json
import time

import pytest

from ansible_collections.distributor.core.plugins.module_utils._distributor.errors import DistributorError
from ansible_collections.distributor.core.plugins.module_utils._distributor.paths import JOURNAL_NAME, LOCK_NAME, STATE_NAME
from ansible_collections.distributor.core.plugins.module_utils._distributor.operations.publish import publish
from ansible_collections.distributor.core.plugins.module_utils._distributor.storage.lease import holder_record

from builders import LATER, MEMORY_STORAGE, NOW, write_bundle
from memory_storage import MemoryStorage

DEST = {"id": "archive", "storage": MEMORY_STORAGE, "lock": {"expiry": 1}}
FILES = {"page-%02d.html" % i: b"page %d" % i for i in range(6)}


def opener(store, fault=None):
    return lambda cfg, base, token: MemoryStorage(store, base, token, fault)


def test_a_publish_slowed_to_several_expiries_keeps_its_lock(tmp_path):
    store, seen = {}, []

    def slow(op, path):
        if op == "write" and path.startswith("page-"):
            time.sleep(0.6)
            seen.append(store.get(LOCK_NAME))

    result = publish(write_bundle(tmp_path / "b", FILES), {"id": "reports"}, DEST, now=NOW, opener=opener(store, slow))
    assert result["changed"] and STATE_NAME in store and LOCK_NAME not in store
    assert len(seen) == 6, "six writes of 0.6 s: the publish outlived three expiries"
    assert len(set(seen)) > 1, "the heartbeat renewed the holder record while it ran"


def test_a_holder_whose_lock_was_taken_stops_before_writing_state_and_the_next_run_converges(tmp_path):
    store = {}
    first = write_bundle(tmp_path / "v1", {"index.html": b"v1"}, created="2026-06-03T00:00:00Z")
    publish(first, {"id": "reports"}, DEST, now=NOW, opener=opener(store))
    recorded = store[STATE_NAME]

    def thief(op, path):
        if op == "write" and path == "page-00.html":
            store[LOCK_NAME] = holder_record(time.time(), 600, "thief")

    second = write_bundle(tmp_path / "v2", dict(FILES, **{"index.html": b"v2"}))
    with pytest.raises(DistributorError) as caught:
        publish(second, {"id": "reports"}, DEST, now=LATER, opener=opener(store, thief))
    assert caught.value.reason == "locked" and LOCK_NAME in caught.value.message
    assert store[STATE_NAME] == recorded, "a holder that lost its lock never writes state"
    assert JOURNAL_NAME in store and "thief" in store[LOCK_NAME].decode(), "its journal stays, the new lock too"
    del store[LOCK_NAME]
    again = publish(second, {"id": "reports"}, DEST, now=LATER, opener=opener(store))
    assert again["changed"] and JOURNAL_NAME not in store and store["index.html"] == b"v2"


def test_a_publish_breaks_a_planted_lock_declaring_an_endless_lease_after_its_own_lock_expiry(tmp_path):
    """The memory store dates nothing, so the lock is watched: unchanged for `lock.expiry` (1 s),
    not for the 1e300 seconds the record declares. Time is the behaviour here: at least the expiry,
    and well within a lock_timeout a busy host cannot use up (a lock never broken fails as locked)."""
    store = {LOCK_NAME: json.dumps({"holder": "ghost:1", "token": "planted", "acquired_at": 0, "expires_at": 1e300,
                                    "expiry": 1e300}).encode()}
    started = time.monotonic()
    result = publish(write_bundle(tmp_path / "b", {"index.html": b"v1"}), {"id": "reports"}, DEST, now=NOW,
                     opener=opener(store), lock_timeout=30)
    assert result["changed"] and LOCK_NAME not in store
    assert 1 <= time.monotonic() - started < 20
