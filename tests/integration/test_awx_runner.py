# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The role run the way AWX and Automation Platform run a job: ansible_runner.run with the
inventory's variables, the project's playbooks/publish.yml, and results read from job events."""

from __future__ import annotations

import json
import os
import sys

import ansible_runner
import pytest

from conftest import REPO_ROOT, VENV_BIN, collections_path, tree

REPORT = {"report.md": b"# Quarterly report\n\nSee [the notes](notes.md).\n", "notes.md": b"# Notes\n",
          "chart.png": b"\x89PNG fake"}
OUTPUTS = ["chart.png", "notes.html", "report.html"]
PUBLISH_TASK = "Publish each bundle to its pipeline's destinations"


@pytest.fixture
def job(tmp_path, make_bundle):
    """run(cmdline) -> the finished ansible_runner.Runner of a publish job template."""
    root = tmp_path / "www"
    inventory = {"all": {"children": {"distributor_publishers": {
        "hosts": {"localhost": {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}},
        "vars": {
            "distributor_destinations": {"web": {
                "storage": {"type": "local", "root": str(root)},
                "path": "reports",
                "links": {"base_url": "https://reports.example.com/reports/", "primary": ["report.html"]},
            }},
            "distributor_pipelines": {"reports": {
                "outputs": [{"match": "**/*.md", "transform": "markdown_to_html"}, {"match": "**/*.png"}],
                "destinations": ["web"],
            }},
            "distributor_publications": [{"pipeline": "reports", "source": make_bundle(REPORT)}],
        },
    }}}}
    runs = iter(range(100))

    def run(cmdline: str = ""):
        private_data_dir = tmp_path / ("job-%d" % next(runs))
        private_data_dir.mkdir()
        runner = ansible_runner.run(
            private_data_dir=str(private_data_dir),
            project_dir=os.path.join(REPO_ROOT, "playbooks"),
            playbook="publish.yml",
            inventory=inventory,
            envvars={"ANSIBLE_COLLECTIONS_PATH": collections_path(),
                     "PATH": VENV_BIN + os.pathsep + os.environ.get("PATH", "")},
            cmdline=cmdline,
            quiet=True,
        )
        assert (runner.status, runner.rc) == ("successful", 0), runner.stdout.read()
        return runner

    run.root = root
    return run


def publish_results(runner) -> list:
    """The per-destination module results of the role's publish task, from its runner_on_ok event."""
    [event] = [e for e in runner.events
               if e["event"] == "runner_on_ok" and e["event_data"]["task"] == PUBLISH_TASK]
    return event["event_data"]["res"]["results"]


def test_check_diff_job_then_real_job_then_rerun_changes_nothing(job):
    checked = job("--check --diff")
    [planned] = publish_results(checked)
    assert planned["changed"] is True and planned["action"] == "publish"
    assert sorted(planned["written"]) == OUTPUTS
    for path in OUTPUTS:
        assert path in planned["diff"][0]["after"] and path not in planned["diff"][0]["before"]
    assert checked.stats["changed"] == {"localhost": 1}
    assert not job.root.exists(), "the check-mode job wrote %s" % sorted(tree(job.root))

    published = job()
    [result] = publish_results(published)
    assert result["changed"] is True and result["action"] == "publish"
    assert result["primary_url"] == "https://reports.example.com/reports/report.html"
    assert "diff" not in result
    assert sorted(tree(job.root / "reports")) == [".distributor.json"] + OUTPUTS

    again = job()
    [repeated] = publish_results(again)
    assert repeated["changed"] is False and repeated["action"] == "skip"
    assert again.stats["changed"] == {}


def artifacts(runner) -> dict:
    """The job's set_stats data, as AWX reads it from the playbook_on_stats event."""
    [event] = [e for e in runner.events if e["event"] == "playbook_on_stats"]
    return event["event_data"].get("artifact_data") or {}


def test_a_check_job_publishes_its_plans_and_the_run_job_runs_exactly_them(job):
    checked = job("--check")
    [planned] = publish_results(checked)
    plans = artifacts(checked)["distributor_plans"]
    assert plans == {"reports/web": planned["plan_digest"]}
    approved = job("-e '%s'" % json.dumps({"distributor_expected_plans": plans}))
    [result] = publish_results(approved)
    assert result["changed"] and result["plan_digest"] == planned["plan_digest"]
    assert "distributor_plans" not in artifacts(approved), "only a check job records plans"
    assert sorted(tree(job.root / "reports")) == [".distributor.json"] + OUTPUTS
