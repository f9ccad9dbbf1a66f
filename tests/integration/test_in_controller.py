# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Where a module runs when its host is the controller (plugin_utils/in_controller.py): in the
task's worker, with the same results, failures and hidden secrets as the module process, and as
a module process whenever the worker would not be its twin."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys

import pytest
import yaml

from conftest import VENV_BIN

REPORT = {"report.md": b"# Quarterly report\n", "chart.png": b"\x89PNG fake"}
PIPELINE = {"id": "reports", "outputs": [{"match": "**/*.md", "transform": "markdown_to_html"}, {"match": "**/*.png", "transform": "copy"}]}
SECRET = "s3cr3t-never-shown"
WORKER = {"distributor_in_controller": True}
PROCESS = {"distributor_in_controller": False}


def destination(root: str, **storage) -> dict:
    return {"id": "archive", "storage": dict(type="local", root=root, **storage), "path": "archive"}


def tasks(bundle: str, newer: str, root: str, where: dict) -> list:
    """A first publish, its skip, a newer bundle's check with diff, an invalid option, a refusal,
    a state report, a no_log option given where it does not belong and a loop (one worker runs
    every item), each run where `where` asks."""
    publish = {"source": bundle, "pipeline": PIPELINE, "destination": destination(root)}
    return [dict(task, vars=where) for task in (
        {"distributor.core.distributor_publish": publish},
        {"distributor.core.distributor_publish": publish},
        {"distributor.core.distributor_publish": dict(publish, source=newer), "check_mode": True, "diff": True},
        {"distributor.core.distributor_publish": dict(publish, lock_timeout="soon")},
        {"distributor.core.distributor_publish": dict(publish, source=os.path.join(root, "missing"))},
        {"distributor.core.distributor_state_info": {"destination": destination(root)}},
        {"distributor.core.distributor_publish": dict(publish, destination=destination(root, password=SECRET))},
        {"distributor.core.distributor_publish": dict(publish, destination=dict(destination(root), path="{{ item }}")), "loop": ["one", "two"]},
    )]


def comparable(result: dict) -> str:
    """A result with the times of its run (not the bundles' own, of 2026-06-04) made the same."""
    return re.sub(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", lambda m: m.group() if m.group().startswith("2026-06-04") else "<run time>",
                  json.dumps(result, sort_keys=True))


def payloads(remote_tmp) -> list:
    return [name for _dir, _dirs, names in os.walk(remote_tmp) for name in names if name.startswith("AnsiballZ_")]


def test_the_worker_and_the_module_process_return_the_same_results(playbook, make_bundle, tmp_path, monkeypatch):
    monkeypatch.setenv("ANSIBLE_KEEP_REMOTE_FILES", "1")
    bundle = make_bundle(REPORT)
    newer = make_bundle({"report.md": b"# Q2\n"}, created="2026-06-04T18:00:00Z")
    runs = {}
    for name, where in (("worker", WORKER), ("process", PROCESS)):
        remote_tmp = tmp_path / ("tmp-" + name)
        monkeypatch.setenv("ANSIBLE_REMOTE_TMP", str(remote_tmp))
        runs[name] = playbook.run(tasks(bundle, newer, str(tmp_path / "www"), where))
        runs[name + " payloads"] = payloads(remote_tmp)
        shutil.rmtree(tmp_path / "www")
    # A payload for each task (a loop's items share one kept temporary directory, and so one file).
    assert runs["worker payloads"] == [] and len(runs["process payloads"]) == 8
    worker, process = runs["worker"], runs["process"]
    assert [comparable(r) for r in worker] == [comparable(r) for r in process]
    assert [r["action"] for r in worker[:3]] == ["publish", "skip", "replace"]
    assert worker[2]["diff"] and worker[3]["failed"] and worker[3]["reason"] == "invalid_config" and "lock_timeout" in worker[3]["msg"]
    assert worker[4]["failed"] and worker[4]["reason"] and "missing" in worker[4]["msg"]
    assert worker[6]["failed"] and "password" in worker[6]["msg"] and SECRET not in json.dumps(worker + process)
    assert [item["action"] for item in worker[7]["results"]] == ["publish", "publish"]


@pytest.mark.parametrize("task_keys, interpreter, why", [
    ({"environment": {"LC_ALL": "C.UTF-8"}}, sys.executable, "the task sets an environment"),
    ({}, os.path.join(VENV_BIN, "python3.11"), "not the controller's"),
    ({"vars": PROCESS}, sys.executable, "distributor_in_controller is false"),
])
def test_a_module_whose_process_would_differ_from_the_worker_runs_as_that_process(playbook, make_bundle, tmp_path, task_keys, interpreter, why):
    """The environment, another Python or the switch: the module runs as a process, and says why with -vvv."""
    task = dict(task_keys, **{"distributor.core.distributor_publish": {
        "source": make_bundle(REPORT), "pipeline": PIPELINE, "destination": destination(str(tmp_path / "www"))}})
    book = tmp_path / "one.yml"
    book.write_text(yaml.safe_dump([{"hosts": "localhost", "gather_facts": False, "tasks": [task]}]))
    command = [os.path.join(VENV_BIN, "ansible-playbook"), "-i", "localhost,", "-c", "local", "-e", "ansible_python_interpreter=" + interpreter,
               str(book), "-vvv"]
    completed = subprocess.run(command, env=playbook.env(), capture_output=True, text=True, timeout=300, check=False)
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert "runs as a module process: " in completed.stdout and why in completed.stdout
    assert "AnsiballZ_distributor_publish.py" in completed.stdout
    assert (tmp_path / "www" / "archive" / "report.html").exists()


def test_a_switch_that_is_not_a_boolean_fails_the_task_naming_it(playbook, make_bundle, tmp_path):
    results = playbook.run([{"vars": {"distributor_in_controller": "sometimes"}, "distributor.core.distributor_publish": {
        "source": make_bundle(REPORT), "pipeline": PIPELINE, "destination": destination(str(tmp_path / "www"))}}])
    assert results[0]["failed"] and "distributor_in_controller must be a boolean" in results[0]["msg"]
    assert not (tmp_path / "www").exists()


# Files each backend takes about 8 s to publish on this project's 2-core CI machine (4.2 s for
# half as many locally, 3.6 s on S3, beyond a one-file publish), so a one-second task timeout
# falls inside the publish on a machine up to about 8 times faster.
TIMED_OUT_FILES = {"local": 40000, "s3": 2000}


@pytest.mark.parametrize("backend", ["local", "s3"], indirect=True)
def test_a_task_timeout_stops_the_publish_in_the_worker_and_the_next_run_finishes_it(playbook, make_bundle, backend):
    """In the worker, Ansible's `timeout` interrupts the module where it is, as a killed run: the
    lock is released on the way out (the next run does not wait out its expiry) and the next run
    leaves exactly the bundle's outputs, none of the interrupted run's temporary files."""
    count = TIMED_OUT_FILES[backend.name]
    bundle = make_bundle({"d%02d/f%05d.md" % (i % 50, i): b"# %d\n" % i for i in range(count)})
    publish = {"source": bundle, "pipeline": PIPELINE, "destination": {"id": "archive", "storage": backend.storage, "path": "archive"},
               "lock_timeout": 5}
    interrupted, finished = playbook.run([
        {"distributor.core.distributor_publish": publish, "vars": WORKER, "timeout": 1},
        {"distributor.core.distributor_publish": publish, "vars": WORKER},
    ])
    assert interrupted.get("timedout", {}).get("period") == 1, "not interrupted: raise TIMED_OUT_FILES for this machine"
    assert interrupted["failed"], interrupted
    assert finished["changed"] and not finished.get("failed"), finished
    left = backend.files("archive")
    assert sorted(name for name in left if not name.startswith(".")) == sorted(
        "d%02d/f%05d.html" % (i % 50, i) for i in range(count))
    assert sorted(name for name in left if name.startswith(".")) == [".distributor.json"]
