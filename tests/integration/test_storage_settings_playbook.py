# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Settings people bring from ansible.posix.synchronize and community.aws.s3_sync, through real
ansible-playbook runs: modes and ownership on local and SFTP outputs (read back from the
filesystem sshd serves), every S3 object setting read back with boto3 from the moto server, the
amazon.aws option spellings, pipeline excludes and a module_defaults group."""

from __future__ import annotations

import os

import pytest
import yaml

BUNDLE = {"index.html": b"<h1>Hi</h1>", "css/site.css": b"body{}", "feed.atom": b"<feed/>", "drafts/wip.html": b"x"}
PIPELINE = {"id": "site", "exclude": ["drafts/**"]}


def publish(source, storage, **task):
    return dict({"distributor.core.distributor_publish": {
        "source": source, "pipeline": PIPELINE, "destination": {"id": "web", "storage": storage}}}, **task)


def mode(path) -> int:
    return os.stat(path).st_mode & 0o7777


@pytest.mark.parametrize("kind", ["local", "sftp"])
def test_modes_and_ownership_apply_to_outputs_and_created_directories(kind, playbook, make_bundle, tmp_path, request):
    root = tmp_path / "www"
    if kind == "local":
        storage = {"type": "local", "root": str(root)}
    else:
        storage = request.getfixturevalue("sshd_server").storage(str(root))
    settings = dict(storage, file_mode="0640", directory_mode="0750", owner="1", group="1")
    source = make_bundle(BUNDLE)
    first, second = playbook.run([publish(source, settings), publish(source, settings)])
    assert first["changed"] and not second["changed"], second
    assert sorted(first["written"]) == ["css/site.css", "feed.atom", "index.html"]
    assert not (root / "drafts").exists(), "an excluded file produced an output"
    for path in ("index.html", "css/site.css"):
        info = os.stat(root / path)
        assert (mode(root / path), info.st_uid, info.st_gid) == (0o640, 1, 1)
    assert (mode(root / "css"), os.stat(root / "css").st_uid) == (0o750, 1)

    changed = dict(settings, file_mode="0644")
    check, real = playbook.run([publish(source, changed, check_mode=True, diff=True), publish(source, changed)])
    assert check["changed"] and "file_mode=0640" in check["diff"][0]["before"] and "file_mode=0644" in check["diff"][0]["after"]
    assert real["changed"] and sorted(real["resettled"]) == ["css/site.css", "feed.atom", "index.html"]
    assert mode(root / "index.html") == 0o644


def test_every_s3_setting_is_read_back_from_the_server(playbook, make_bundle, s3_server):
    bucket = s3_server.create_bucket()
    storage = s3_server.storage(bucket)
    amazon_spelling = {
        "type": "s3", "bucket": bucket, "aws_access_key": storage["access_key"], "aws_secret_key": storage["secret_key"],
        "aws_endpoint_url": storage["endpoint_url"], "aws_region": storage["region"],
        "acl": "public-read",
        "cache_control": [{"match": "**/*.css", "value": "max-age=31536000, immutable"}, {"match": "**", "value": "no-cache"}],
        "storage_class": "STANDARD_IA",
        "server_side_encryption": "AES256",
        "metadata": {"team": "docs"},
        "content_types": {".atom": "application/atom+xml"},
        "validate_certs": False,
    }
    source = make_bundle(BUNDLE)
    first, second = playbook.run([publish(source, amazon_spelling), publish(source, amazon_spelling)])
    assert first["changed"] and not second["changed"], second
    client = s3_server.client()
    head = client.head_object(Bucket=bucket, Key="css/site.css")
    assert head["CacheControl"] == "max-age=31536000, immutable"
    assert head["ContentType"] == "text/css; charset=utf-8"
    assert head["StorageClass"] == "STANDARD_IA"
    assert head["ServerSideEncryption"] == "AES256"
    assert head["Metadata"] == {"team": "docs"}
    assert client.head_object(Bucket=bucket, Key="index.html")["CacheControl"] == "no-cache"
    assert client.head_object(Bucket=bucket, Key="feed.atom")["ContentType"] == "application/atom+xml"
    grants = client.get_object_acl(Bucket=bucket, Key="index.html")["Grants"]
    assert any(g["Grantee"].get("URI", "").endswith("/global/AllUsers") and g["Permission"] == "READ" for g in grants)
    assert "drafts/wip.html" not in {o["Key"] for o in client.list_objects_v2(Bucket=bucket).get("Contents", [])}

    kms = dict(amazon_spelling, server_side_encryption="aws:kms", sse_kms_key_id="alias/site")
    (again,) = playbook.run([publish(source, kms)])
    assert again["changed"] and "storage settings" in again["reason"]
    head = client.head_object(Bucket=bucket, Key="index.html")
    assert (head["ServerSideEncryption"], head["SSEKMSKeyId"].endswith("alias/site")) == ("aws:kms", True)


def test_aws_region_from_the_environment(playbook, make_bundle, s3_server, monkeypatch):
    bucket = s3_server.create_bucket()
    storage = dict(s3_server.storage(bucket))
    del storage["region"]
    monkeypatch.delenv("AWS_DEFAULT_REGION", raising=False)
    monkeypatch.setenv("AWS_REGION", "eu-west-3")
    (result,) = playbook.run([publish(make_bundle(BUNDLE), storage)])
    assert result["changed"], result


def test_module_defaults_group_sets_the_destination_for_every_module(playbook, make_bundle, tmp_path):
    root = tmp_path / "www"
    destination = {"id": "web", "storage": {"type": "local", "root": str(root)}}
    play = [{
        "hosts": "localhost",
        "gather_facts": False,
        "module_defaults": {"group/distributor.core.distributor": {"destination": destination}},
        "tasks": [
            {"distributor.core.distributor_publish": {"source": make_bundle(BUNDLE), "pipeline": PIPELINE}},
            {"distributor.core.distributor_reconcile_state": {"pipeline_id": "site"}},
        ],
    }]
    path = tmp_path / "defaults.yml"
    path.write_text(yaml.safe_dump(play))
    completed = playbook.invoke(str(path))
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert "ok=2" in completed.stdout and "changed=1" in completed.stdout
    assert (root / "index.html").exists()


def test_the_state_record_is_never_served_with_the_outputs_acl(playbook, make_bundle, s3_server):
    bucket = s3_server.create_bucket()
    storage = dict(s3_server.storage(bucket), acl="public-read", storage_class="STANDARD_IA", cache_control="max-age=60",
                   metadata={"team": "docs"})
    (published,) = playbook.run([publish(make_bundle(BUNDLE), storage)])
    assert published["changed"], published
    client = s3_server.client()

    def public(key):
        grants = client.get_object_acl(Bucket=bucket, Key=key)["Grants"]
        return any(g["Grantee"].get("URI", "").endswith(("/global/AllUsers", "/global/AuthenticatedUsers")) for g in grants)

    assert public("index.html") and not public(".distributor.json")
    head = client.head_object(Bucket=bucket, Key=".distributor.json")
    assert (head["ContentType"], head.get("StorageClass", "STANDARD"), head.get("CacheControl"), head["Metadata"]) == (
        "application/json", "STANDARD", None, {})


def test_s3_header_settings_s3_would_refuse_fail_check_mode_without_a_plan_digest(playbook, make_bundle, s3_server):
    storage = dict(s3_server.storage(s3_server.create_bucket()), metadata={"team": "docs\r\nX-Injected: 1"})
    (checked,) = playbook.run([publish(make_bundle(BUNDLE), storage)], check=True)
    assert checked["failed"] and checked["reason"] == "invalid_config" and "plan_digest" not in checked
    assert 'storage.metadata["team"] "docs\\r\\nX-Injected: 1"' in checked["msg"]
