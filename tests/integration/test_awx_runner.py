# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The role run the way AWX and Automation Platform run a job: ansible_runner.run with the
inventory's variables, the project's playbooks/publish.yml, and results read from job events."""

from __future__ import annotations

import hashlib
import json
import os
import re
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
    """run(cmdline) -> the finished ansible_runner.Runner of a publish job template; `job.files`
    replaces the bundle's files before the next run, `job.publication` is the publication."""
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
    publications = inventory["all"]["children"]["distributor_publishers"]["vars"]["distributor_publications"]

    def run(cmdline: str = "", envvars: dict | None = None):
        private_data_dir = tmp_path / ("job-%d" % next(runs))
        private_data_dir.mkdir()
        runner = ansible_runner.run(
            private_data_dir=str(private_data_dir),
            project_dir=os.path.join(REPO_ROOT, "playbooks"),
            playbook="publish.yml",
            inventory=inventory,
            envvars={"ANSIBLE_COLLECTIONS_PATH": collections_path(),
                     "PATH": VENV_BIN + os.pathsep + os.environ.get("PATH", ""), **(envvars or {})},
            cmdline=cmdline,
            quiet=True,
        )
        assert (runner.status, runner.rc) == ("successful", 0), runner.stdout.read()
        return runner

    run.root = root
    run.publication = publications[0]
    run.files = lambda files: run.publication.update(source=make_bundle(files))
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


def test_with_an_artifacts_directory_each_job_records_its_whole_plan_and_result_there(job, tmp_path):
    artifacts = tmp_path / "artifacts"
    records = {}
    for cmdline, name in (("--check --diff", "reports.web.check.jsonl"), ("", "reports.web.run.jsonl")):
        [result] = publish_results(job("%s -e distributor_artifacts_dir=%s" % (cmdline, artifacts)))
        with open(artifacts / name, "rb") as handle:
            data = handle.read()
        assert result["record_file"] == str(artifacts / name)
        assert result["record_sha256"] == "sha256:" + hashlib.sha256(data).hexdigest()
        records[name] = [json.loads(line) for line in data.splitlines()]
    check, run = records["reports.web.check.jsonl"], records["reports.web.run.jsonl"]
    assert check[0]["check_mode"] is True and run[0]["check_mode"] is False
    assert check[1] == run[1], "the plan the check recorded is the plan the run recorded"
    assert sorted(line["written"] for line in run if "written" in line) == OUTPUTS


# awx_display replaces an event's `res` with {} when len(str(res)) exceeds MAX_EVENT_RES.
MAX_EVENT_RES = 700000


def site(count: int) -> dict:
    """`count` tiny files, one in ten a Markdown page and the others images, a hundred a directory:
    what the job's pipeline publishes."""
    return {("d%03d/page%05d.md" % (i // 100, i) if i % 10 == 0 else "d%03d/image%05d.png" % (i // 100, i)):
            (b"# Page %d\n" % i if i % 10 == 0 else b"\x89PNG\0%d" % i) for i in range(count)}


def event_res(runner) -> dict:
    [event] = [e for e in runner.events
               if e["event"] == "runner_on_ok" and e["event_data"]["task"] == PUBLISH_TASK]
    return event["event_data"]["res"]


def test_a_50000_file_check_diff_job_and_its_run_keep_the_digest_and_counts_in_their_job_events(job):
    job.files(site(50000))
    for cmdline, check in (("--check --diff", True), ("", False)):
        res = event_res(job(cmdline))
        assert len(str(res)) <= MAX_EVENT_RES
        [result] = res["results"]
        assert result["plan_digest"].startswith("sha256:") and result["action"] == "publish"
        assert (result["written_count"], result["changes_count"], result["deleted_count"]) == (50000, 50000, 0)
        assert len(result["written"]) == 100 and result["truncated"]["written"] == 49900
        if check:
            approved = result["plan_digest"]
            listing, *contents = result["diff"]
            assert listing["after"].endswith("# 49900 more output(s) not shown, 49900 of them changed\n")
            assert contents[-1]["prepared"].startswith("diff skipped: 49900 more output(s) written, not shown")
            assert result["truncated"]["state.outputs"] == 49900 and len(result["state"]["outputs"]) == 100
        else:
            assert result["plan_digest"] == approved and "diff" not in result
    assert len(os.listdir(job.root / "reports" / "d499")) == 100


def test_a_manifest_given_as_an_option_comes_back_in_the_job_event_cut_to_result_limit(job):
    job.files(site(300))
    with open(os.path.join(job.publication["source"], "manifest.json")) as handle:
        job.publication["manifest"] = json.load(handle)
    res = event_res(job("--check"))
    [result] = res["results"]
    assert result["written_count"] == 300
    assert result["invocation"]["module_args"]["manifest"]["files"] == job.publication["manifest"]["files"][:100]


# awx_display keeps every result whole under this limit, so a test sees each event's real size.
WHOLE_EVENTS = {"MAX_EVENT_RES": str(10 ** 9)}


def role_events(runner) -> dict:
    """The largest `str(res)` of each task's events, as awx_display measures them, and the
    distinct files of the bundle that the task's events name (by their stem: page00010, image00011)
    outside `invalidation_paths`, which `links.invalidation_limit` bounds instead (1,000 URLs)."""
    sizes, named = {}, {}
    for event in runner.events:
        data = event.get("event_data", {})
        if "res" in data and event["event"] != "playbook_on_stats":
            sizes[data["task"]] = max(sizes.get(data["task"], 0), len(str(data["res"])))
            named.setdefault(data["task"], set()).update(re.findall(r"(?:page|image)\d{5}", str(_without_urls(data["res"]))))
    return {"sizes": sizes, "named": {task: len(stems) for task, stems in named.items()}}


def _without_urls(value):
    if isinstance(value, dict):
        return {key: _without_urls(item) for key, item in value.items() if key != "invalidation_paths"}
    if isinstance(value, list):
        return [_without_urls(item) for item in value]
    return value


@pytest.mark.parametrize("build", [False, True], ids=["manifest.json", "distributor_build_manifests"])
def test_every_event_of_the_role_names_at_most_result_limit_files_with_or_without_built_manifests(job, build):
    """Issue 41 item 1: with distributor_build_manifests the manifest task's result and every
    publish loop item carried the whole manifest (125 characters a file), so the manifest, publish
    and wait events of 6,000 files passed MAX_EVENT_RES and AWX kept `{}` of them. Now no event
    names more of the bundle's files than the result_limit (100) of each of its lists, whatever
    the bundle's size; the 50,000-file sizes are in benchmarks/awx_results.py."""
    job.files(site(6000))
    extra = ""
    if build:
        job.publication["source_id"] = "site.example"
        with open(os.path.join(job.publication["source"], "d000", "page00000.md"), "ab") as handle:
            handle.write(b"Edited after its manifest was written.\n")
        extra = " -e distributor_build_manifests=true"
    for cmdline in ("--check --diff" + extra, extra):
        runner = job(cmdline, envvars=WHOLE_EVENTS)
        events = role_events(runner)
        assert max(events["sizes"].values()) <= MAX_EVENT_RES, events["sizes"]
        assert max(events["named"].values()) <= 300, [item for item in events["named"].items() if item[1] > 300]
        [result] = event_res(runner)["results"]
        assert result["plan_digest"].startswith("sha256:") and result["action"] == "publish"
        assert (result["written_count"], result["changes_count"]) == (6000, 6000)
        if cmdline.startswith("--check"):
            approved = result["plan_digest"]
        else:
            assert result["plan_digest"] == approved, "the run publishes the bundle the check reviewed"
