# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A publish cut at every storage operation converges on the next run, without force.

`Killed` models SIGKILL: from the cut on, every storage call fails, so no cleanup can run and
only the journal speaks for the dead attempt. A backend's raw OSError must reach the caller as
storage_error, never as a traceback, whichever operation it interrupts.
"""

from __future__ import annotations

import pytest

from ansible_collections.distributor.core.plugins.module_utils._distributor.errors import DistributorError
from ansible_collections.distributor.core.plugins.module_utils._distributor.paths import STATE_NAME
from ansible_collections.distributor.core.plugins.module_utils._distributor.operations.publish import publish

from builders import LATER, MEMORY_STORAGE, NOW, read_json, write_bundle
from memory_storage import MemoryStorage

PIPELINE = {"id": "reports", "outputs": [{"match": "*.md", "transform": "markdown_to_html"}, {"match": "*.png"}]}


class Killed(BaseException):
    pass


class Cut:
    """Counts storage operations; from operation `at` on, each one raises `error` (only that one
    when `once`: a passing fault the failed attempt's own cleanup survives)."""

    def __init__(self, at=None, error=Killed, once=False):
        self.at, self.error, self.once, self.count = at, error, once, 0

    def __call__(self, op, path):
        self.count += 1
        if self.at is not None and (self.count == self.at + 1 or (self.count > self.at and not self.once)):
            raise self.error("cut at %s %s" % (op, path)) if self.error is Killed else self.error("storage_error", "lost connection")


def opener(store, cut):
    return lambda cfg, base, token: MemoryStorage(store, base, token, cut)


def destination(**extra):
    return dict({"id": "archive", "storage": MEMORY_STORAGE}, **extra)


def scenario(tmp_path, dest, pipeline_ids=("reports",)):
    """A root holding a first publication; returns (store, second bundle) for the publish under test."""
    store = {}
    first = write_bundle(tmp_path / "first", {"a.md": b"# A\n", "b.png": b"b1", "c.png": b"c"}, created="2026-06-03T00:00:00Z")
    publish(first, PIPELINE, dest, now=NOW, opener=opener(store, Cut()))
    if "events" in pipeline_ids:
        events = write_bundle(tmp_path / "events", {"e.png": b"e"}, id="events.daily")
        publish(events, {"id": "events"}, dest, now=NOW, opener=opener(store, Cut()))
    second = write_bundle(tmp_path / "second", {"a.md": b"# A2\n", "b.png": b"b2", "d.png": b"d"}, created="2026-06-04T00:00:00Z")
    return store, first, second


def clean_result(tmp_path, dest, pipeline_ids):
    store, _first, second = scenario(tmp_path / "clean", dest, pipeline_ids)
    publish(second, PIPELINE, dest, now=LATER, opener=opener(store, Cut()))
    return store


def operations(tmp_path, dest, pipeline_ids):
    store, _first, second = scenario(tmp_path / "count", dest, pipeline_ids)
    cut = Cut()
    publish(second, PIPELINE, dest, now=LATER, opener=opener(store, cut))
    return cut.count


CASES = {
    "replace": (destination(), ("reports",)),
    "merge": (destination(reconciliation={"mode": "merge"}), ("reports",)),
    "shared root": (destination(state={"mode": "shared_root"}), ("reports", "events")),
}


@pytest.mark.parametrize("error", [Killed, DistributorError, PermissionError], ids=["killed", "storage error", "raw OSError"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_a_publish_cut_at_any_storage_operation_converges_on_the_next_run(tmp_path, case, error):
    dest, owners = CASES[case]
    expected = clean_result(tmp_path, dest, owners)
    total = operations(tmp_path, dest, owners)
    assert total > 5
    for at in range(total):
        store, _first, second = scenario(tmp_path / ("cut-%d" % at), dest, owners)
        with pytest.raises((Killed, DistributorError)) as caught:
            publish(second, PIPELINE, dest, now=LATER, opener=opener(store, Cut(at, error)))
        assert caught.type is Killed or caught.value.reason == "storage_error"
        publish(second, PIPELINE, dest, now=LATER, opener=opener(store, Cut()))
        assert store == expected, "cut after %d operations did not converge" % at


def test_other_owners_outputs_survive_a_cut_shared_root_publish(tmp_path):
    dest, owners = CASES["shared root"]
    store, _first, second = scenario(tmp_path, dest, owners)
    with pytest.raises(Killed):
        publish(second, PIPELINE, dest, now=LATER, opener=opener(store, Cut(4)))
    assert store["e.png"] == b"e"
    owners_of = {o["path"]: o["pipeline_id"] for o in read_json(store[STATE_NAME])["outputs"]}
    assert owners_of["e.png"] == "events"


def test_failed_attempt_cleanup_removes_only_newly_created_outputs(tmp_path):
    dest = destination(reconciliation={"mode": "merge"})
    store, _first, second = scenario(tmp_path, dest)
    cut = Cut()
    publish(second, PIPELINE, dest, now=LATER, opener=opener(dict(store), cut))
    with pytest.raises(DistributorError):
        publish(second, PIPELINE, dest, now=LATER, opener=opener(store, Cut(cut.count - 2, DistributorError, once=True)))
    assert "d.png" not in store
    assert store["b.png"] == b"b2"
    assert sorted(o["path"] for o in read_json(store[STATE_NAME])["outputs"]) == ["a.html", "b.png", "c.png"]


def test_a_skip_lists_nothing_and_writes_nothing(tmp_path):
    store = {}
    bundle = write_bundle(tmp_path / "b", {"a.md": b"# A\n", "b.png": b"b"})
    publish(bundle, PIPELINE, destination(), now=NOW, opener=opener(store, Cut()))
    operations = []
    result = publish(bundle, PIPELINE, destination(), now=LATER, opener=opener(store, lambda op, path: operations.append(op)),
                     full_result=False)
    assert result["action"] == "skip" and "state" not in result and "diff" not in result
    assert "list" not in operations and "write" not in operations, operations
