# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Input a user can write gets a clear failure naming what is at fault, and nothing is written."""

from __future__ import annotations

import hashlib
import json
import os

import pytest

from conftest import tree


def sha(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def hand_made_bundle(directory, entries, digest=None):
    """A bundle whose manifest lists `entries` as given: the path rules are the module's to check."""
    directory.mkdir(parents=True, exist_ok=True)
    files = [{"path": p, "sha256": sha(d), "size": len(d)} for p, d in entries]
    text = "".join("%s\0%s\0%d\n" % (f["path"], f["sha256"], f["size"]) for f in sorted(files, key=lambda f: f["path"].encode()))
    manifest = {"schema_version": 1, "id": "bad", "created": "2026-06-04T11:55:00Z",
                "digest": digest or "sha256:" + hashlib.sha256(text.encode()).hexdigest(), "files": files}
    (directory / "manifest.json").write_text(json.dumps(manifest))
    return str(directory)


@pytest.fixture
def publish_to(playbook, tmp_path):
    root = tmp_path / "www"

    def run(source, pipeline=None):
        result = playbook.publish(source=source, pipeline=pipeline or {"id": "reports"},
                                  destination={"id": "archive", "storage": {"type": "local", "root": str(root)}})
        assert result.get("failed"), result
        assert not root.exists() or tree(root) == {}, "a failed publish wrote %s" % sorted(tree(root))
        return result

    return run


@pytest.mark.parametrize("path,problem", [
    ("../escape.md", "'..' segment"),
    ("/etc/passwd", "absolute"),
    ("a//b.md", "empty"),
    ("dir\\file.md", "backslash"),
    ("bad\x01name.md", "control character"),
])
def test_unclean_manifest_paths_are_refused(publish_to, tmp_path, path, problem):
    result = publish_to(hand_made_bundle(tmp_path / "b", [(path, b"x")]))
    assert result["reason"] == "invalid_manifest"
    assert problem in result["msg"] and "files[0].path" in result["msg"]


@pytest.mark.parametrize("path", [".distributor.json", "sub/.distributor-notes.md"])
def test_reserved_names_may_not_be_produced(publish_to, tmp_path, path):
    result = publish_to(hand_made_bundle(tmp_path / "b", [(path, b"x")]))
    assert result["reason"] == "invalid_manifest" and ".distributor" in result["msg"]


def test_digest_mismatch_is_refused(publish_to, tmp_path):
    bundle = hand_made_bundle(tmp_path / "b", [("a.md", b"x")], digest="sha256:" + "0" * 64)
    result = publish_to(bundle)
    assert result["reason"] == "invalid_manifest" and "digest" in result["msg"]


def test_tampered_file_fails_verification_and_leaves_nothing(publish_to, make_bundle):
    bundle = make_bundle({"a.png": b"original", "b.png": b"fine"})
    with open(os.path.join(bundle, "a.png"), "wb") as handle:
        handle.write(b"tampered")
    result = publish_to(bundle)
    assert result["reason"] == "verification_failed"
    assert "a.png" in result["msg"] and "sha256" in result["msg"]


def test_missing_manifest_is_refused(publish_to, tmp_path):
    (tmp_path / "empty").mkdir()
    result = publish_to(str(tmp_path / "empty"))
    assert result["reason"] == "invalid_manifest" and "manifest.json" in result["msg"]


def test_broken_manifest_json_is_refused(publish_to, tmp_path):
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "manifest.json").write_text('{"schema_version": 1,')
    result = publish_to(str(tmp_path / "broken"))
    assert result["reason"] == "invalid_manifest" and "manifest.json" in result["msg"]


def test_unknown_transform_is_refused(publish_to, make_bundle):
    result = publish_to(make_bundle({"a.md": b"# A\n"}), {"id": "reports", "outputs": [{"match": "*.md", "transform": "pdf"}]})
    assert result["reason"] == "invalid_config"
    assert "transform" in result["msg"] and "pdf" in result["msg"]


def test_bundle_path_escaping_the_root_is_refused(playbook, make_bundle, tmp_path):
    result = playbook.publish(source=make_bundle({"a.md": b"x"}), pipeline={"id": "reports"},
                              destination={"id": "archive", "storage": {"type": "local", "root": str(tmp_path / "www")},
                                           "path": "../{source_id}"})
    assert result["failed"] and result["reason"] == "invalid_config" and "bundle path" in result["msg"]
    assert not (tmp_path / "www").exists()
