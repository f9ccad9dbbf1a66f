# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Results a job can hold: a site of N tiny files published with `ansible-playbook --check --diff`
and then for real, as AWX runs a review job and a run job.

    python benchmarks/awx_results.py [--counts 10000,50000] [--phases check,publish] [--quick] [--seed N] [--role]

For each N: the wall time and the peak resident set size of the whole ansible-playbook run
(controller, worker and module process: the largest of them), and the size of the module's result
as JSON and as `str()`, which is what ansible-runner's `awx_display` callback compares with
MAX_EVENT_RES (700,000) before it drops a result. Issue #31's target: 50,000 files under 60 s and
300 MiB. Writes benchmarks/results/<time>-awx.json and .md.

With --role, also the role (playbooks/publish.yml) as AWX runs it: ansible_runner.run with
ansible-runner's AWX callback, once reading the bundle's manifest.json and once with
distributor_build_manifests (issue 41), each a check --diff and its run into a root of its own;
for each the wall time, the largest `str(res)` of any of the role's job events (MAX_EVENT_RES is
raised so that the callback keeps each whole to be measured) and of the publish event, and the
digest and counts that event keeps, beside the module process alone.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import ansible_runner
import yaml

from harness import COLLECTIONS, REPO_ROOT, create_manifest, write_results

MODULE = "distributor.core.distributor_publish"
PIPELINE = {"id": "site", "outputs": [{"match": "**/*.md", "transform": "markdown_to_html"}, {"match": "**"}]}
DIRECTORY = 100  # files a directory


def site(root: str, count: int, seed: int) -> str:
    """A site of `count` tiny files, half of them Markdown pages, the rest stylesheets, text and
    images of a few dozen bytes, 100 a directory: every output's cost is its per-file cost."""
    for index in range(count):
        directory = os.path.join(root, "s%03d" % (index // DIRECTORY))
        if index % DIRECTORY == 0:
            os.makedirs(directory)
        kind = index % 4
        name, data = {
            0: ("page%05d.md" % index, b"# Page %d\n\nSee [the next page](page%05d.md).\n" % (index, index + 4)),
            1: ("page%05d.md" % index, b"# Notes %d\n\n- one\n- two %d\n" % (index, seed)),
            2: ("style%05d.css" % index, b"body { margin: %dpx; }\n" % (index % 7)),
            3: ("image%05d.png" % index, b"\x89PNG\r\n\x1a\n" + index.to_bytes(4, "big")),
        }[kind]
        with open(os.path.join(directory, name), "wb") as handle:
            handle.write(data)
    create_manifest(root, "site.bundle", "2026-01-01T00:00:00Z")
    return root


def destination(root: str) -> dict:
    return {"id": "web", "storage": {"type": "local", "root": root}, "path": "site",
            "links": {"base_url": "https://site.example.com/site/"}}


def playbook(workdir: str, source: str, root: str) -> str:
    path = os.path.join(workdir, "play.yml")
    task = {"name": "publish", MODULE: {"source": source, "pipeline": PIPELINE, "destination": destination(root)}}
    with open(path, "w") as handle:
        yaml.safe_dump([{"hosts": "localhost", "gather_facts": False, "tasks": [task]}], handle)
    return path


LAUNCHER = """import os, sys, time, json
t = time.perf_counter(); pid = os.fork()
if pid == 0:
    fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600); os.dup2(fd, 1)
    os.execv(sys.argv[2], sys.argv[2:])
_pid, status, usage = os.wait4(pid, 0)
print(json.dumps({"status": status, "seconds": time.perf_counter() - t, "rss_mib": usage.ru_maxrss / 1024,
                  "cpu": usage.ru_utime + usage.ru_stime}))
"""


def launched(command: list, stdout: str, env: dict, cwd: str) -> dict:
    """Wall and CPU seconds and the peak RSS (MiB) of the largest process `command` runs, read
    with wait4() by a small launcher (see rss_probe.py on why not from this process); its
    stdout goes to the file `stdout`."""
    done = subprocess.run([sys.executable, "-c", LAUNCHER, stdout, *command], env=env, capture_output=True, text=True,
                          check=True, cwd=cwd)
    measured = json.loads(done.stdout)
    if measured["status"] != 0:
        with open(stdout, errors="replace") as handle:
            raise RuntimeError("%s failed:\n%s%s" % (command[0], handle.read()[-3000:], done.stderr[-3000:]))
    return measured


def run_playbook(path: str, flags: list, workdir: str) -> dict:
    """The whole ansible-playbook run, with the default stdout callback printing the diff."""
    binary = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=COLLECTIONS, ANSIBLE_NOCOLOR="1", ANSIBLE_LOCALHOST_WARNING="0",
               ANSIBLE_INVENTORY_UNPARSED_WARNING="0", ANSIBLE_RETRY_FILES_ENABLED="0")
    stdout = os.path.join(workdir, "playbook-stdout.txt")
    measured = launched([binary, "-i", "localhost,", "-c", "local", "-e", "ansible_python_interpreter=" + sys.executable,
                         path, *flags], stdout, env, workdir)
    measured["stdout_bytes"] = os.path.getsize(stdout)
    return measured


def run_module(source: str, root: str, check: bool, workdir: str) -> dict:
    """The module process alone, as Ansible starts it, and the size of the result it prints:
    as JSON, and as str() of the parsed result, which awx_display compares with MAX_EVENT_RES."""
    args = os.path.join(workdir, "args.json")
    with open(args, "w") as handle:
        json.dump({"ANSIBLE_MODULE_ARGS": {"source": source, "pipeline": PIPELINE, "destination": destination(root),
                                           "_ansible_check_mode": check, "_ansible_diff": check}}, handle)
    stdout = os.path.join(workdir, "module-stdout.json")
    measured = launched([sys.executable, "-m", "ansible_collections.distributor.core.plugins.modules.distributor_publish",
                         args], stdout, dict(os.environ, PYTHONPATH=COLLECTIONS), workdir)
    with open(stdout) as handle:
        result = json.load(handle)
    measured.update(result_json=len(json.dumps(result)), result_str=len(str(result)),
                    parts={k: len(json.dumps(v)) for k, v in result.items() if len(json.dumps(v)) > 1000})
    return measured


PHASES = {"check": ("check --diff", True), "publish": ("publish", False)}
PUBLISH_TASK = "Publish each bundle to its pipeline's destinations"
MAX_EVENT_RES = 700000


def run_role(source: str, root: str, build: bool, check: bool, workdir: str) -> dict:
    """The role as an AWX job runs it: wall time, the largest result of its events and which task's, the publish event."""
    publication = {"pipeline": "site", "source": source, "source_id": "site.bundle"}
    host = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}
    inventory = {"all": {"children": {"distributor_publishers": {"hosts": {"localhost": host}, "vars": {
        "distributor_destinations": {"web": {key: value for key, value in destination(root).items() if key != "id"}},
        "distributor_pipelines": {"site": {"outputs": PIPELINE["outputs"], "destinations": ["web"]}},
        "distributor_publications": [publication], "distributor_build_manifests": build}}}}}
    private = tempfile.mkdtemp(dir=workdir)
    started = time.perf_counter()
    runner = ansible_runner.run(
        private_data_dir=private, project_dir=os.path.join(REPO_ROOT, "playbooks"), playbook="publish.yml", inventory=inventory,
        cmdline="--check --diff" if check else "", quiet=True,
        envvars={"ANSIBLE_COLLECTIONS_PATH": COLLECTIONS, "MAX_EVENT_RES": str(10 ** 9),
                 "PATH": os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")})
    seconds = time.perf_counter() - started
    if (runner.status, runner.rc) != ("successful", 0):
        raise RuntimeError("the role failed:\n%s" % runner.stdout.read()[-3000:])
    sizes = {}
    for event in runner.events:
        data = event.get("event_data", {})
        if "res" in data and event["event"] != "playbook_on_stats":
            sizes[data["task"]] = max(sizes.get(data["task"], 0), len(str(data["res"])))
    [published] = [e["event_data"]["res"] for e in runner.events if e["event"] == "runner_on_ok" and e["event_data"]["task"] == PUBLISH_TASK]
    [result] = published["results"]
    largest = max(sizes, key=sizes.get)
    shutil.rmtree(private, ignore_errors=True)
    return dict(seconds=round(seconds, 2), largest_event=sizes[largest], largest_task=largest, publish_event=sizes[PUBLISH_TASK],
                over_limit=sorted(task for task, size in sizes.items() if size > MAX_EVENT_RES),
                plan_digest=result["plan_digest"], written_count=result["written_count"], changes_count=result["changes_count"])


def measure(count: int, workdir: str, seed: int, phases: list, role: bool) -> list[dict]:
    base = os.path.join(workdir, str(count))
    source = site(os.path.join(base, "bundle"), count, seed)
    roots = {name: os.path.join(base, name) for name in ("playbook", "module")}
    for root in roots.values():
        os.makedirs(root)
    path = playbook(base, source, roots["playbook"])
    rows = []
    for phase, check in (PHASES[name] for name in phases):
        whole = run_playbook(path, ["--check", "--diff"] if check else [], base)
        alone = run_module(source, roots["module"], check, base)
        row = dict(files=count, phase=phase, seconds=round(whole["seconds"], 2), cpu=round(whole["cpu"], 2),
                   rss_mib=round(whole["rss_mib"]), stdout_bytes=whole["stdout_bytes"],
                   module_seconds=round(alone["seconds"], 2), module_rss_mib=round(alone["rss_mib"]),
                   result_json=alone["result_json"], result_str=alone["result_str"], parts=alone["parts"])
        rows.append(row)
        print("%6d %-13s ansible-playbook %6.1f s (cpu %.1f) %5d MiB, stdout %s bytes; module %.1f s %d MiB, "
              "result %s bytes (str %s) %s" % (
                  count, phase, row["seconds"], row["cpu"], row["rss_mib"], "{:,}".format(row["stdout_bytes"]),
                  row["module_seconds"], row["module_rss_mib"], "{:,}".format(row["result_json"]),
                  "{:,}".format(row["result_str"]), row["parts"]), flush=True)
    for build in (False, True) if role else ():
        root = os.path.join(base, "role-build" if build else "role")
        os.makedirs(root)
        for phase, check in (PHASES[name] for name in phases):
            alone = next(r["module_seconds"] for r in rows if r["phase"] == phase)
            row = dict(files=count, phase=phase, role="build_manifests" if build else "manifest.json", module_seconds=alone,
                       **run_role(source, root, build, check, base))
            rows.append(row)
            print("%6d %-13s role (%s) %6.1f s (module alone %.1f s), largest event %s (%s), publish event %s, over %d: %s, "
                  "%s written %d changes %d" % (count, phase, row["role"], row["seconds"], alone, "{:,}".format(row["largest_event"]),
                                                row["largest_task"], "{:,}".format(row["publish_event"]), MAX_EVENT_RES,
                                                row["over_limit"] or "none", row["plan_digest"][:19], row["written_count"],
                                                row["changes_count"]), flush=True)
    shutil.rmtree(base, ignore_errors=True)
    return rows


def markdown(rows: list[dict]) -> str:
    lines = ["| files | ansible-playbook | wall s | CPU s | peak RSS MiB | stdout bytes | module process s | module peak MiB "
             "| result JSON bytes | result str() bytes |", "| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for r in rows:
        if "role" not in r:
            lines.append("| {:,} | {} | {:.1f} | {:.1f} | {} | {:,} | {:.1f} | {} | {:,} | {:,} |".format(
                r["files"], r["phase"], r["seconds"], r["cpu"], r["rss_mib"], r["stdout_bytes"], r["module_seconds"],
                r["module_rss_mib"], r["result_json"], r["result_str"]))
    roles = [r for r in rows if "role" in r]
    if roles:
        lines += ["", "| files | role (AWX callback) | wall s | module alone s | largest event str() | its task | publish event str() "
                  "| over 700,000 | written / changes |", "| ---: | --- | ---: | ---: | ---: | --- | ---: | --- | ---: |"]
        for r in roles:
            lines.append("| {:,} | {} {} | {:.1f} | {:.1f} | {:,} | {} | {:,} | {} | {:,} / {:,} |".format(
                r["files"], r["phase"], r["role"], r["seconds"], r["module_seconds"], r["largest_event"], r["largest_task"],
                r["publish_event"], ", ".join(r["over_limit"]) or "none", r["written_count"], r["changes_count"]))
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--counts", default="10000,50000")
    parser.add_argument("--quick", action="store_true", help="10,000 files only")
    parser.add_argument("--phases", default="check,publish", help="check (--check --diff), publish, or both in order")
    parser.add_argument("--seed", type=int, default=20260101)
    parser.add_argument("--role", action="store_true", help="also the role through ansible-runner's AWX callback")
    args = parser.parse_args(argv)
    counts = [int(c) for c in args.counts.split(",") if not args.quick or int(c) <= 10000]
    workdir = tempfile.mkdtemp(prefix="distributor-awx-")
    try:
        rows = [row for count in counts for row in measure(count, workdir, args.seed, args.phases.split(","), args.role)]
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    write_results("awx", {"rows": rows, "repo": REPO_ROOT, "at": time.strftime("%Y-%m-%dT%H:%M:%S")}, markdown(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
