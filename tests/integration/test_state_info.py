# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""distributor_state_info on every backend: what a root holds, read without a lock or a write,
and a broken record reported rather than failed."""

from __future__ import annotations

import json
import os
import socket

from ansible_collections.distributor.core.plugins.module_utils._distributor.storage.select import open_storage

PIPELINE = {"id": "reports", "outputs": [{"match": "*.md", "transform": "markdown_to_html"}, {"match": "*.png"}]}
DAY = "2026-06-04T11:55:00Z"


def destination(backend, **extra) -> dict:
    return dict({"id": "site", "storage": backend.storage, "path": "{pipeline_id}/{created:%Y-%m-%d}",
                 "state": {"mode": "shared_root"}, "links": {"base_url": "https://example.com/"}}, **extra)


def info(backend, **options) -> dict:
    return {"distributor.core.distributor_state_info": dict({"destination": destination(backend)}, **options)}


def publish(backend, bundle: str) -> dict:
    return {"distributor.core.distributor_publish": {"source": bundle, "pipeline": PIPELINE, "destination": destination(backend)}}


def test_state_info_describes_owners_outputs_and_changes_nothing(backend, playbook, make_bundle):
    bundle = make_bundle({"index.md": b"# Daily\n", "chart.png": b"\x89PNG"}, id="reports.daily", created=DAY)
    missing, _published, shown, checked, limited = playbook.run([
        info(backend, pipeline_id="reports", created=DAY),
        publish(backend, bundle),
        info(backend, pipeline_id="reports", created=DAY),
        dict(info(backend, pipeline_id="reports", created=DAY), check_mode=True),
        info(backend, pipeline_id="someone-else", created=DAY, destination=dict(destination(backend), path="reports/2026-06-04")),
    ])
    assert (missing["exists"], missing["valid"], missing["owners"], missing["changed"]) == (False, True, [], False)
    assert missing["bundle_path"] == "reports/2026-06-04"

    assert (shown["exists"], shown["valid"], shown["error"], shown["changed"]) == (True, True, None, False)
    assert (shown["schema_version"], shown["mode"]) == (3, "shared_root")
    assert shown["created_at"] == shown["updated_at"]
    stored = backend.state("reports/2026-06-04")
    [owner] = shown["owners"]
    manifest = stored["owners"][0]["source"]["manifest"]
    assert owner["source"] == {"id": "reports.daily", "created": DAY, "digest": manifest["digest"]}
    assert (owner["pipeline_id"], owner["destination_id"], owner["reconciliation"], owner["outputs"]) == (
        "reports", "site", "replace", 2)
    assert owner["primary_url"] == "https://example.com/index.html"
    assert [o["path"] for o in shown["outputs"]] == ["chart.png", "index.html"]
    assert shown["outputs"] == stored["outputs"]
    assert (shown["interrupted"], shown["lock"]) == (None, None)
    assert checked == shown
    assert (limited["owners"], limited["outputs"], limited["exists"]) == ([], [], True)
    assert ".distributor.lock" not in backend.files("reports/2026-06-04")


def test_invalid_state_and_an_interrupted_attempt_are_reported_not_failed(backend, playbook, make_bundle):
    bundle = make_bundle({"index.md": b"# Daily\n"}, id="reports.daily", created=DAY)
    playbook.run([publish(backend, bundle)])
    backend.put("reports/2026-06-04/.distributor.journal.json",
                json.dumps({"token": "dead01", "writes": ["index.html", "draft.html"]}).encode())
    [interrupted] = playbook.run([info(backend, pipeline_id="reports", created=DAY)])
    assert not interrupted.get("failed") and interrupted["valid"]
    assert interrupted["interrupted"] == {"attempt": "dead01", "writes": ["index.html", "draft.html"], "unrecorded": ["draft.html"]}

    before = backend.files()
    backend.put("reports/2026-06-04/.distributor.json", b'{"schema_version": 3, "owners": "nobody"')
    [broken] = playbook.run([info(backend, pipeline_id="reports", created=DAY)])
    assert not broken.get("failed") and (broken["exists"], broken["valid"], broken["owners"]) == (True, False, [])
    assert ".distributor.json" in broken["error"] and "not valid JSON" in broken["error"]
    assert broken["interrupted"]["unrecorded"] == ["index.html", "draft.html"]
    assert set(backend.files()) == set(before)


def test_a_held_lock_is_shown_without_waiting_for_it(backend, playbook, make_bundle):
    bundle = make_bundle({"index.md": b"# Daily\n"}, id="reports.daily", created=DAY)
    playbook.run([publish(backend, bundle)])
    holder = open_storage(backend.storage, "reports/2026-06-04", "test-holder")
    try:
        with holder.lock(timeout=10):
            [shown] = playbook.run([info(backend, pipeline_id="reports", created=DAY)])
    finally:
        holder.close()
    assert shown["valid"] and len(shown["owners"]) == 1
    lock = shown["lock"]
    assert lock["holder"] == "%s:%d" % (socket.gethostname(), os.getpid()) and lock["expired"] is False
    assert lock["acquired_at"] < lock["expires_at"]
    assert ".distributor.lock" not in backend.files("reports/2026-06-04"), "state info left a lock behind"
