# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Storage settings (modes, ownership, S3 object settings) and pipeline excludes: validation,
what an output is written with, and why a change of settings alone is a change."""

from __future__ import annotations

import os

import pytest

from ansible_collections.distributor.core.plugins.module_utils._distributor.records.attributes import (
    attributes_for, content_type, output_attributes, s3_object_args)
from ansible_collections.distributor.core.plugins.module_utils._distributor.records.config import parse_destination, parse_pipeline
from ansible_collections.distributor.core.plugins.module_utils._distributor.errors import DistributorError
from ansible_collections.distributor.core.plugins.module_utils._distributor.operations.publish import publish
from ansible_collections.distributor.core.plugins.module_utils._distributor.records.state_parse import parse_state

from builders import write_bundle

S3 = {"type": "s3", "bucket": "site"}


def refused(storage, *words):
    with pytest.raises(DistributorError) as caught:
        parse_destination({"id": "d", "storage": storage})
    assert caught.value.reason == "invalid_config"
    for word in words:
        assert word in caught.value.message


@pytest.mark.parametrize("mode", ["rw-r-----", "0800", "12345", "0o640"])
def test_file_mode_must_be_an_octal_string(mode):
    refused({"type": "local", "root": "/srv/www", "file_mode": mode}, "file_mode")


def test_an_unquoted_yaml_mode_is_refused_not_misread():
    refused({"type": "local", "root": "/srv/www", "directory_mode": 488}, "directory_mode")


def test_sftp_ownership_is_numeric():
    refused({"type": "sftp", "host": "h", "root": "/srv", "owner": "www-data"}, "owner", "numeric")


def test_kms_key_needs_kms_encryption():
    refused(dict(S3, sse_kms_key_id="alias/k", server_side_encryption="AES256"), "sse_kms_key_id", "aws:kms")


def test_s3_settings_are_refused_on_local_storage():
    refused({"type": "local", "root": "/srv/www", "acl": "private"}, "acl")


def test_unknown_canned_acl_is_refused():
    refused(dict(S3, acl="world-writable"), "acl")


def test_defaults_record_no_attributes_so_older_records_still_match():
    assert output_attributes({"type": "local", "root": "/srv"}, "a.html") == ()
    assert output_attributes(S3, "a.html") == ()


def test_cache_control_rules_first_match_wins():
    storage = dict(S3, cache_control=[{"match": "**/*.html", "value": "no-cache"}, {"match": "**", "value": "max-age=3600"}])
    assert s3_object_args(storage, "docs/a.html")["CacheControl"] == "no-cache"
    assert s3_object_args(storage, "img/a.png")["CacheControl"] == "max-age=3600"
    assert "CacheControl" not in s3_object_args(dict(S3, cache_control=[{"match": "*.css", "value": "x"}]), "a.html")


def test_content_types_extend_mimetypes_and_text_says_utf8():
    assert content_type("index.html") == "text/html; charset=utf-8"
    assert content_type("data.json") == "application/json"
    assert content_type("blob") == "application/octet-stream"
    assert content_type("feed.atom", {".atom": "application/atom+xml"}) == "application/atom+xml"
    assert content_type("a.MD", {"md": "text/plain"}) == "text/plain"


def test_every_s3_setting_becomes_an_object_argument():
    storage = dict(S3, acl="public-read", cache_control="max-age=60", storage_class="STANDARD_IA",
                   server_side_encryption="aws:kms", sse_kms_key_id="alias/site", metadata={"team": "docs"})
    assert s3_object_args(storage, "a.txt") == {
        "ContentType": "text/plain; charset=utf-8", "ACL": "public-read", "CacheControl": "max-age=60",
        "StorageClass": "STANDARD_IA", "ServerSideEncryption": "aws:kms", "SSEKMSKeyId": "alias/site",
        "Metadata": {"team": "docs"}}


def test_excluded_files_produce_no_output(tmp_path):
    from ansible_collections.distributor.core.plugins.module_utils._distributor.records.bundle import Bundle
    from ansible_collections.distributor.core.plugins.module_utils._distributor.planning.plan import plan_outputs

    source = write_bundle(tmp_path / "b", {"index.md": b"# i", "drafts/x.md": b"# x", "a.png": b"p"})
    planned = plan_outputs(Bundle.load(source).manifest, parse_pipeline({"id": "p", "exclude": ["drafts/**", "*.png"]}))
    assert [p.path for p in planned] == ["index.md"]


def local_destination(root, **settings):
    return {"id": "d", "storage": dict({"type": "local", "root": str(root)}, **settings)}


def test_a_change_of_mode_alone_resettles_the_output_in_place_and_is_shown(tmp_path):
    source = write_bundle(tmp_path / "b", {"index.html": b"<p>", "a/b.txt": b"b"})
    root = tmp_path / "www"
    first = publish(source, {"id": "p"}, local_destination(root, file_mode="0640", directory_mode="0750"))
    assert first["changed"]
    assert os.stat(root / "index.html").st_mode & 0o777 == 0o640
    assert os.stat(root / "a").st_mode & 0o777 == 0o750
    assert not publish(source, {"id": "p"}, local_destination(root, file_mode="0640", directory_mode="0750"))["changed"]
    inode = os.stat(root / "index.html").st_ino

    check = publish(source, {"id": "p"}, local_destination(root, file_mode="0600"), check_mode=True)
    assert check["changed"] and check["written"] == [] and check["resettled"] == ["a/b.txt", "index.html"]
    assert {c["path"]: c["change"] for c in check["changes"]} == {"a/b.txt": "settings", "index.html": "settings"}
    assert "file_mode=0640" in check["diff"][0]["before"] and "file_mode=0600" in check["diff"][0]["after"]
    assert os.stat(root / "index.html").st_mode & 0o777 == 0o640

    again = publish(source, {"id": "p"}, local_destination(root, file_mode="0600"), expect_plan_digest=check["plan_digest"])
    assert again["changed"] and "storage settings" in again["reason"] and again["resettled"] == check["resettled"]
    assert os.stat(root / "index.html").st_mode & 0o777 == 0o600
    assert os.stat(root / "index.html").st_ino == inode
    recorded = parse_state((root / ".distributor.json").read_bytes(), "state").by_path()
    assert dict(recorded["index.html"].attributes) == {"file_mode": "0600"}


def test_a_mode_no_longer_configured_rewrites_the_output_with_the_default(tmp_path):
    """A file keeps the mode it has: only a new file gets the default, so it is written again."""
    source = write_bundle(tmp_path / "b", {"index.html": b"<p>"})
    root = tmp_path / "www"
    publish(source, {"id": "p"}, local_destination(root, file_mode="0600"))
    again = publish(source, {"id": "p"}, local_destination(root))
    assert again["written"] == ["index.html"] and again["resettled"] == []
    assert os.stat(root / "index.html").st_mode & 0o777 == 0o644


def test_a_resettle_writes_again_an_output_that_is_not_the_file_distributor_wrote(tmp_path):
    """Settings land only on the recorded bytes: an output whose bytes changed is written
    again. A hard link to a file elsewhere is not even that: the run refuses to touch it
    (authorship.py), and the file elsewhere keeps its mode."""
    source = write_bundle(tmp_path / "b", {"index.html": b"<p>", "a.txt": b"a"})
    root = tmp_path / "www"
    publish(source, {"id": "p"}, local_destination(root, file_mode="0640"))
    (root / "index.html").write_bytes(b"<P>")

    again = publish(source, {"id": "p"}, local_destination(root, file_mode="0644"))
    assert again["resettled"] == ["a.txt", "index.html"]
    assert (root / "index.html").read_bytes() == b"<p>"
    assert os.stat(root / "a.txt").st_mode & 0o777 == 0o644 and os.stat(root / "index.html").st_mode & 0o777 == 0o644

    elsewhere = tmp_path / "elsewhere.txt"
    elsewhere.write_bytes(b"a")
    os.chmod(elsewhere, 0o600)
    os.unlink(root / "a.txt")
    os.link(elsewhere, root / "a.txt")
    with pytest.raises(DistributorError) as caught:
        publish(source, {"id": "p"}, local_destination(root, file_mode="0640"))
    assert caught.value.reason == "unmanaged" and "a.txt (has 2 links" in caught.value.message
    assert os.stat(elsewhere).st_mode & 0o777 == 0o600 and os.stat(elsewhere).st_nlink == 2


def test_default_mode_is_unchanged(tmp_path):
    source = write_bundle(tmp_path / "b", {"index.html": b"<p>"})
    publish(source, {"id": "p"}, local_destination(tmp_path / "www"))
    assert os.stat(tmp_path / "www" / "index.html").st_mode & 0o777 == 0o644


def test_ownership_by_name_or_id(tmp_path):
    import grp
    import pwd

    me = pwd.getpwuid(os.getuid()).pw_name
    group = grp.getgrgid(os.getgid()).gr_name
    source = write_bundle(tmp_path / "b", {"index.html": b"<p>"})
    publish(source, {"id": "p"}, local_destination(tmp_path / "www", owner=me, group=str(os.getgid())))
    info = os.stat(tmp_path / "www" / "index.html")
    assert (info.st_uid, grp.getgrgid(info.st_gid).gr_name) == (os.getuid(), group)
    with pytest.raises(DistributorError) as caught:
        publish(source, {"id": "p"}, local_destination(tmp_path / "www2", owner="no-such-user-here"))
    assert caught.value.reason == "invalid_config" and "owner" in caught.value.message


def test_amazon_aws_spellings_are_aliases():
    aliased = dict(S3, aws_region="eu-west-3", aws_access_key="AK", aws_secret_key="SK", aws_profile="p",
                   aws_endpoint_url="http://127.0.0.1:9")
    storage = parse_destination({"id": "d", "storage": aliased}).storage
    assert (storage["region"], storage["access_key"], storage["secret_key"], storage["profile"], storage["endpoint_url"]) == (
        "eu-west-3", "AK", "SK", "p", "http://127.0.0.1:9")
    assert "aws_region" not in storage


def test_aws_region_is_honoured_like_aws_default_region(monkeypatch):
    import boto3

    from ansible_collections.distributor.core.plugins.module_utils._distributor.storage.s3.client import session_for

    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-2")
    monkeypatch.setenv("AWS_REGION", "eu-west-3")
    assert session_for(boto3, dict(S3)).region_name == "eu-west-3"
    assert session_for(boto3, dict(S3, region="ap-south-1")).region_name == "ap-south-1"


@pytest.mark.parametrize("storage", [
    {"type": "local", "root": "/srv", "file_mode": "640", "owner": "www"},
    {"type": "sftp", "host": "h", "root": "/srv", "group": "1001"},
    {"type": "local", "root": "/srv"},
    dict(S3, cache_control=[{"match": "**/*.html", "value": "no-cache"}], content_types={".md": "text/markdown"}, acl="private"),
])
def test_attributes_for_a_storage_are_those_of_each_path(storage):
    """A plan and a skip compare records with attributes_for, worked out once per storage: they
    must be what output_attributes gives each path, or a settings change would go unseen."""
    configured = attributes_for(storage)
    for path in ("a.html", "d/b.md", "c", "e/f.css"):
        assert configured(path) == output_attributes(storage, path)
