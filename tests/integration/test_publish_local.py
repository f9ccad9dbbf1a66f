# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""distributor_publish through the real ansible-playbook, single-owner, local storage."""

from __future__ import annotations

import json
import os

import pytest

from conftest import tree

REPORT = {"report.md": b"# Quarterly report\n\nSee [the chart](chart.md).\n", "chart.png": b"\x89PNG fake"}
PIPELINE = {
    "id": "reports",
    "outputs": [{"match": "**/*.md", "transform": "markdown_to_html"}, {"match": "**/*.png", "transform": "copy"}],
}


@pytest.fixture
def root(tmp_path):
    return tmp_path / "www"


def destination(root, **extra):
    data = {"id": "archive", "storage": {"type": "local", "root": str(root)}, "path": "archive/{created:%Y-%m-%d}",
            "links": {"base_url": "https://reports.example.com/archive/{created:%Y-%m-%d}/"}}
    data.update(extra)
    return data


def state_of(root, bundle_path="archive/2026-06-04"):
    return json.loads((root / bundle_path / ".distributor.json").read_text())


def test_first_publish_writes_outputs_and_schema_2_state(playbook, make_bundle, root):
    result = playbook.publish(source=make_bundle(REPORT), pipeline=PIPELINE, destination=destination(root))
    assert result["changed"] and result["action"] == "publish", result
    assert sorted(result["written"]) == ["chart.png", "report.html"]
    assert result["primary_url"] == "https://reports.example.com/archive/2026-06-04/report.html"
    files = tree(root / "archive/2026-06-04")
    assert sorted(files) == [".distributor.json", "chart.png", "report.html"]
    assert b'<a href="chart.html">' in files["report.html"]
    state = state_of(root)
    assert state["schema_version"] == 2 and state["state"] == {"mode": "single_owner"}
    assert [o["path"] for o in state["outputs"]] == ["chart.png", "report.html"]


def test_republish_is_a_skip_with_changed_false(playbook, make_bundle, root):
    bundle = make_bundle(REPORT)
    first, second = playbook.run([{"distributor.core.distributor_publish": {
        "source": bundle, "pipeline": PIPELINE, "destination": destination(root)}}] * 2)
    assert first["changed"] is True
    assert (second["changed"], second["action"]) == (False, "skip")


def test_a_module_run_leaves_no_payload_behind_whether_it_publishes_skips_or_fails(
        playbook, make_bundle, root, tmp_path, monkeypatch):
    """The module process ends the way Python ends (adapter.run_module freezes, never exits
    itself): AnsiballZ still removes the payload it unpacked, and each result reaches Ansible.
    (`distributor_in_controller: false`: a module process even on the controller.)"""
    payloads = tmp_path / "module-tmp"
    payloads.mkdir()
    monkeypatch.setenv("TMPDIR", str(payloads))
    task = {"source": make_bundle(REPORT), "pipeline": PIPELINE, "destination": destination(root)}
    first, second, failed = playbook.run([dict(vars={"distributor_in_controller": False}, **{"distributor.core.distributor_publish": args})
                                          for args in (task, task, dict(task, source=str(tmp_path / "missing")))])
    assert (first["action"], second["action"]) == ("publish", "skip") and failed["failed"] and failed["reason"]
    assert not [name for name in os.listdir(payloads) if "_payload_" in name], os.listdir(payloads)


def test_check_mode_writes_nothing_at_all_and_reports_the_plan(playbook, make_bundle, root):
    result = playbook.publish(check=True, diff=True, source=make_bundle(REPORT), pipeline=PIPELINE, destination=destination(root))
    assert result["changed"] and result["action"] == "publish"
    assert sorted(result["written"]) == ["chart.png", "report.html"]
    assert not root.exists()
    assert "report.html" in result["diff"][0]["after"] and "absent" in result["diff"][0]["before"]


def test_diff_shows_added_rewritten_and_removed_paths(playbook, make_bundle, root):
    playbook.publish(source=make_bundle(REPORT), pipeline=PIPELINE, destination=destination(root))
    newer = make_bundle({"report.md": b"# Q2\n", "extra.png": b"x"}, created="2026-06-04T18:00:00Z")
    result = playbook.publish(check=True, diff=True, source=newer, pipeline=PIPELINE, destination=destination(root))
    before, after = result["diff"][0]["before"], result["diff"][0]["after"]
    assert "chart.png" in before and "chart.png" not in after
    assert "extra.png" in after and "extra.png" not in before
    assert result["deleted"] == ["chart.png"]
    assert tree(root / "archive/2026-06-04").keys() == {".distributor.json", "chart.png", "report.html"}


def test_newer_source_replaces_and_older_source_skips(playbook, make_bundle, root):
    playbook.publish(source=make_bundle(REPORT), pipeline=PIPELINE, destination=destination(root))
    newer = make_bundle({"report.md": b"# Newer\n"}, created="2026-06-04T18:00:00Z")
    older = make_bundle({"report.md": b"# Older\n"}, created="2026-06-04T06:00:00Z")
    replaced, skipped = playbook.run([
        {"distributor.core.distributor_publish": {"source": newer, "pipeline": PIPELINE, "destination": destination(root)}},
        {"distributor.core.distributor_publish": {"source": older, "pipeline": PIPELINE, "destination": destination(root)}},
    ])
    assert (replaced["action"], replaced["deleted"]) == ("replace", ["chart.png"])
    assert (skipped["action"], skipped["changed"]) == ("skip", False)
    assert "newer" in skipped["reason"]
    assert sorted(tree(root / "archive/2026-06-04")) == [".distributor.json", "report.html"]
    assert b"Newer" in (root / "archive/2026-06-04/report.html").read_bytes()


def test_same_created_with_another_digest_is_a_conflict(playbook, make_bundle, root):
    playbook.publish(source=make_bundle(REPORT), pipeline=PIPELINE, destination=destination(root))
    changed = make_bundle({"report.md": b"# Tampered later\n"})
    result = playbook.publish(source=changed, pipeline=PIPELINE, destination=destination(root))
    assert result["failed"] and result["reason"] == "conflict"
    assert "on_conflict" in result["msg"]
    allowed = playbook.publish(source=changed, pipeline=PIPELINE,
                               destination=destination(root, transfer={"on_conflict": "replace"}))
    assert allowed["action"] == "replace"


def test_unmanaged_content_is_refused_and_untouched(playbook, make_bundle, root):
    target = root / "archive/2026-06-04"
    target.mkdir(parents=True)
    (target / "index.html").write_text("hand made")
    result = playbook.publish(source=make_bundle(REPORT), pipeline=PIPELINE, destination=destination(root))
    assert result["failed"] and result["reason"] == "unmanaged"
    assert "index.html" in result["msg"]
    assert tree(target) == {"index.html": b"hand made"}


def test_force_replaces_only_within_the_bundle_path(playbook, make_bundle, root):
    target = root / "archive/2026-06-04"
    target.mkdir(parents=True)
    (target / "index.html").write_text("hand made")
    (root / "keep.txt").write_text("outside the bundle path")
    result = playbook.publish(force=True, source=make_bundle(REPORT), pipeline=PIPELINE, destination=destination(root))
    assert result["action"] == "force_replace" and result["deleted"] == ["index.html"]
    assert sorted(tree(target)) == [".distributor.json", "chart.png", "report.html"]
    assert (root / "keep.txt").read_text() == "outside the bundle path"


def test_identity_mismatch_is_a_conflict_and_takeover_transfers_ownership(playbook, make_bundle, root):
    playbook.publish(source=make_bundle(REPORT), pipeline=PIPELINE, destination=destination(root))
    other = make_bundle({"summary.md": b"# Summary\n"}, id="events.daily")
    events = dict(PIPELINE, id="events")
    refused = playbook.publish(source=other, pipeline=events, destination=destination(root))
    assert refused["failed"] and refused["reason"] == "conflict"
    assert "pipeline reports" in refused["msg"]
    taken = playbook.publish(source=other, pipeline=events, destination=destination(root, takeover={"mode": "managed"}))
    assert taken["action"] == "takeover"
    assert sorted(taken["deleted"]) == ["chart.png", "report.html"]
    assert state_of(root)["pipeline_id"] == "events"
    assert sorted(tree(root / "archive/2026-06-04")) == [".distributor.json", "summary.html"]


def test_invalid_state_is_refused_and_kept(playbook, make_bundle, root):
    target = root / "archive/2026-06-04"
    target.mkdir(parents=True)
    (target / ".distributor.json").write_text('{"schema_version": 2, "pipeline_id": 7}')
    result = playbook.publish(source=make_bundle(REPORT), pipeline=PIPELINE, destination=destination(root))
    assert result["failed"] and result["reason"] == "invalid_state"
    assert ".distributor.json" in result["msg"]
    assert (target / ".distributor.json").read_text() == '{"schema_version": 2, "pipeline_id": 7}'


def test_schema_1_state_is_read_and_upgraded_to_schema_2(playbook, make_bundle, root):
    old = make_bundle({"report.md": b"# Old\n"}, created="2026-06-04T06:00:00Z")
    manifest = json.loads(open(os.path.join(old, "manifest.json")).read())
    target = root / "archive/2026-06-04"
    target.mkdir(parents=True)
    (target / "report.md").write_bytes(b"# Old\n")
    v1 = {"schema_version": 1, "pipeline_id": "reports", "destination_id": "archive",
          "published_at": "2026-06-04T06:01:00Z", "source": {"manifest": manifest},
          "outputs": [{"path": "report.md", "kind": "source", "source_path": "report.md",
                       "sha256": manifest["files"][0]["sha256"], "size": 6}]}
    (target / ".distributor.json").write_text(json.dumps(v1))
    same = playbook.publish(source=old, pipeline={"id": "reports"}, destination=destination(root))
    assert (same["action"], same["changed"]) == ("skip", False)
    newer = playbook.publish(source=make_bundle(REPORT), pipeline={"id": "reports"}, destination=destination(root))
    assert newer["action"] == "replace"
    state = state_of(root)
    assert state["schema_version"] == 2
    assert state["created_at"] == "2026-06-04T06:01:00Z"
    assert not (target / "report.md").read_bytes().startswith(b"# Old")


def test_merge_keeps_omitted_outputs_and_their_timestamps(playbook, make_bundle, root):
    merge = destination(root, reconciliation={"mode": "merge"})
    playbook.publish(source=make_bundle(REPORT), pipeline=PIPELINE, destination=merge)
    first = {o["path"]: o for o in state_of(root)["outputs"]}
    newer = make_bundle({"notes.md": b"# Notes\n"}, created="2026-06-04T18:00:00Z")
    result = playbook.publish(source=newer, pipeline=PIPELINE, destination=merge)
    assert result["action"] == "merge"
    assert sorted(result["retained"]) == ["chart.png", "report.html"]
    outputs = {o["path"]: o for o in state_of(root)["outputs"]}
    assert sorted(outputs) == ["chart.png", "notes.html", "report.html"]
    assert outputs["chart.png"] == first["chart.png"]
    assert sorted(tree(root / "archive/2026-06-04")) == [".distributor.json", "chart.png", "notes.html", "report.html"]
