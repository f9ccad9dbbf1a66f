# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Release mode through the real ansible-playbook, on local storage and over SFTP (a real sshd):
distributor_release reviewed with --check --diff (from -> to, nothing changed), switched, approved
by its plan digest; distributor_state_info listing the releases; the rollback playbook's review
loop (issue 30)."""

from __future__ import annotations

import json
import os
import shlex

import pytest

from conftest import APPROVAL, Backend, tree

PIPELINE = {"id": "site", "outputs": [{"match": "*.md", "transform": "markdown_to_html"}, {"match": "*.png"}]}
V1 = {"index.md": b"# Version one\n", "logo.png": b"\x89PNG logo"}
V2 = {"index.md": b"# Version two\n", "logo.png": b"\x89PNG logo"}
HOME = os.path.join(".distributor-releases", "site")
WRONG = "sha256:" + "0" * 64


@pytest.fixture(params=["local", "sftp"])
def backend(request, tmp_path):
    """A fresh root on each backend that has release mode; sshd serves this machine, so the
    root is looked at through the local filesystem either way."""
    root = tmp_path / "root"
    if request.param == "local":
        return Backend("local", {"type": "local", "root": str(root)}, local_root=root)
    return Backend("sftp", request.getfixturevalue("sshd_server").storage(str(root)), local_root=root)


def destination(backend) -> dict:
    return {"id": "web", "storage": backend.storage, "path": "site", "releases": {"keep": 3}}


def publish(backend, bundle: str) -> dict:
    return {"distributor.core.distributor_publish": {"source": bundle, "pipeline": PIPELINE, "destination": destination(backend)}}


def release(backend, which: str, **options) -> dict:
    return {"distributor.core.distributor_release": dict(
        {"pipeline_id": "site", "release": which, "destination": destination(backend)}, **options)}


def live(backend) -> str:
    """The release the bundle path's link holds, checked to be the relative form release mode writes."""
    target = os.readlink(os.path.join(str(backend.local_root), "site"))
    assert target.startswith(HOME + "/"), target
    return target[len(HOME) + 1:]


def index(backend) -> bytes:
    with open(os.path.join(str(backend.local_root), HOME, ".distributor-releases.json"), "rb") as handle:
        return handle.read()


def page(backend) -> bytes:
    with open(os.path.join(str(backend.local_root), "site", "index.html"), "rb") as handle:
        return handle.read()


def published_twice(backend, playbook, make_bundle) -> tuple:
    """(first, second) release ids after publishing V1, then V2, each in a run of its own."""
    [first] = playbook.run([publish(backend, make_bundle(V1, id="site.example", created="2026-06-04T11:55:00Z"))])
    [second] = playbook.run([publish(backend, make_bundle(V2, id="site.example", created="2026-06-05T11:55:00Z"))])
    assert not first.get("failed") and not second.get("failed"), (first, second)
    assert (first["release"]["status"], second["release"]["status"]) == ("active", "active")
    assert second["release"]["from"] == first["release"]["id"] and live(backend) == second["release"]["id"]
    return first["release"]["id"], second["release"]["id"]


def test_a_rollback_is_reviewed_with_check_and_diff_then_runs_exactly_the_approved_switch(backend, playbook, make_bundle):
    first, second = published_twice(backend, playbook, make_bundle)
    assert b"Version two" in page(backend)
    before = (index(backend), tree(backend.local_root))

    [checked] = playbook.run([release(backend, "previous")], check=True, diff=True)
    assert (checked["changed"], checked["from"], checked["release"], checked["rollback"]) == (True, second, first, True)
    assert checked["diff"]["before"] == "release: %s\n" % second and checked["diff"]["after"] == "release: %s\n" % first
    assert checked["changes"] == [{"release": first, "change": "rollback"}] and checked["owners"] == ["site/web"]
    assert (index(backend), tree(backend.local_root)) == before and live(backend) == second

    [refused] = playbook.run([release(backend, "previous", expect_plan_digest=WRONG)])
    assert refused["failed"] and refused["reason"] == "plan_changed", refused
    assert (index(backend), tree(backend.local_root)) == before

    record = str(backend.local_root.parent / "records" / "site.web.release.jsonl")
    [switched] = playbook.run([release(backend, "previous", expect_plan_digest=checked["plan_digest"], record_file=record)],
                              diff=True)
    assert (switched["changed"], switched["release"], switched["from"]) == (True, first, second)
    assert switched["plan_digest"] == checked["plan_digest"] and switched["diff"] == checked["diff"]
    assert live(backend) == first and b"Version one" in page(backend)
    with open(record) as handle:
        [plan] = [line["plan"] for line in map(json.loads, handle) if "plan" in line]
    assert (plan["from"], plan["to"], plan["rollback"]) == (second, first, True)

    # Switching to the release already live changes nothing; the approval, once spent, switches nothing more.
    again, spent = playbook.run([release(backend, first), release(backend, second, expect_plan_digest=checked["plan_digest"])])
    assert (again["changed"], again["release"], again["changes"]) == (False, first, [])
    assert spent["failed"] and spent["reason"] == "plan_changed", spent
    assert live(backend) == first


def test_state_info_lists_the_releases_and_says_where_a_rollback_returns(backend, playbook, make_bundle):
    first, second = published_twice(backend, playbook, make_bundle)
    info = {"distributor.core.distributor_state_info": {"pipeline_id": "site", "destination": destination(backend)}}
    shown, _back, after = playbook.run([info, release(backend, "previous"), info])
    assert (shown["release"], shown["previous"]) == (second, first)
    assert [(r["id"], r["status"]) for r in shown["releases"]] == [(first, "superseded"), (second, "active")]
    assert shown["releases"][1]["from"] == first and shown["releases"][1]["built"] is not None
    assert shown["owners"][0]["source"]["created"] == "2026-06-05T11:55:00Z"
    assert (after["release"], after["previous"]) == (first, None)
    assert [(r["id"], r["status"]) for r in after["releases"]] == [(first, "active"), (second, "rolled_back")]
    assert after["owners"][0]["source"]["created"] == "2026-06-04T11:55:00Z"


def test_the_rollback_playbook_prints_each_switch_and_the_extra_vars_that_approve_exactly_it(
        backend, role, make_bundle, tmp_path):
    site = {"distributor_destinations": {"web": {"storage": backend.storage, "path": "site", "releases": {"keep": 3}},
                                         "plain": {"storage": {"type": "local", "root": str(tmp_path / "plain")}}},
            "distributor_pipelines": {"site": dict(PIPELINE, destinations=["web", "plain"])}}
    ids = []
    for files, created in ((V1, "2026-06-04T11:55:00Z"), (V2, "2026-06-05T11:55:00Z")):
        source = make_bundle(files, id="site.example", created=created)
        _output, published = role(dict(site, distributor_publications=[{"pipeline": "site", "source": source}]))
        ids.append(next(r["release"]["id"] for r in published if r["item"]["destination"] == "web"))
    first, second = ids
    site["distributor_rollback_pipeline"] = "site"

    output, checked = role(site, operation="rollback", check=True, diff=True)
    [result] = checked  # the plain destination has no releases: it is not rolled back
    line = "site -> web: rollback %s -> %s (owners affected: site/web); plan %s" % (second, first, result["plan_digest"])
    assert line in output and "-release: %s" % second in output and "+release: %s" % first in output
    assert live(backend) == second
    approval = tuple(shlex.split(APPROVAL.search(output).group(1)))

    _output, switched = role(site, operation="rollback", extra=approval)
    assert [(r["from"], r["release"], r["plan_digest"]) for r in switched] == [(second, first, result["plan_digest"])]
    assert live(backend) == first and b"Version one" in page(backend)

    # The same command again switches nothing more: the release rolled back from is never
    # returned to, and nothing older is left to return to.
    output, _refused = role(site, operation="rollback", extra=approval, expect_rc=2)
    assert "1 of 1 switches failed: site -> web failed (no_release)" in output
    assert live(backend) == first


def test_the_rollback_playbook_refuses_a_destination_without_releases_before_switching_anything(role, tmp_path):
    site = {"distributor_destinations": {"plain": {"storage": {"type": "local", "root": str(tmp_path / "plain")}}},
            "distributor_pipelines": {"site": dict(PIPELINE, destinations=["plain"])},
            "distributor_rollback_pipeline": "site", "distributor_rollback_destination": "plain"}
    output, results = role(site, operation="rollback", expect_rc=2)
    assert "destination 'plain' has no releases setting" in output and results is None
    output, _results = role(dict(site, distributor_rollback_pipeline=""), operation="rollback", expect_rc=2)
    assert "rollback needs distributor_rollback_pipeline" in output


def test_check_mode_lists_the_releases_the_run_removes_and_its_diff_names_them_previews_by_name(backend, playbook, make_bundle):
    """Issue 40 item 8: `--check --diff` predicted `removed: []` where the run then removed three."""
    ids = ["2026060%dT120000Z-0123456789ab" % day for day in range(1, 5)]
    preview = "https://preview.example.com/{release}/"

    def publish_v(day: int, check: bool = False, diff: bool = False, **releases) -> dict:
        files = {"index.md": b"# Version %d\n" % day, "logo.png": b"\x89PNG logo"}
        dest = dict(destination(backend), releases=dict({"keep": 2, "id": ids[day - 1], "preview_url": preview}, **releases))
        task = {"distributor.core.distributor_publish": {
            "source": make_bundle(files, id="site.example", created="2026-06-0%dT11:55:00Z" % day), "pipeline": PIPELINE,
            "destination": dest}}
        [done] = playbook.run([task], check=check, diff=diff)
        assert not done.get("failed"), done
        return done
    publish_v(1)
    publish_v(2)
    staged = publish_v(3, activate=False)
    assert staged["release"]["status"] == "staged" and staged["release"]["removes_at_switch"] == [ids[0]]
    before = (index(backend), tree(backend.local_root))
    checked = publish_v(4, check=True, diff=True)
    assert (index(backend), tree(backend.local_root)) == before
    done = publish_v(4)
    assert checked["release"]["removed"] == done["release"]["removed"] == [ids[0], ids[2]]
    assert checked["release"]["id"] == done["release"]["id"] == ids[3] == live(backend)
    after = checked["diff"][1]["after"]
    assert "built: %s from %s" % (ids[3], ids[1]) in after and "switch: %s -> %s" % (ids[1], ids[3]) in after
    assert "removed: %s (superseded)" % ids[0] in after
    assert "removed: %s (staged: a preview at https://preview.example.com/%s/)" % (ids[2], ids[2]) in after
