# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Drift found and repaired, through ansible-playbook on every backend (local, the test sshd,
moto's S3): managed outputs edited (same size), truncated and deleted by hand in a shared root,
then republished from the same bundle. The contract's decision is `skip`; `verify: size` repairs
the truncated and deleted ones but cannot see a same-size edit, `verify: sha256` repairs that too,
check mode reports without writing, and another owner's outputs and an unmanaged file stay as
they are (even when they drifted too). distributor_state_info with `verify` reports the same drift
read-only, for one owner or for all."""

from __future__ import annotations

MINE = {"a.png": b"aaaa", "b.png": b"bbbb", "c.png": b"cccc"}
THEIRS = {"z.png": b"zzzz"}
COPY = [{"match": "**/*.png", "transform": "copy"}]


def destination(backend) -> dict:
    return {"id": "archive", "storage": backend.storage, "path": "site", "state": {"mode": "shared_root"}}


def publish(source: str, backend, pipeline_id: str, task: dict | None = None, **options) -> dict:
    return dict({"distributor.core.distributor_publish": dict(
        source=source, pipeline={"id": pipeline_id, "outputs": COPY}, destination=destination(backend), **options)}, **(task or {}))


def state_info(backend, **options) -> dict:
    return {"distributor.core.distributor_state_info": dict(destination=destination(backend), **options)}


def test_verify_repairs_this_owners_drift_in_check_mode_and_in_a_run(playbook, make_bundle, backend):
    mine, theirs = make_bundle(MINE), make_bundle(THEIRS, id="other.example")
    first = playbook.run([publish(mine, backend, "reports"), publish(theirs, backend, "other")])
    assert not any(r.get("failed") for r in first), first
    backend.put("site/a.png", b"AAAA")       # same size
    backend.put("site/b.png", b"b")          # truncated
    backend.remove("site/c.png")             # deleted
    backend.put("site/z.png", b"ZZ")         # the other owner's output, drifted too
    backend.put("site/notes.txt", b"hand")   # unmanaged

    unverified, info_size, info_digest, info_all, plain, by_size_checked, by_size = playbook.run([
        state_info(backend, pipeline_id="reports"),
        state_info(backend, pipeline_id="reports", verify="size"),
        state_info(backend, pipeline_id="reports", verify="sha256"),
        state_info(backend, verify="sha256"),
        publish(mine, backend, "reports"),
        publish(mine, backend, "reports", task={"check_mode": True}, verify="size"),
        publish(mine, backend, "reports", verify="size"),
    ])
    assert (unverified["missing"], unverified["drifted"]) == (None, None)
    assert (info_size["changed"], info_size["missing"], info_size["drifted"]) == (False, ["c.png"], ["b.png"])
    assert (info_digest["missing"], info_digest["drifted"]) == (["c.png"], ["a.png", "b.png"])
    assert (info_all["missing"], info_all["drifted"]) == (["c.png"], ["a.png", "b.png", "z.png"])
    assert (plain["action"], plain["changed"], plain["repaired"]) == ("skip", False, [])
    assert (by_size_checked["action"], by_size_checked["changed"], by_size_checked["repaired"]) == ("skip", True, ["b.png", "c.png"])
    assert (by_size["action"], by_size["changed"], by_size["repaired"]) == ("skip", True, ["b.png", "c.png"])
    assert [(c["path"], c["change"]) for c in by_size["changes"]] == [("b.png", "repair"), ("c.png", "repair")]
    assert by_size_checked["plan_digest"] == by_size["plan_digest"]
    files = backend.files("site")
    assert files["a.png"] == b"AAAA", "verify: size cannot see an edit that keeps the size"
    assert (files["b.png"], files["c.png"]) == (b"bbbb", b"cccc")

    by_digest_checked, by_digest, again = playbook.run([
        publish(mine, backend, "reports", task={"check_mode": True, "diff": True}, verify="sha256"),
        publish(mine, backend, "reports", verify="sha256"),
        publish(mine, backend, "reports", verify="sha256"),
    ])
    assert (by_digest_checked["changed"], by_digest_checked["repaired"]) == (True, ["a.png"])
    assert any("a.png" in str(entry.get("before_header", "")) + str(entry.get("after_header", ""))
               for entry in by_digest_checked["diff"][1:]), "--diff shows the repaired output"
    assert (by_digest["action"], by_digest["changed"], by_digest["repaired"]) == ("skip", True, ["a.png"])
    assert (again["changed"], again["repaired"]) == (False, [])
    files = backend.files("site")
    assert {name: files[name] for name in MINE} == MINE
    assert (files["z.png"], files["notes.txt"]) == (b"ZZ", b"hand"), "another owner's output or an unmanaged file was touched"
