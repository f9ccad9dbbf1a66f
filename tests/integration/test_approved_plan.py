# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Check → approve → run with a play that writes the manifest and then publishes, without
pinning `created`: the manifest is a function of the bundle, so the digest of the check is the
digest of the run, through ansible-playbook and through the role's distributor_expected_plans."""

from __future__ import annotations

import json
import os

from conftest import tree

PIPELINE = {"id": "reports", "outputs": [{"match": "*.md", "transform": "markdown_to_html"}, {"match": "*.png"}]}


def write(bundle, files: dict, mtime: int) -> None:
    for path, data in files.items():
        target = os.path.join(str(bundle), path)
        with open(target, "wb") as handle:
            handle.write(data)
        os.utime(target, (mtime, mtime))


def play(bundle, root, expect=None) -> list:
    publish = {"source": str(bundle), "manifest": "{{ r0.manifest }}", "pipeline": PIPELINE,
               "destination": {"id": "archive", "storage": {"type": "local", "root": str(root)}, "path": "{created:%Y-%m-%d}"}}
    if expect:
        publish["expect_plan_digest"] = expect
    return [{"distributor.core.distributor_manifest": {"path": str(bundle), "id": "reports.example"}},
            {"distributor.core.distributor_publish": publish}]


def test_the_plan_approved_in_check_mode_runs_and_writes_what_the_check_showed(playbook, tmp_path):
    bundle, root = tmp_path / "bundle", tmp_path / "www"
    bundle.mkdir()
    write(bundle, {"report.md": b"# Report v1\n", "chart.png": b"\x89PNG v1"}, 1780574400)  # 2026-06-04T12:00:00Z
    for version, files, mtime in ((1, {}, None), (2, {"report.md": b"# Report v2\n"}, 1780578000)):
        if files:
            write(bundle, files, mtime)
        built, checked = playbook.run(play(bundle, root), check=True, diff=True)
        assert checked["changed"] and not checked.get("failed"), checked
        before = tree(root)
        built_again, run = playbook.run(play(bundle, root, expect=checked["plan_digest"]))
        assert not run.get("failed"), run
        assert built_again["manifest"] == built["manifest"] and json.loads((bundle / "manifest.json").read_text()) == built["manifest"]
        assert (run["plan_digest"], run["action"], run["written"], run["changes"]) == (
            checked["plan_digest"], checked["action"], checked["written"], checked["changes"]), version
        after = tree(root)
        recorded = json.loads(after["2026-06-04/.distributor.json"])
        assert recorded["source"]["manifest"] == built["manifest"]
        assert {path for path in after if after[path] != before.get(path)} - {"2026-06-04/.distributor.json"} == {
            "2026-06-04/" + path for path in checked["written"]}
    assert built["manifest"]["created"] == "2026-06-04T13:00:00Z" and checked["action"] == "replace"

    _built, again = playbook.run(play(bundle, root))
    assert (again["changed"], again["action"]) == (False, "skip")


def test_the_role_runs_the_plans_its_check_recorded(playbook, tmp_path):
    bundle, root, inventory = tmp_path / "bundle", tmp_path / "www", tmp_path / "inventory"
    bundle.mkdir()
    (inventory / "group_vars").mkdir(parents=True)
    write(bundle, {"report.md": b"# Report\n"}, 1780574400)
    (inventory / "hosts.yml").write_text(json.dumps({"distributor_publishers": {"hosts": {"localhost": {
        "ansible_connection": "local", "ansible_python_interpreter": "{{ ansible_playbook_python }}"}}}}))
    (inventory / "group_vars" / "distributor_publishers.yml").write_text(json.dumps({
        "distributor_destinations": {"web": {"storage": {"type": "local", "root": str(root)}, "path": "{created:%Y-%m-%d}"}},
        "distributor_pipelines": {"reports": {"outputs": PIPELINE["outputs"], "destinations": ["web"]}},
        "distributor_publications": [{"pipeline": "reports", "source": str(bundle), "manifest": "{{ built.manifest }}"}],
    }))
    plans = tmp_path / "plans.json"
    site = tmp_path / "site.yml"
    site.write_text(json.dumps([
        {"name": "Describe the bundle", "hosts": "distributor_publishers", "gather_facts": False, "tasks": [
            {"distributor.core.distributor_manifest": {"path": str(bundle), "id": "reports.example"}, "register": "built"}]},
        {"name": "Publish", "hosts": "distributor_publishers", "gather_facts": False, "roles": ["distributor.core.distributor"]},
        {"name": "Keep what the check would hand to the approval", "hosts": "distributor_publishers", "gather_facts": False,
         "tasks": [{"ansible.builtin.copy": {"dest": str(plans), "content": "{{ distributor_publish_results | to_json }}"},
                    "check_mode": False, "changed_when": False}]},
    ]))
    checked = playbook.invoke(str(site), check=True, extra=("-i", str(inventory)))
    assert checked.returncode == 0, checked.stdout + checked.stderr
    approved = {"reports/web": json.loads(plans.read_text())["results"][0]["plan_digest"]}
    assert not root.exists() and not (bundle / "manifest.json").exists()

    run = playbook.invoke(str(site), extra=("-i", str(inventory), "-e", json.dumps({"distributor_expected_plans": approved})))
    assert run.returncode == 0, run.stdout + run.stderr
    [result] = json.loads(plans.read_text())["results"]
    assert result["plan_digest"] == approved["reports/web"] and result["action"] == "publish"
    assert sorted(tree(root)) == ["2026-06-04/.distributor.json", "2026-06-04/report.html"]
