# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A play that builds the manifest and then publishes predicts the publish under --check: the
manifest module returns the manifest it would write and publish takes it as `manifest`."""

from __future__ import annotations

import json
import os

from conftest import tree

PIPELINE = {"id": "reports", "outputs": [{"match": "*.md", "transform": "markdown_to_html"}, {"match": "*.png"}]}


def tasks(bundle: str, root, created: str, pass_manifest: bool = True) -> list:
    publish = {"source": bundle, "pipeline": PIPELINE, "destination": {"id": "archive", "storage": {"type": "local", "root": str(root)}}}
    if pass_manifest:
        publish["manifest"] = "{{ r0.manifest }}"
    return [
        {"distributor.core.distributor_manifest": {"path": bundle, "id": "reports.example", "created": created}},
        {"distributor.core.distributor_publish": publish},
    ]


def write(bundle, files: dict) -> None:
    for path, data in files.items():
        with open(os.path.join(bundle, path), "wb") as handle:
            handle.write(data)


def test_manifest_then_publish_predicts_the_change_under_check_and_a_real_run_does_it(playbook, tmp_path):
    bundle, root = tmp_path / "bundle", tmp_path / "root"
    bundle.mkdir()
    write(str(bundle), {"report.md": b"# Report v1\n", "chart.png": b"\x89PNG v1"})
    playbook.run(tasks(str(bundle), root, "2026-06-03T00:00:00Z"))
    published, manifest_before = tree(root), (bundle / "manifest.json").read_bytes()

    # The producer rendered a new version: manifest.json on disk is now stale.
    write(str(bundle), {"report.md": b"# Report v2\n", "chart.png": b"\x89PNG v2, larger"})
    stale = playbook.run(tasks(str(bundle), root, "2026-06-04T00:00:00Z", pass_manifest=False), check=True)[1]
    assert stale["failed"] and stale["reason"] == "verification_failed"

    built, checked = playbook.run(tasks(str(bundle), root, "2026-06-04T00:00:00Z"), check=True)
    assert built["changed"] and built["manifest"]["created"] == "2026-06-04T00:00:00Z"
    assert (checked["changed"], checked["action"]) == (True, "replace")
    assert sorted(checked["written"]) == ["chart.png", "report.html"]
    assert tree(root) == published and (bundle / "manifest.json").read_bytes() == manifest_before

    built, real = playbook.run(tasks(str(bundle), root, "2026-06-04T00:00:00Z"))
    assert (real["action"], sorted(real["written"])) == (checked["action"], checked["written"])
    assert json.loads((bundle / "manifest.json").read_text()) == built["manifest"]
    state = json.loads(tree(root)[".distributor.json"])
    assert state["source"]["manifest"] == built["manifest"]
    assert tree(root)["chart.png"] == b"\x89PNG v2, larger"


def test_a_first_publish_is_predicted_before_any_manifest_json_exists(playbook, tmp_path):
    bundle, root = tmp_path / "bundle", tmp_path / "root"
    bundle.mkdir()
    write(str(bundle), {"report.md": b"# Report\n"})
    built, checked = playbook.run(tasks(str(bundle), root, "2026-06-04T00:00:00Z"), check=True)
    assert (checked["changed"], checked["action"], checked["written"]) == (True, "publish", ["report.html"])
    assert not (bundle / "manifest.json").exists() and not root.exists()


def test_the_manifest_option_is_refused_like_a_bad_manifest_json_naming_the_field(playbook, tmp_path):
    bundle, root = tmp_path / "bundle", tmp_path / "root"
    bundle.mkdir()
    write(str(bundle), {"report.md": b"# Report\n"})
    steps = tasks(str(bundle), root, "2026-06-04T00:00:00Z")
    steps[1]["distributor.core.distributor_publish"]["manifest"] = "{{ r0.manifest | combine({'created': 'today'}) }}"
    refused = playbook.run(steps, check=True)[1]
    assert refused["failed"] and refused["reason"] == "invalid_manifest"
    assert "manifest option" in refused["msg"] and "created" in refused["msg"]
