# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What distributor_manifest runs: write manifest.json only when its content changes, so a
playbook that builds and publishes on every run reports no change when nothing changed."""

from __future__ import annotations

import json

from ansible_collections.distributor.core.plugins.module_utils._distributor.manifest import ensure_manifest

FIRST, SECOND = "2026-06-04T12:00:00Z", "2026-06-05T12:00:00Z"


def bundle(tmp_path, files):
    for path, data in files.items():
        target = tmp_path / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    return str(tmp_path)


def run(source, now, created=None, paths=None, check_mode=False):
    return ensure_manifest(source, manifest_id="reports.daily", created=created, paths=paths, check_mode=check_mode, now=now)


def written(tmp_path):
    return json.loads((tmp_path / "manifest.json").read_text())


def test_an_unchanged_bundle_keeps_its_created_time_and_reports_no_change(tmp_path):
    source = bundle(tmp_path, {"a.md": b"# A\n", "img/b.png": b"b"})
    first = run(source, FIRST)
    assert first["changed"] and written(tmp_path)["created"] == FIRST
    again = run(source, SECOND)
    assert not again["changed"] and again["manifest"] == first["manifest"]
    assert written(tmp_path)["created"] == FIRST


def test_a_changed_file_gets_a_new_created_time(tmp_path):
    source = bundle(tmp_path, {"a.md": b"# A\n"})
    run(source, FIRST)
    (tmp_path / "a.md").write_bytes(b"# A, revised\n")
    result = run(source, SECOND)
    assert result["changed"] and written(tmp_path)["created"] == SECOND


def test_an_explicit_created_is_written_and_is_idempotent_itself(tmp_path):
    source = bundle(tmp_path, {"a.md": b"# A\n"})
    run(source, FIRST)
    assert run(source, SECOND, created="2026-01-01T00:00:00Z")["changed"]
    assert not run(source, SECOND, created="2026-01-01T00:00:00Z")["changed"]
    assert written(tmp_path)["created"] == "2026-01-01T00:00:00Z"


def test_check_mode_returns_the_manifest_it_would_write_and_writes_nothing(tmp_path):
    source = bundle(tmp_path, {"a.md": b"# A\n"})
    result = run(source, FIRST, check_mode=True)
    assert result["changed"] and result["manifest"]["files"][0]["path"] == "a.md"
    assert not (tmp_path / "manifest.json").exists()


def test_a_damaged_manifest_is_replaced(tmp_path):
    source = bundle(tmp_path, {"a.md": b"# A\n", "manifest.json": b"{not json"})
    assert run(source, FIRST)["changed"] and written(tmp_path)["id"] == "reports.daily"


def test_listed_paths_limit_the_manifest(tmp_path):
    source = bundle(tmp_path, {"a.md": b"# A\n", "draft.md": b"wip"})
    result = run(source, FIRST, paths=["a.md"])
    assert [f["path"] for f in result["manifest"]["files"]] == ["a.md"]
