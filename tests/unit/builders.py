# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Small constructors so unit tests read like the contract's rows, not like JSON."""

from __future__ import annotations

import hashlib
import json
import os
from datetime import datetime, timezone

from ansible_collections.distributor.core.plugins.module_utils._distributor.records.config import parse_destination, parse_pipeline
from ansible_collections.distributor.core.plugins.module_utils._distributor.records.manifest import Manifest, ManifestFile, compute_digest
from ansible_collections.distributor.core.plugins.module_utils._distributor.records.manifest_build import create_manifest

NOW = datetime(2026, 6, 4, 12, 0, 0, tzinfo=timezone.utc)
LATER = datetime(2026, 6, 5, 12, 0, 0, tzinfo=timezone.utc)
NOW_S = "2026-06-04T12:00:00Z"
LATER_S = "2026-06-05T12:00:00Z"


def sha(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def manifest(id="reports.example", created="2026-06-04T11:55:00Z", files=None) -> Manifest:
    files = {"report.md": b"# Report\n"} if files is None else files
    entries = tuple(ManifestFile(p, sha(d), len(d)) for p, d in sorted(files.items()))
    return Manifest(1, id, compute_digest(entries), created, entries)


# What tests configure when they hand the core a MemoryStorage through `opener`: memory is not a
# storage type a user can configure, so the configuration names a real one the opener replaces.
MEMORY_STORAGE = {"type": "local", "root": "/nonexistent/in-memory"}


def destination(**overrides):
    data = {"id": "archive", "storage": MEMORY_STORAGE}
    data.update(overrides)
    return parse_destination(data)


def pipeline(**overrides):
    data = {"id": "reports"}
    data.update(overrides)
    return parse_pipeline(data)


def write_bundle(directory, files: dict, id="reports.example", created="2026-06-04T11:55:00Z") -> str:
    """A real bundle directory with a correct manifest.json."""
    directory = str(directory)
    for path, data in files.items():
        target = os.path.join(directory, path)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(target, "wb") as handle:
            handle.write(data)
    create_manifest(directory, id, created, sorted(files))
    return directory


def read_json(raw: bytes) -> dict:
    return json.loads(raw.decode("utf-8"))


def _records(key, m: Manifest, paths, stamp=NOW_S):
    from ansible_collections.distributor.core.plugins.module_utils._distributor.records.state import Output
    return tuple(
        Output(p, "source", p, None, None, sha(p.encode()), len(p), stamp, stamp, key, m.id, m.digest, m.created)
        for p in paths
    )


def single_state(m: Manifest, paths=("report.md",), pipeline_id="reports", destination_id="archive", reconciliation="replace"):
    from ansible_collections.distributor.core.plugins.module_utils._distributor.records.state import Owner, OwnerKey, State
    key = OwnerKey(pipeline_id, destination_id)
    return State("single_owner", 2, NOW_S, NOW_S, NOW_S, "0.1.0", (Owner(key, reconciliation, m, None),), _records(key, m, paths))


def shared_state(*owners):
    """owners: (pipeline_id, destination_id, manifest, paths) tuples."""
    from ansible_collections.distributor.core.plugins.module_utils._distributor.records.state import Owner, OwnerKey, State
    records, owner_records = (), ()
    for pipeline_id, destination_id, m, paths in owners:
        key = OwnerKey(pipeline_id, destination_id)
        owner_records += (Owner(key, "replace", m, None),)
        records += _records(key, m, paths)
    return State("shared_root", 3, NOW_S, NOW_S, None, "0.1.0", owner_records, records)


class Place:
    """A destination at `site` on one backend (local, sftp or s3), for tests that plant files
    there: its storage settings, and the S3 bucket and client or the local root to plant with."""

    bundle_path = "site"

    def __init__(self, kind: str, tmp_path, request):
        self.kind = kind
        if kind == "s3":
            server = request.getfixturevalue("s3_server")
            self.bucket = server.create_bucket()
            self.client = server.client()
            storage = server.storage(self.bucket)
        else:
            self.root = tmp_path / "root"
            (self.root / self.bundle_path).mkdir(parents=True)
            storage = {"type": "local", "root": str(self.root)}
            if kind == "sftp":
                storage = request.getfixturevalue("sshd_server").storage(str(self.root))
        self.destination = {"id": "archive", "storage": storage, "path": self.bundle_path}
