# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Settings changes reach published outputs through ansible-playbook (decision 45): a new
stylesheet rewrites every page of an unchanged bundle, and a new file mode or S3 Cache-Control
is set on the published outputs in place, reviewed with --check --diff and approved by digest,
without one byte uploaded again."""

from __future__ import annotations

import os

import pytest

from conftest import tree

PAGES = {"index.md": b"# Home\n\nSee [notes](notes.md).\n", "notes.md": b"# Notes\n\nText.\n", "chart.svg": b"<svg/>"}


def pipeline(stylesheet: str) -> dict:
    return {"id": "site", "outputs": [{"match": "*.md", "transform": "markdown_to_html"}, {"match": "*.svg"}],
            "markdown": {"stylesheet": stylesheet}}


@pytest.fixture
def bundle(playbook, tmp_path):
    path = tmp_path / "bundle"
    path.mkdir()
    for name, data in PAGES.items():
        (path / name).write_bytes(data)
    playbook.run([{"distributor.core.distributor_manifest": {"path": str(path), "id": "site.example"}}])
    return str(path)


def publish(playbook, bundle, storage, stylesheet="/1.css", check=False, **extra) -> dict:
    args = {"source": bundle, "pipeline": pipeline(stylesheet), "destination": {"id": "web", "storage": storage}}
    return playbook.run([{"distributor.core.distributor_publish": dict(args, **extra)}], check=check, diff=check)[0]


def test_a_new_stylesheet_rewrites_every_page_of_an_unchanged_bundle(playbook, bundle, tmp_path):
    storage = {"type": "local", "root": str(tmp_path / "www")}
    publish(playbook, bundle, storage)
    assert publish(playbook, bundle, storage)["action"] == "skip"

    check = publish(playbook, bundle, storage, stylesheet="/2.css", check=True)
    assert check["changed"] and check["written"] == ["index.html", "notes.html"]
    assert "page settings of index.html, notes.html changed" in check["reason"]
    ran = publish(playbook, bundle, storage, stylesheet="/2.css", expect_plan_digest=check["plan_digest"])
    assert ran["written"] == check["written"]
    pages = tree(tmp_path / "www")
    assert b'href="/2.css"' in pages["index.html"] and b'href="/2.css"' in pages["notes.html"]
    assert publish(playbook, bundle, storage, stylesheet="/2.css")["changed"] is False


@pytest.mark.parametrize("backend", ["local", "sftp"])
def test_a_new_file_mode_is_set_on_the_published_outputs_in_place(playbook, bundle, tmp_path, request, backend):
    root = tmp_path / "www"
    base = {"type": "local", "root": str(root)} if backend == "local" else request.getfixturevalue("sshd_server").storage(str(root))
    publish(playbook, bundle, dict(base, file_mode="0640"))
    inodes = {name: os.stat(root / name).st_ino for name in ("index.html", "notes.html", "chart.svg")}

    check = publish(playbook, bundle, dict(base, file_mode="0604"), check=True)
    assert check["written"] == [] and check["resettled"] == ["chart.svg", "index.html", "notes.html"]
    assert {c["change"] for c in check["changes"]} == {"settings"}
    assert "file_mode=0604" in check["diff"][0]["after"]
    ran = publish(playbook, bundle, dict(base, file_mode="0604"), expect_plan_digest=check["plan_digest"])
    assert ran["resettled"] == check["resettled"] and ran["written"] == []
    for name, inode in inodes.items():
        assert os.stat(root / name).st_ino == inode and os.stat(root / name).st_mode & 0o777 == 0o604


def test_a_new_cache_control_is_copied_onto_the_s3_objects_without_uploading_them(playbook, bundle, s3_server):
    bucket = s3_server.create_bucket()
    storage = s3_server.storage(bucket, prefix="site")
    publish(playbook, bundle, dict(storage, cache_control="max-age=60"))
    client = s3_server.client()
    uploaded = {o["Key"]: o["LastModified"] for o in client.list_objects_v2(Bucket=bucket)["Contents"]}

    ran = publish(playbook, bundle, dict(storage, cache_control="no-cache"))
    assert ran["written"] == [] and ran["resettled"] == ["chart.svg", "index.html", "notes.html"]
    head = client.head_object(Bucket=bucket, Key="site/index.html")
    assert head["CacheControl"] == "no-cache" and head["ContentType"] == "text/html; charset=utf-8"
    assert client.get_object(Bucket=bucket, Key="site/chart.svg")["Body"].read() == PAGES["chart.svg"]
    assert set(uploaded) == {o["Key"] for o in client.list_objects_v2(Bucket=bucket)["Contents"]}
