# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Review through ansible-playbook: the digest a check returns lets exactly that run proceed, and
a run whose plan changed since is refused with plan_changed before anything is touched."""

from __future__ import annotations

from conftest import tree

PIPELINE = {"id": "reports"}


def destination(root, **extra):
    return dict({"id": "web", "storage": {"type": "local", "root": str(root)}, "path": "site"}, **extra)


def test_the_checked_digest_lets_the_run_proceed_and_a_changed_plan_is_refused(playbook, make_bundle, tmp_path):
    root = tmp_path / "www"
    first = make_bundle({"index.html": b"v1", "old.html": b"old"}, created="2026-06-03T00:00:00Z")
    check = playbook.publish(check=True, source=first, pipeline=PIPELINE, destination=destination(root))
    assert check["plan_digest"].startswith("sha256:") and [c["change"] for c in check["changes"]] == ["create", "create"]
    run = playbook.publish(source=first, pipeline=PIPELINE, destination=destination(root), expect_plan_digest=check["plan_digest"])
    assert run["changed"] and (run["plan_digest"], run["changes"]) == (check["plan_digest"], check["changes"])

    second = make_bundle({"index.html": b"v2"})
    approved = playbook.publish(check=True, source=second, pipeline=PIPELINE, destination=destination(root))
    assert {c["path"]: c["change"] for c in approved["changes"]} == {"index.html": "update", "old.html": "delete"}
    (root / "site" / "stray.txt").write_bytes(b"someone else's")
    playbook.publish(source=first, pipeline={"id": "reports"}, destination=destination(root, reconciliation={"mode": "merge"}))
    before = tree(root)
    refused = playbook.publish(source=second, pipeline=PIPELINE, destination=destination(root, reconciliation={"mode": "merge"}),
                               expect_plan_digest=approved["plan_digest"])
    assert refused.get("failed") and refused["reason"] == "plan_changed", refused
    assert approved["plan_digest"] in refused["msg"] and refused["plan_digest"] != approved["plan_digest"]
    assert tree(root) == before


def test_reconcile_state_and_prune_take_the_approved_digest_too(playbook, make_bundle, tmp_path):
    root = tmp_path / "www"
    dest = destination(root, retention={"max_outputs": 1})
    playbook.publish(source=make_bundle({"a.html": b"a", "b.html": b"b", "c.html": b"c"}), pipeline=PIPELINE, destination=dest)
    (root / "site" / "a.html").unlink()
    for module in ("distributor_reconcile_state", "distributor_prune"):
        task = {"distributor.core.%s" % module: {"pipeline_id": "reports", "destination": dest}}
        [check] = playbook.run([task], check=True)
        [run] = playbook.run([{"distributor.core.%s" % module: dict(task["distributor.core.%s" % module],
                                                                    expect_plan_digest=check["plan_digest"])}])
        assert run["changed"] and run["plan_digest"] == check["plan_digest"], run
        [stale] = playbook.run([{"distributor.core.%s" % module: dict(task["distributor.core.%s" % module],
                                                                      expect_plan_digest=check["plan_digest"])}])
        assert stale.get("failed") and stale["reason"] == "plan_changed", stale
