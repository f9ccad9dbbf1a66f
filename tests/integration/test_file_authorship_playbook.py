# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 38 item 2 through the real ansible-playbook: root's publish and prune fail `unmanaged`
on a file at an output's name that uid 1000 now owns, in check mode too, and return it in
`unvouched`, counted; the file stays. The root is seeded with the core publish."""

from __future__ import annotations

import os

from ansible_collections.distributor.core.plugins.module_utils._distributor.operations.publish import publish

from hostile import assert_refused

PUBLISH = "distributor.core.distributor_publish"
PRUNE = "distributor.core.distributor_prune"
OTHER_UID = 1000


def test_publish_and_prune_keep_a_file_another_account_put_at_an_output_s_name(playbook, make_bundle, tmp_path):
    root = tmp_path / "root"
    dest = {"id": "archive", "storage": {"type": "local", "root": str(root)}, "path": "site"}
    files = {"index.html": b"<p>v1</p>", "notes.txt": b"notes", "report.pdf": b"%PDF root's"}
    publish(make_bundle(files), {"id": "reports"}, dest)
    report = root / "site" / "report.pdf"
    os.chown(report, OTHER_UID, OTHER_UID)
    second = make_bundle({"index.html": b"<p>v2</p>", "notes.txt": b"notes"}, created="2026-06-05T11:55:00Z")
    publishing = {PUBLISH: {"source": second, "pipeline": {"id": "reports"}, "destination": dest}}
    pruning = {PRUNE: {"pipeline_id": "reports", "destination": dict(dest, retention={"max_outputs": 1})}}
    results = playbook.run([dict(publishing, check_mode=True), publishing, dict(pruning, check_mode=True), pruning])
    for result, act in zip(results, ["this publish would delete or write over"] * 2 + ["prune would delete"] * 2):
        assert_refused(result, "unmanaged", "1 file(s) %s" % act, "report.pdf (is owned by uid %d" % OTHER_UID,
                       "storage.trusted_owners")
        assert [entry["path"] for entry in result["unvouched"]] == ["report.pdf"] and result["unvouched_count"] == 1
    assert report.read_bytes() == b"%PDF root's" and (root / "site" / "index.html").read_bytes() == b"<p>v1</p>"
