# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Shared paths (issue 40 item 7) through the real ansible-playbook on local storage: what a web
server writes into a shared path (certbot --webroot's challenge, an upload) survives publishes,
keep-N clearing and a rollback, unread; a bundle that holds a shared path is refused naming it."""

from __future__ import annotations

import os

from planted import MODIFIED, OLD, fingerprint

PIPELINE = {"id": "site", "outputs": [{"match": "**"}]}
SHARED = [".well-known/acme-challenge", "uploads"]


def destination(root) -> dict:
    return {"id": "web", "storage": {"type": "local", "root": str(root)}, "path": "site", "releases": {"keep": 2, "shared": SHARED}}


def publish(root, bundle: str) -> dict:
    return {"distributor.core.distributor_publish": {"source": bundle, "pipeline": PIPELINE, "destination": destination(root)}}


def test_what_a_web_server_writes_into_a_shared_path_survives_releases_and_a_rollback(tmp_path, playbook, make_bundle):
    root = tmp_path / "root"
    site = root / "site"
    [first] = playbook.run([publish(root, make_bundle({"index.html": b"v0"}, id="site.example", created="2026-06-04T11:00:00Z"))])
    assert first["release"]["status"] == "active", first
    (site / ".well-known" / "acme-challenge" / "token").write_bytes(b"certbot's answer")
    upload = site / "uploads" / "photo.jpg"
    upload.write_bytes(b"a visitor's photo")
    os.utime(upload, ns=(OLD, MODIFIED))
    before = fingerprint(upload)
    for n in range(1, 4):
        [done] = playbook.run([publish(root, make_bundle({"index.html": b"v%d" % n}, id="site.example",
                                                         created="2026-06-04T12:%02d:00Z" % n))])
        assert done["release"]["status"] == "active" and not done.get("failed"), done
    assert first["release"]["id"] not in os.listdir(root / ".distributor-releases" / "site")
    [back] = playbook.run([{"distributor.core.distributor_release": {
        "pipeline_id": "site", "release": "previous", "destination": destination(root)}}])
    assert back["changed"] and back["rollback"], back
    assert (site / "index.html").read_bytes() == b"v2"
    assert fingerprint(upload) == before and (site / ".well-known" / "acme-challenge" / "token").read_bytes() == b"certbot's answer"
    assert os.readlink(root / os.readlink(site) / "uploads") == "../shared/uploads"

    [refused] = playbook.run([publish(root, make_bundle({"index.html": b"v9", "uploads/logo.png": b"png"}, id="site.example",
                                                        created="2026-06-04T13:00:00Z"))])
    assert refused["failed"] and refused["reason"] == "invalid_config", refused
    assert "the bundle holds uploads/logo.png, under the shared path uploads" in refused["msg"]
