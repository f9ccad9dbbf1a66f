# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""distributor_reconcile_state and distributor_prune through the real ansible-playbook, on local
storage, on OpenSSH's SFTP and on the S3 API.

Roots are seeded with the core publish (in-process, with chosen publication times) so each test
spends its playbook runs on the module under test. The `backend` fixture (conftest) removes and
adds files "behind distributor's back" without distributor's own backends.
"""

from __future__ import annotations

import json
from datetime import timedelta

from ansible_collections.distributor.core.plugins.module_utils._distributor.operations.publish import publish
from ansible_collections.distributor.core.plugins.module_utils._distributor.storage.select import open_storage
from ansible_collections.distributor.core.plugins.module_utils._distributor.timestamps import utc_now

STATE = ".distributor.json"
LOCK = ".distributor.lock"
NOW = utc_now()
DAYS_AGO = {n: NOW - timedelta(days=n) for n in (1, 10, 40)}
RECONCILE = "distributor.core.distributor_reconcile_state"
PRUNE = "distributor.core.distributor_prune"


def destination(backend, **extra) -> dict:
    return dict({"id": "archive", "storage": backend.storage}, **extra)


def seed(make_bundle, dest, pipeline_id, files, created, days_ago):
    """Publish `files` (copied as they are) as `pipeline_id`, stamped `days_ago` days before now."""
    bundle = make_bundle({p: p.encode() for p in files}, id="%s.bundle" % pipeline_id, created=created)
    result = publish(bundle, {"id": pipeline_id}, dest, now=DAYS_AGO[days_ago])
    assert result["changed"], result


def state_at(files: dict, bundle_path: str = "") -> dict:
    return json.loads(files[(bundle_path + "/" if bundle_path else "") + STATE])


def records(state: dict) -> list:
    return sorted(o["path"] for o in state["outputs"])


def without_state(files: dict) -> dict:
    return {p: d for p, d in files.items() if not p.endswith(STATE)}


# distributor_reconcile_state

def test_reconcile_reports_and_removes_missing_records_once(playbook, make_bundle, backend):
    dest = destination(backend, path="archive/{created:%Y-%m-%d}")
    seed(make_bundle, dest, "reports", ["a.txt", "b.txt", "c.txt"], "2026-06-04T11:55:00Z", 10)
    backend.remove("archive/2026-06-04/b.txt")
    backend.put("archive/2026-06-04/notes.txt", b"hand made")
    args = {"pipeline_id": "reports", "created": "2026-06-04T11:55:00Z", "destination": dest}

    before = backend.files()
    (dry,) = playbook.run([{RECONCILE: args}], check=True, diff=True)
    assert (dry["changed"], dry["missing"], dry["unmanaged"]) == (True, ["b.txt"], ["notes.txt"]), dry
    assert dry["owners"] == [{"pipeline_id": "reports", "destination_id": "archive"}]
    assert dry["bundle_path"] == "archive/2026-06-04"
    assert "b.txt" in dry["diff"]["before"] and "b.txt" not in dry["diff"]["after"]
    assert backend.files() == before

    repaired, again = playbook.run([{RECONCILE: args}, {RECONCILE: args}], diff=True)
    assert (repaired["changed"], repaired["missing"]) == (True, ["b.txt"])
    after = backend.files()
    state = state_at(after, "archive/2026-06-04")
    assert records(state) == ["a.txt", "c.txt"] and state == repaired["state"]
    assert state["updated_at"] > state_at(before, "archive/2026-06-04")["updated_at"]
    assert state["published_at"] == state_at(before, "archive/2026-06-04")["published_at"]
    assert without_state(after) == without_state(before)
    assert (again["changed"], again["missing"], again["unmanaged"]) == (False, [], ["notes.txt"])
    assert again["diff"]["before"] == again["diff"]["after"]
    assert backend.files() == after


def test_reconcile_shared_root_is_owner_scoped_unless_all_owners(playbook, make_bundle, backend):
    dest = destination(backend, state={"mode": "shared_root"})
    seed(make_bundle, dest, "reports", ["r1.txt", "r2.txt"], "2026-06-04T11:55:00Z", 10)
    seed(make_bundle, dest, "events", ["e1.txt", "e2.txt"], "2026-06-04T11:55:00Z", 10)
    backend.remove("r1.txt")
    backend.remove("e1.txt")
    mine = {"pipeline_id": "reports", "destination": dest}
    everyone = dict(mine, all_owners=True)

    scoped, all_owners, again = playbook.run([{RECONCILE: mine}, {RECONCILE: everyone}, {RECONCILE: everyone}])
    assert (scoped["changed"], scoped["missing"], scoped["unmanaged"]) == (True, ["r1.txt"], [])
    assert scoped["owners"] == [{"pipeline_id": "reports", "destination_id": "archive"}]
    assert records(scoped["state"]) == ["e1.txt", "e2.txt", "r2.txt"]
    assert (all_owners["changed"], all_owners["missing"]) == (True, ["e1.txt"])
    assert sorted(o["pipeline_id"] for o in all_owners["owners"]) == ["events", "reports"]
    assert (again["changed"], again["missing"]) == (False, [])
    state = state_at(backend.files())
    assert [(o["path"], o["pipeline_id"]) for o in state["outputs"]] == [("e2.txt", "events"), ("r2.txt", "reports")]
    assert [o["pipeline_id"] for o in state["owners"]] == ["reports", "events"]


# distributor_prune

def seed_three_publications(make_bundle, dest):
    """Merged publications leave outputs of three ages: a, b 40 days, c 10 days, d 1 day."""
    seed(make_bundle, dest, "reports", ["a.txt", "b.txt"], "2026-06-01T00:00:00Z", 40)
    seed(make_bundle, dest, "reports", ["c.txt"], "2026-06-02T00:00:00Z", 10)
    seed(make_bundle, dest, "reports", ["d.txt"], "2026-06-03T00:00:00Z", 1)


def test_prune_deletes_expired_managed_outputs_once(playbook, make_bundle, backend):
    dest = destination(backend, path="latest", reconciliation={"mode": "merge"}, retention={"max_age": "30d"})
    seed_three_publications(make_bundle, dest)
    backend.put("latest/old-notes.txt", b"unmanaged, and older than any output")
    args = {"pipeline_id": "reports", "destination": dest}

    before = backend.files()
    (dry,) = playbook.run([{PRUNE: args}], check=True, diff=True)
    assert (dry["changed"], dry["planned"], dry["deleted"], dry["kept"]) == (True, ["a.txt", "b.txt"], ["a.txt", "b.txt"], ["c.txt", "d.txt"]), dry
    assert "a.txt" in dry["diff"]["before"] and "a.txt" not in dry["diff"]["after"]
    assert backend.files() == before

    pruned, again = playbook.run([{PRUNE: args}, {PRUNE: args}], diff=True)
    assert (pruned["changed"], pruned["deleted"], pruned["kept"]) == (True, ["a.txt", "b.txt"], ["c.txt", "d.txt"])
    after = backend.files()
    assert sorted(after) == ["latest/.distributor.json", "latest/c.txt", "latest/d.txt", "latest/old-notes.txt"]
    state = state_at(after, "latest")
    assert records(state) == ["c.txt", "d.txt"] and state == pruned["state"]
    assert state["updated_at"] > state_at(before, "latest")["updated_at"]
    assert (again["changed"], again["planned"], again["deleted"]) == (False, [], [])
    assert again["diff"]["before"] == again["diff"]["after"]
    assert backend.files() == after


def test_prune_max_outputs_forgets_gone_outputs_and_never_deletes_state(playbook, make_bundle, backend):
    dest = destination(backend, reconciliation={"mode": "merge"}, retention={"max_outputs": 2})
    seed_three_publications(make_bundle, dest)
    backend.remove("b.txt")
    backend.put("notes.txt", b"unmanaged")
    keep_two = {"pipeline_id": "reports", "destination": dest}
    keep_none = {"pipeline_id": "reports", "destination": dict(dest, retention={"max_outputs": 0})}

    two, none = playbook.run([{PRUNE: keep_two}, {PRUNE: keep_none}])
    assert (two["planned"], two["deleted"], two["kept"]) == (["a.txt", "b.txt"], ["a.txt"], ["c.txt", "d.txt"])
    assert (none["planned"], none["deleted"], none["kept"]) == (["c.txt", "d.txt"], ["c.txt", "d.txt"], [])
    after = backend.files()
    assert sorted(after) == [STATE, "notes.txt"]
    state = state_at(after)
    assert state["outputs"] == [] and state["source"]["manifest"]["id"] == "reports.bundle"


def test_prune_in_a_shared_root_touches_only_the_selected_owner(playbook, make_bundle, backend):
    dest = destination(backend, state={"mode": "shared_root"}, retention={"max_age": "30d"})
    seed(make_bundle, dest, "reports", ["r1.txt", "r2.txt"], "2026-06-04T11:55:00Z", 40)
    seed(make_bundle, dest, "events", ["e1.txt"], "2026-06-04T11:55:00Z", 40)

    (pruned,) = playbook.run([{PRUNE: {"pipeline_id": "reports", "destination": dest}}])
    assert (pruned["planned"], pruned["deleted"], pruned["kept"]) == (["r1.txt", "r2.txt"], ["r1.txt", "r2.txt"], [])
    after = backend.files()
    assert sorted(after) == [STATE, "e1.txt"]
    state = state_at(after)
    assert [(o["path"], o["pipeline_id"]) for o in state["outputs"]] == [("e1.txt", "events")]
    assert [o["pipeline_id"] for o in state["owners"]] == ["reports", "events"]


# both: refusals and the lock

def test_refusals_name_a_reason_and_change_nothing(playbook, make_bundle, backend):
    dest = destination(backend, path="archive", retention={"max_age": "1d"})
    seed(make_bundle, dest, "reports", ["a.txt"], "2026-06-04T11:55:00Z", 40)
    backend.put("broken/.distributor.json", b"{ not json")
    before = backend.files()
    cases = [
        (RECONCILE, {"pipeline_id": "events"}, "conflict"),
        (PRUNE, {"pipeline_id": "events"}, "conflict"),
        (RECONCILE, {"pipeline_id": "reports", "destination": dict(dest, path="broken")}, "invalid_state"),
        (PRUNE, {"pipeline_id": "reports", "destination": dict(dest, path="broken")}, "invalid_state"),
        (RECONCILE, {"pipeline_id": "reports", "destination": dict(dest, path="nowhere")}, "unmanaged"),
        (PRUNE, {"pipeline_id": "reports", "destination": dict(dest, path="nowhere")}, "unmanaged"),
        (PRUNE, {"pipeline_id": "reports", "destination": dict(dest, retention=None)}, "invalid_config"),
        (RECONCILE, {"pipeline_id": "reports", "destination": dict(dest, path="{created:%Y}")}, "invalid_config"),
        (RECONCILE, {"pipeline_id": "reports", "destination": dest, "created": "last tuesday"}, "invalid_config"),
    ]
    results = playbook.run([{module: dict({"destination": dest}, **args)} for module, args, _reason in cases])
    assert [(r.get("failed"), r.get("reason")) for r in results] == [(True, reason) for _m, _a, reason in cases], results
    assert "retention" in results[6]["msg"]
    assert backend.files() == before


def test_both_take_the_lock_and_check_mode_does_not(playbook, make_bundle, backend):
    dest = destination(backend, retention={"max_age": "30d"})
    seed(make_bundle, dest, "reports", ["a.txt"], "2026-06-04T11:55:00Z", 40)
    tasks = [{module: {"pipeline_id": "reports", "destination": dest, "lock_timeout": 0.5}} for module in (RECONCILE, PRUNE)]
    holder = open_storage(backend.storage, "", "holder")
    try:
        with holder.lock(5):
            blocked = playbook.run(tasks)
            dry = playbook.run(tasks, check=True)
    finally:
        holder.close()
    assert [(r.get("failed"), r.get("reason")) for r in blocked] == [(True, "locked")] * 2, blocked
    assert [r.get("failed", False) for r in dry] == [False, False]
    assert dry[1]["planned"] == ["a.txt"]
    assert LOCK not in backend.files()
