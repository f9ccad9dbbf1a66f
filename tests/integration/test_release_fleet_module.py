# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""distributor_release with `fleet` through the real ansible-playbook, three local destinations
(issue 40 items 2-4): a fleet activation reviewed with --check --diff and approved by the fleet's
digest, a changed plan refused before any switch, and a fleet rollback to the release every
destination held before."""

from __future__ import annotations

import os

WEB = ("web1", "web2", "web3")
PIPELINE = {"id": "site", "outputs": [{"match": "*.html"}]}
WRONG = "sha256:" + "0" * 64


def member(tmp_path, where: str, **releases) -> dict:
    return {"id": where, "storage": {"type": "local", "root": str(tmp_path / where)}, "path": "site",
            "releases": dict({"keep": 3}, **releases)}


def fleet_release(tmp_path, which: str, **options) -> dict:
    return {"distributor.core.distributor_release": dict(
        {"pipeline_id": "site", "release": which, "fleet": [member(tmp_path, where) for where in WEB]}, **options)}


def staged(tmp_path, playbook, bundle: str, shared: str) -> None:
    """`bundle` staged on every destination (activate: false) under the fleet's one id (releases.id)."""
    results = playbook.run([{"distributor.core.distributor_publish": {
        "source": bundle, "pipeline": PIPELINE, "destination": member(tmp_path, where, activate=False, id=shared)}}
        for where in WEB])
    for result in results:
        assert result["release"]["status"] == "staged" and result["release"]["id"] == shared, result


def live(tmp_path) -> dict:
    return {where: os.readlink(str(tmp_path / where / "site")).rpartition("/")[2] for where in WEB}


def test_a_fleet_is_activated_as_reviewed_and_rolled_back_together(tmp_path, playbook, make_bundle):
    first, second = "20260605T120000Z-00000000000a", "20260606T120000Z-00000000000b"
    staged(tmp_path, playbook, make_bundle({"index.html": b"one"}, id="site.example", created="2026-06-04T11:55:00Z"), first)
    [activated] = playbook.run([fleet_release(tmp_path, first)])
    assert activated["changed"] and activated["window_seconds"] > 0 and live(tmp_path) == dict.fromkeys(WEB, first)
    staged(tmp_path, playbook, make_bundle({"index.html": b"two"}, id="site.example", created="2026-06-05T11:55:00Z"), second)

    [checked] = playbook.run([fleet_release(tmp_path, second)], check=True, diff=True)
    assert checked["changed"] and checked["window_seconds"] is None and live(tmp_path) == dict.fromkeys(WEB, first)
    assert [(d["id"], d["from"], d["release"]) for d in checked["destinations"]] == [(w, first, second) for w in WEB]
    assert [entry["after"] for entry in checked["diff"]] == ["release: %s\n" % second] * 3
    [refused] = playbook.run([fleet_release(tmp_path, second, expect_plan_digest=WRONG)])
    assert refused["failed"] and refused["reason"] == "plan_changed" and live(tmp_path) == dict.fromkeys(WEB, first)

    [switched] = playbook.run([fleet_release(tmp_path, second, expect_plan_digest=checked["plan_digest"])])
    assert switched["changed"] and switched["plan_digest"] == checked["plan_digest"] and not switched["rollback"]
    assert live(tmp_path) == dict.fromkeys(WEB, second)
    assert all((tmp_path / where / "site" / "index.html").read_bytes() == b"two" for where in WEB)

    [review] = playbook.run([fleet_release(tmp_path, "previous")], check=True)
    assert review["release"] == first and review["rollback"]
    [rolled] = playbook.run([fleet_release(tmp_path, "previous", expect_plan_digest=review["plan_digest"])])
    assert rolled["changed"] and rolled["release"] == first and live(tmp_path) == dict.fromkeys(WEB, first)
    assert [d["previous"] for d in rolled["destinations"]] == [None] * 3


def test_a_fleet_and_a_destination_together_are_refused(tmp_path, playbook):
    task = fleet_release(tmp_path, "previous")
    task["distributor.core.distributor_release"]["destination"] = member(tmp_path, "web1")
    [refused] = playbook.run([task])
    assert refused["failed"] and refused["reason"] == "invalid_config" and "exactly one of them" in refused["msg"]
