# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What distributor_manifest runs: write manifest.json only when its content changes, so a
playbook that builds and publishes on every run reports no change when nothing changed."""

from __future__ import annotations

import json
import os

import pytest
from ansible.module_utils import basic
from ansible.module_utils.common import warnings

from ansible_collections.distributor.core.plugins.module_utils._distributor.operations.ensure_manifest import ensure_manifest
from ansible_collections.distributor.core.plugins.modules import distributor_manifest

FIRST = "2026-06-04T12:00:00Z"
MTIME = 1780574400  # 2026-06-04T12:00:00Z
LATER = 1780660800  # 2026-06-05T12:00:00Z


def bundle(tmp_path, files, mtime=MTIME):
    for path, data in files.items():
        target = tmp_path / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        os.utime(target, (mtime, mtime + 0.75))
    return str(tmp_path)


def run(source, created=None, paths=None, check_mode=False):
    return ensure_manifest(source, manifest_id="reports.daily", created=created, paths=paths, check_mode=check_mode)


def written(tmp_path):
    return json.loads((tmp_path / "manifest.json").read_text())


def test_without_created_a_new_bundle_gets_its_newest_file_time_in_utc_whole_seconds(tmp_path):
    source = bundle(tmp_path, {"a.md": b"# A\n"})
    os.utime(tmp_path / "a.md", (0, MTIME - 3600.5))
    bundle(tmp_path, {"img/b.png": b"b"})
    assert run(source)["manifest"]["created"] == FIRST


def test_check_mode_and_the_run_derive_the_same_manifest(tmp_path):
    source = bundle(tmp_path, {"a.md": b"# A\n"})
    checked = run(source, check_mode=True)
    assert not (tmp_path / "manifest.json").exists()
    assert run(source)["manifest"] == checked["manifest"] == written(tmp_path)


def test_an_unchanged_bundle_keeps_its_created_time_and_reports_no_change(tmp_path):
    source = bundle(tmp_path, {"a.md": b"# A\n", "img/b.png": b"b"})
    first = run(source)
    assert first["changed"] and written(tmp_path)["created"] == FIRST
    os.utime(tmp_path / "a.md", (LATER, LATER))  # touched, not changed
    again = run(source)
    assert not again["changed"] and again["manifest"] == first["manifest"]
    assert written(tmp_path)["created"] == FIRST


def test_a_changed_file_moves_created_to_its_modification_time(tmp_path):
    source = bundle(tmp_path, {"a.md": b"# A\n"})
    run(source)
    bundle(tmp_path, {"a.md": b"# A, revised\n"}, mtime=LATER)
    result = run(source, check_mode=True)
    assert result["changed"] and result["manifest"]["created"] == "2026-06-05T12:00:00Z"
    assert run(source)["manifest"] == result["manifest"] == written(tmp_path)


def test_a_changed_bundle_whose_files_carry_old_times_still_moves_forward_by_a_second(tmp_path):
    source = bundle(tmp_path, {"a.md": b"# A\n"})
    run(source, created="2026-07-01T00:00:00+02:00")
    bundle(tmp_path, {"a.md": b"# A, restored from an old archive\n"})
    assert run(source)["manifest"]["created"] == "2026-06-30T22:00:01Z"


def test_an_explicit_created_is_written_and_is_idempotent_itself(tmp_path):
    source = bundle(tmp_path, {"a.md": b"# A\n"})
    run(source)
    assert run(source, created="2026-01-01T00:00:00Z")["changed"]
    assert not run(source, created="2026-01-01T00:00:00Z")["changed"]
    assert written(tmp_path)["created"] == "2026-01-01T00:00:00Z"


def test_a_bundle_without_files_takes_the_time_of_its_directory(tmp_path):
    (tmp_path / "empty").mkdir()
    os.utime(tmp_path / "empty", (MTIME, MTIME))
    assert run(str(tmp_path / "empty"))["manifest"]["created"] == FIRST


def test_a_damaged_manifest_is_replaced(tmp_path):
    source = bundle(tmp_path, {"a.md": b"# A\n", "manifest.json": b"{not json"})
    assert run(source)["changed"] and written(tmp_path)["id"] == "reports.daily"


def test_listed_paths_limit_the_manifest(tmp_path):
    source = bundle(tmp_path, {"a.md": b"# A\n", "draft.md": b"wip"})
    result = run(source, paths=["a.md"])
    assert [f["path"] for f in result["manifest"]["files"]] == ["a.md"]


def test_the_module_result_lists_the_first_result_limit_files_with_the_digest_and_count(tmp_path, capsys, monkeypatch):
    """A 50,000-file manifest in a task result was dropped by AWX, and the role handed it on (issue 41)."""
    source = bundle(tmp_path, {"f%03d.txt" % n: b"%d" % n for n in range(130)})
    arguments = {"path": source, "id": "reports.daily", "_ansible_check_mode": True}
    monkeypatch.setattr(basic, "_ANSIBLE_ARGS", json.dumps({"ANSIBLE_MODULE_ARGS": arguments}).encode())
    monkeypatch.setattr(basic, "_ANSIBLE_PROFILE", "legacy")
    monkeypatch.setattr(warnings, "_global_warnings", {})
    with pytest.raises(SystemExit):
        distributor_manifest.main()
    out = json.loads(capsys.readouterr().out)
    whole = run(source, check_mode=True)["manifest"]
    assert out["manifest"]["files"] == whole["files"][:100] and out["truncated"] == {"manifest.files": 30}
    assert (out["digest"], out["files_count"]) == (whole["digest"], 130)
    assert not (tmp_path / "manifest.json").exists()
