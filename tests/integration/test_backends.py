# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The core's playbook-level scenarios on every backend: local, SFTP (real sshd), S3 (moto).

Each test is one ansible-playbook run of several tasks, each task a publish into its own bundle
path of the same root, and then reads the root back through an independent path (the filesystem
for local and SFTP, boto3 for S3). Check mode runs as a task with `check_mode: true`.
"""

from __future__ import annotations

import hashlib
import json
import os

REPORT = {"report.md": b"# Quarterly report\n\nSee [the chart](chart.png).\n", "chart.png": b"\x89PNG v1"}
PIPELINE = {
    "id": "reports",
    "outputs": [{"match": "**/*.md", "transform": "markdown_to_html"}, {"match": "**/*.png", "transform": "copy"}],
}
DAY = "2026-06-04"
RESERVED_LEFTOVERS = (".distributor.lock", ".distributor.journal.json", ".distributor.tmp.")


def destination(backend, area: str, **extra) -> dict:
    """Destination `archive` whose bundle path is `<area>/2026-06-04` under the backend's root."""
    return dict({
        "id": "archive",
        "storage": backend.storage,
        "path": area + "/{created:%Y-%m-%d}",
        "links": {"base_url": "https://reports.example.com/" + area + "/{created:%Y-%m-%d}/", "primary": ["*.html"]},
    }, **extra)


def publish(source: str, dest: dict, task: dict | None = None, **options) -> dict:
    """A distributor_publish task; `task` holds task keywords such as check_mode and diff."""
    return dict({"distributor.core.distributor_publish": dict(source=source, pipeline=PIPELINE, destination=dest, **options)},
                **(task or {}))


def sha(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def manifest_of(bundle: str) -> dict:
    with open(os.path.join(bundle, "manifest.json")) as handle:
        return json.load(handle)


def leftovers(files: dict) -> list:
    return [path for path in files if any(part.startswith(RESERVED_LEFTOVERS) for part in path.split("/"))]


def assert_schema_2_state(backend, bundle: str, result: dict, under: str) -> None:
    """The state record as read back from storage: schema 2, and true to what storage holds."""
    files = backend.files(under)
    state = json.loads(files[".distributor.json"])
    assert state == result["state"], "the state on storage is not the one the module reported"
    assert state["schema_version"] == 2 and state["state"] == {"mode": "single_owner"}
    assert (state["pipeline_id"], state["destination_id"]) == ("reports", "archive")
    assert state["reconciliation"] == {"mode": "replace"}
    assert state["source"]["manifest"] == manifest_of(bundle)
    assert state["links"]["primary_url"] == "https://reports.example.com/%s/report.html" % under
    assert state["created_at"] == state["updated_at"] == state["published_at"]
    records = {o["path"]: o for o in state["outputs"]}
    assert sorted(records) == ["chart.png", "report.html"] == sorted(p for p in files if not p.startswith(".distributor"))
    for path, record in records.items():
        assert (record["sha256"], record["size"]) == (sha(files[path]), len(files[path])), path
        assert record["created_at"] == record["updated_at"] == state["updated_at"]
        assert record["url"] == "https://reports.example.com/%s/%s" % (under, path)
    assert (records["report.html"]["kind"], records["report.html"]["transform"]) == ("generated", "markdown_to_html")
    assert records["report.html"]["source_path"] == "report.md"
    assert records["chart.png"]["kind"] == "source" and files["chart.png"] == REPORT["chart.png"]
    if backend.name == "s3":
        client, bucket = backend.s3
        prefix = "%s/%s/" % (backend.storage["prefix"], under)
        kinds = {path: client.head_object(Bucket=bucket, Key=prefix + path)["ContentType"] for path in records}
        assert kinds == {"report.html": "text/html; charset=utf-8", "chart.png": "image/png"}


def test_publish_skip_replace_older_merge_and_check_mode(playbook, make_bundle, backend):
    v1 = make_bundle(REPORT)
    v2 = make_bundle({"report.md": b"# Second edition\n"}, created="2026-06-04T18:00:00Z")
    older = make_bundle({"report.md": b"# Stale edition\n", "old.png": b"old"}, created="2026-06-04T06:00:00Z")
    v3 = make_bundle({"extra.md": b"# Extra\n", "img/extra.png": b"\x89PNG extra"}, created="2026-06-04T20:00:00Z")
    v4 = make_bundle({"next.md": b"# Next\n"}, created="2026-06-04T22:00:00Z")
    seq = destination(backend, "seq")
    results = playbook.run([
        publish(v1, seq),
        publish(v1, seq),
        publish(v2, seq),
        publish(older, seq),
        publish(v3, destination(backend, "seq", reconciliation={"mode": "merge"}), return_records=True),
        publish(v4, seq, task={"check_mode": True, "diff": True}),
        publish(v1, destination(backend, "dry"), task={"check_mode": True}),
    ])
    first, again, newer, stale, merged, checked, dry = results
    for result in results:
        assert not result.get("failed"), result

    assert (first["action"], first["changed"]) == ("publish", True)
    assert sorted(first["written"]) == ["chart.png", "report.html"] and first["bundle_path"] == "seq/" + DAY
    assert first["primary_url"] == "https://reports.example.com/seq/2026-06-04/report.html"
    assert (again["action"], again["changed"], again["written"], again["deleted"]) == ("skip", False, [], [])
    assert not {"state", "outputs"} & (set(again) | set(first)), "the records are returned only when asked for"
    assert checked["state"]["source"]["manifest"]["id"] == manifest_of(v4)["id"], "--diff returns the state record"
    assert (newer["action"], newer["changed"]) == ("replace", True)
    assert newer["written"] == ["report.html"] and newer["deleted"] == ["chart.png"]
    assert (stale["action"], stale["changed"], stale["written"]) == ("skip", False, [])
    assert (merged["action"], merged["changed"]) == ("merge", True)
    assert sorted(merged["written"]) == ["extra.html", "img/extra.png"] and merged["retained"] == ["report.html"]
    assert merged["deleted"] == []

    # The check-mode replace reports its plan and its diff, and leaves the merge's result alone.
    assert (checked["action"], checked["changed"]) == ("replace", True)
    assert checked["written"] == ["next.html"]
    assert sorted(checked["deleted"]) == ["extra.html", "img/extra.png", "report.html"]
    assert "report.html" in checked["diff"][0]["before"] and "report.html" not in checked["diff"][0]["after"]
    assert "next.html" in checked["diff"][0]["after"] and "next.html" not in checked["diff"][0]["before"]
    assert (dry["action"], dry["changed"], dry["written"]) == ("publish", True, ["chart.png", "report.html"])
    assert backend.files("dry") == {}, "check mode wrote to a root it only planned for"

    files = backend.files("seq/" + DAY)
    assert sorted(files) == [".distributor.json", "extra.html", "img/extra.png", "report.html"]
    assert b"Second edition" in files["report.html"] and b"Stale edition" not in files["report.html"]
    assert files["img/extra.png"] == b"\x89PNG extra"
    state = json.loads(files[".distributor.json"])
    assert state == merged["state"], "the state on storage is not the one the merge reported"
    assert state["source"]["manifest"]["digest"] == manifest_of(v3)["digest"]
    assert leftovers(backend.files()) == []


def test_state_record_unmanaged_refusal_and_force_bounded_to_the_bundle_path(playbook, make_bundle, backend):
    backend.put("hand/%s/report.html" % DAY, b"hand made")
    backend.put("forced/%s/report.html" % DAY, b"hand made")
    backend.put("forced/%s/notes/stray.txt" % DAY, b"stray inside the bundle path")
    backend.put("forced/keep.txt", b"outside the bundle path")
    backend.put("forced/2026-06-03/report.html", b"the day before")
    backend.put("forced/%s-extra/report.html" % DAY, b"a sibling sharing the prefix")
    bundle = make_bundle(REPORT)
    fresh, refused, forced = playbook.run([
        publish(bundle, destination(backend, "state"), return_records=True),
        publish(bundle, destination(backend, "hand")),
        publish(bundle, destination(backend, "forced"), force=True),
    ])

    assert (fresh["action"], fresh["changed"]) == ("publish", True), fresh
    assert_schema_2_state(backend, bundle, fresh, "state/" + DAY)

    assert refused["failed"] and refused["reason"] == "unmanaged", refused
    assert "report.html" in refused["msg"] and "force" in refused["msg"]
    assert backend.files("hand") == {DAY + "/report.html": b"hand made"}, "refused publish touched the root"

    assert (forced["action"], forced["changed"]) == ("force_replace", True), forced
    assert forced["deleted"] == ["notes/stray.txt"]
    assert sorted(forced["written"]) == ["chart.png", "report.html"]
    files = backend.files("forced")
    assert sorted(files) == [
        "2026-06-03/report.html", DAY + "-extra/report.html", DAY + "/.distributor.json", DAY + "/chart.png",
        DAY + "/report.html", "keep.txt"]
    assert b"Quarterly report" in files[DAY + "/report.html"]
    assert files["keep.txt"] == b"outside the bundle path"
    assert files["2026-06-03/report.html"] == b"the day before"
    assert files[DAY + "-extra/report.html"] == b"a sibling sharing the prefix"
    assert leftovers(backend.files()) == []
