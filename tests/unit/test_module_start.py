# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a module run imports: through Ansible each core module imported is compiled from source on
every run (the AnsiballZ zip holds no bytecode), so a publish to a local root imports no SFTP or S3
code and a publish in place no release code (issue #42's module start); the SFTP and S3 contract
tests open those backends through the same `open_storage`, the release tests publish through the
same `publish`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

from builders import write_bundle

MODULE = "ansible_collections.distributor.core.plugins.modules.distributor_publish"
RUN = """
import json, runpy, sys
sys.argv = ["distributor_publish", sys.argv[1]]
try:
    runpy.run_module(%r, run_name="__main__")
except SystemExit:
    pass
sys.stderr.write(json.dumps(sorted(name for name in sys.modules if ".storage.sftp" in name or ".storage.s3" in name
                             or "._distributor.releases" in name)))
""" % MODULE


def run_module(tmp_path, storage: dict) -> tuple[dict, list]:
    """The module process as scale.py runs it: its result and the backend and release modules it imported."""
    source = write_bundle(tmp_path / "bundle", {"index.html": b"hello"})
    args = tmp_path / "args.json"
    args.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": {"source": str(source), "pipeline": {"id": "start"},
                                                        "destination": {"id": "start", "storage": storage, "path": "site"}}}))
    done = subprocess.run([sys.executable, "-c", RUN, str(args)], capture_output=True, text=True, check=False,
                          env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)))
    return json.loads(done.stdout), json.loads(done.stderr.strip().splitlines()[-1])


def test_a_local_publish_in_place_imports_no_sftp_s3_or_release_code(tmp_path):
    result, imported = run_module(tmp_path, {"type": "local", "root": str(tmp_path / "root")})
    assert result["action"] == "publish"
    assert imported == []
