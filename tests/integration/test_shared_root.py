# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The roadmap's shared-root test list, through ansible-playbook, on local, SFTP and S3."""

from __future__ import annotations

import os
import time

import pytest

SHARED = {"mode": "shared_root"}
DAILY = {"id": "daily", "outputs": [{"match": "**/*.md", "transform": "markdown_to_html"}, {"match": "**/*.png"}]}
EVENT = {"id": "event", "outputs": [{"match": "**/*.md", "transform": "markdown_to_html"}]}


def dest(backend, **extra):
    return dict({"id": "site", "storage": backend.storage, "path": "{created:%Y-%m-%d}", "state": SHARED}, **extra)


def task(source, pipeline, destination, **extra):
    return {"distributor.core.distributor_publish": dict(source=source, pipeline=pipeline, destination=destination, **extra)}


def owners(state):
    return {o["path"]: o["pipeline_id"] for o in state["outputs"]}


@pytest.fixture
def two_owners(playbook, make_bundle, backend):
    """daily/report.html + daily/chart.png by `daily`, event/watch-123.html by `event`."""
    daily = make_bundle({"daily/report.md": b"# Daily\n", "daily/chart.png": b"png"}, id="daily")
    event = make_bundle({"event/watch-123.md": b"# Watch\n"}, id="event")
    results = playbook.run([task(daily, DAILY, dest(backend)), task(event, EVENT, dest(backend))])
    assert [r["action"] for r in results] == ["publish", "publish"], results
    return results


def test_two_pipelines_publish_disjoint_paths_into_one_root(two_owners, backend):
    state = backend.state("2026-06-04")
    assert state["schema_version"] == 3 and state["state"] == SHARED
    assert owners(state) == {"daily/chart.png": "daily", "daily/report.html": "daily", "event/watch-123.html": "event"}
    assert {o["pipeline_id"] for o in state["owners"]} == {"daily", "event"}
    for record in state["outputs"]:
        assert {"source_id", "source_digest", "source_created", "destination_id"} <= set(record)


def test_replace_of_own_older_outputs_keeps_another_pipelines_outputs(two_owners, playbook, make_bundle, backend):
    newer = make_bundle({"daily/report.md": b"# Daily v2\n"}, id="daily", created="2026-06-04T18:00:00Z")
    result = playbook.publish(source=newer, pipeline=DAILY, destination=dest(backend))
    assert result["action"] == "replace" and result["deleted"] == ["daily/chart.png"]
    files = backend.files("2026-06-04")
    assert "daily/chart.png" not in files and b"Daily v2" in files["daily/report.html"]
    assert "event/watch-123.html" in files
    assert owners(backend.state("2026-06-04"))["event/watch-123.html"] == "event"


def test_merge_keeps_own_prior_outputs_and_another_pipelines_outputs(two_owners, playbook, make_bundle, backend):
    newer = make_bundle({"daily/extra.md": b"# Extra\n"}, id="daily", created="2026-06-04T18:00:00Z")
    result = playbook.publish(source=newer, pipeline=DAILY, destination=dest(backend, reconciliation={"mode": "merge"}))
    assert result["action"] == "merge"
    assert sorted(result["retained"]) == ["daily/chart.png", "daily/report.html"]
    assert sorted(owners(backend.state("2026-06-04"))) == [
        "daily/chart.png", "daily/extra.html", "daily/report.html", "event/watch-123.html"]


def test_a_pipeline_cannot_silently_overwrite_another_pipelines_path(two_owners, playbook, make_bundle, backend):
    clash = make_bundle({"event/watch-123.md": b"# Hijack\n"}, id="daily", created="2026-06-04T18:00:00Z")
    result = playbook.publish(source=clash, pipeline=DAILY, destination=dest(backend))
    assert result["failed"] and result["reason"] == "ownership_conflict"
    assert "event/watch-123.html" in result["msg"] and "event/site" in result["msg"]
    assert b"Watch" in backend.files("2026-06-04")["event/watch-123.html"]


def test_takeover_rewrites_only_the_taken_records(two_owners, playbook, make_bundle, backend):
    clash = make_bundle({"event/watch-123.md": b"# Taken\n"}, id="daily", created="2026-06-04T18:00:00Z")
    result = playbook.publish(source=clash, pipeline=DAILY, destination=dest(backend, takeover={"mode": "managed"}))
    assert result["action"] == "takeover"
    state = backend.state("2026-06-04")
    assert owners(state) == {"event/watch-123.html": "daily"}
    assert {o["pipeline_id"] for o in state["owners"]} == {"daily", "event"}


def test_a_pipeline_cannot_claim_unmanaged_content_by_default(playbook, make_bundle, backend):
    backend.put("2026-06-04/event/watch-123.html", b"hand made")
    event = make_bundle({"event/watch-123.md": b"# Watch\n"}, id="event")
    refused = playbook.publish(source=event, pipeline=EVENT, destination=dest(backend))
    assert refused["failed"] and refused["reason"] == "unmanaged"
    assert backend.files("2026-06-04") == {"event/watch-123.html": b"hand made"}
    forced = playbook.publish(source=event, pipeline=EVENT, destination=dest(backend), force=True)
    assert forced["action"] == "force_replace" and "force overwrites unmanaged event/watch-123.html" in forced["reason"]
    assert forced["deleted"] == []


def test_state_and_output_timestamps(two_owners, playbook, make_bundle, backend):
    first = backend.state("2026-06-04")
    time.sleep(1.1)
    newer = make_bundle({"daily/report.md": b"# Daily v2\n", "daily/chart.png": b"png"}, id="daily", created="2026-06-04T18:00:00Z")
    playbook.publish(source=newer, pipeline=DAILY, destination=dest(backend))
    second = backend.state("2026-06-04")
    assert second["created_at"] == first["created_at"]
    assert second["updated_at"] > first["updated_at"]
    before = {o["path"]: o for o in first["outputs"]}
    after = {o["path"]: o for o in second["outputs"]}
    for path in ("daily/report.html", "daily/chart.png"):
        assert after[path]["created_at"] == before[path]["created_at"]
        assert after[path]["updated_at"] > before[path]["updated_at"]
    assert after["event/watch-123.html"] == before["event/watch-123.html"]


def test_failed_writes_clean_up_only_attempted_outputs(two_owners, playbook, make_bundle, backend):
    newer = make_bundle({"daily/a.png": b"aaaa", "daily/chart.png": b"png", "daily/z.png": b"zzzz"}, id="daily",
                        created="2026-06-04T18:00:00Z")
    with open(os.path.join(newer, "daily/z.png"), "wb") as handle:
        handle.write(b"ZZZZ")
    before = backend.files("2026-06-04")
    result = playbook.publish(source=newer, pipeline=DAILY, destination=dest(backend))
    assert result["failed"] and result["reason"] == "verification_failed"
    assert backend.files("2026-06-04") == before


def test_check_mode_reports_shared_root_actions_without_writing(two_owners, playbook, make_bundle, backend):
    before = backend.files("2026-06-04")
    newer = make_bundle({"daily/report.md": b"# Daily v2\n"}, id="daily", created="2026-06-04T18:00:00Z")
    result = playbook.publish(check=True, diff=True, source=newer, pipeline=DAILY, destination=dest(backend))
    assert result["changed"] and result["action"] == "replace" and result["deleted"] == ["daily/chart.png"]
    assert "daily/chart.png" in result["diff"][0]["before"] and "daily/chart.png" not in result["diff"][0]["after"]
    assert "event/watch-123.html" in result["diff"][0]["after"] and "event/site" in result["diff"][0]["after"]
    assert backend.files("2026-06-04") == before


def test_single_owner_state_of_the_same_owner_migrates_to_schema_3(playbook, make_bundle, backend):
    daily = make_bundle({"daily/report.md": b"# Daily\n"}, id="daily")
    single = dict(dest(backend), state={"mode": "single_owner"})
    first, migrated, again = playbook.run([task(daily, DAILY, single, return_records=True), task(daily, DAILY, dest(backend)),
                                           task(daily, DAILY, dest(backend))])
    assert first["state"]["schema_version"] == 2
    assert (migrated["action"], migrated["changed"], migrated["written"]) == ("migrate", True, [])
    assert backend.state("2026-06-04")["schema_version"] == 3
    assert (again["action"], again["changed"]) == ("skip", False)


def test_another_owners_single_owner_state_is_not_converted(playbook, make_bundle, backend):
    daily = make_bundle({"daily/report.md": b"# Daily\n"}, id="daily")
    event = make_bundle({"event/watch.md": b"# Watch\n"}, id="event")
    first, refused = playbook.run([task(daily, DAILY, dict(dest(backend), state={"mode": "single_owner"})),
                                   task(event, EVENT, dest(backend))])
    assert refused["failed"] and refused["reason"] == "conflict"
    assert backend.state("2026-06-04")["schema_version"] == 2
