# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""`--check` predicts what the approved run would refuse: a copied file edited after its manifest
with the same size (only its digest tells) fails verification_failed in the check itself, on
local storage and through SFTP, and the destination is left as it was."""

from __future__ import annotations

import os

import pytest
from conftest import tree

PIPELINE = {"id": "reports", "outputs": [{"match": "**"}]}


@pytest.fixture(params=["local", "sftp"])
def storage(request, tmp_path):
    if request.param == "local":
        return {"type": "local", "root": str(tmp_path / "root")}
    return request.getfixturevalue("sshd_server").storage(str(tmp_path / "root"))


def test_check_reports_verification_failed_for_a_same_size_edit_made_after_the_manifest(playbook, tmp_path, storage):
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    (bundle / "data.csv").write_bytes(b"year,revenue\n2026,50k\n")
    publish = {"source": str(bundle), "pipeline": PIPELINE, "destination": {"id": "archive", "storage": storage}}
    manifest = {"distributor.core.distributor_manifest": {"path": str(bundle), "id": "reports.example"}}
    playbook.run([manifest])
    (bundle / "data.csv").write_bytes(b"year,revenue\n2026,52k\n")

    checked = playbook.run([{"distributor.core.distributor_publish": publish}], check=True, diff=True)[0]
    assert checked["failed"] and checked["reason"] == "verification_failed"
    assert "data.csv: sha256 mismatch" in checked["msg"]
    assert not os.path.exists(tmp_path / "root") or tree(tmp_path / "root") == {}
