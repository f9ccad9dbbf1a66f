# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Results a job can hold: a site of N tiny files published with `ansible-playbook --check --diff`
and then for real, as AWX runs a review job and a run job.

    python benchmarks/awx_results.py [--counts 10000,50000] [--phases check,publish] [--quick] [--seed N]

For each N: the wall time and the peak resident set size of the whole ansible-playbook run
(controller, worker and module process: the largest of them), and the size of the module's result
as JSON and as `str()`, which is what ansible-runner's `awx_display` callback compares with
MAX_EVENT_RES (700,000) before it drops a result. Issue #31's target: 50,000 files under 60 s and
300 MiB. Writes benchmarks/results/<time>-awx.json and .md.
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


def measure(count: int, workdir: str, seed: int, phases: list) -> list[dict]:
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
    shutil.rmtree(base, ignore_errors=True)
    return rows


def markdown(rows: list[dict]) -> str:
    lines = ["| files | ansible-playbook | wall s | CPU s | peak RSS MiB | stdout bytes | module process s | module peak MiB "
             "| result JSON bytes | result str() bytes |", "| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for r in rows:
        lines.append("| {:,} | {} | {:.1f} | {:.1f} | {} | {:,} | {:.1f} | {} | {:,} | {:,} |".format(
            r["files"], r["phase"], r["seconds"], r["cpu"], r["rss_mib"], r["stdout_bytes"], r["module_seconds"],
            r["module_rss_mib"], r["result_json"], r["result_str"]))
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--counts", default="10000,50000")
    parser.add_argument("--quick", action="store_true", help="10,000 files only")
    parser.add_argument("--phases", default="check,publish", help="check (--check --diff), publish, or both in order")
    parser.add_argument("--seed", type=int, default=20260101)
    args = parser.parse_args(argv)
    counts = [int(c) for c in args.counts.split(",") if not args.quick or int(c) <= 10000]
    workdir = tempfile.mkdtemp(prefix="distributor-awx-")
    try:
        rows = [row for count in counts for row in measure(count, workdir, args.seed, args.phases.split(","))]
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    write_results("awx", {"rows": rows, "repo": REPO_ROOT, "at": time.strftime("%Y-%m-%dT%H:%M:%S")}, markdown(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
