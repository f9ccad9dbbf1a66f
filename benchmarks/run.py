# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Reproducible speed and memory measurements of distributor against the tools it replaces.

    python benchmarks/run.py [--quick] [--backends local,sftp,s3] [--bundles small,large,markdown]
                             [--no-ansible] [--no-rss] [--aws PATH] [--seed N] [--keep]

For each backend and bundle it times, in this order and in one process:

  first      distributor's publish() into an empty root (in-process, no Ansible), then each
             baseline into its own empty root;
  republish  the same bundle again: distributor skips; rsync and `aws s3 sync` find nothing to do;
  replace    after 10% of the files change (and the manifest gets a newer `created`): distributor
             replaces; the baselines copy again (rsync and `aws s3 sync` only what changed).

Then, for the small bundle only, a first publish through `ansible-playbook` (plus a playbook of
one debug task, Ansible's fixed cost), and the peak RSS of publishing one large file compared
with a 16 MiB one, each in a fresh process. Everything runs on 127.0.0.1 against the sshd and
moto servers from tests/services.py, every step has a timeout, and the run cleans up after itself
(--keep leaves the work directory). Results: a table on stdout, and JSON plus a Markdown table in
benchmarks/results/.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time

import harness
from baselines import baselines, find_aws
from bundles import BundleSpec, change, generate, human_size
from harness import Backends, Timing, destination, pipeline, publish, time_call, time_command

KiB, MiB, GiB = 1 << 10, 1 << 20, 1 << 30
PROFILES = {
    "full": {
        "bundles": [BundleSpec("small", "small", 2000, 4 * KiB), BundleSpec("large", "large", 4, 64 * MiB),
                    BundleSpec("markdown", "markdown", 500, 0)],
        "rss_size": 1 * GiB,
    },
    "quick": {
        "bundles": [BundleSpec("small", "small", 300, 4 * KiB), BundleSpec("large", "large", 2, 16 * MiB),
                    BundleSpec("markdown", "markdown", 60, 0)],
        "rss_size": 128 * MiB,
    },
}
RSS_REFERENCE_SIZE = 16 * MiB
BACKENDS = ("local", "sftp", "s3")
RESULTS_DIR = os.path.join(harness.BENCH_DIR, "results")
MODULE_TIMER = """#!%(python)s
import json, resource, subprocess, sys, time
started = time.perf_counter()
code = subprocess.call([%(python)r] + sys.argv[1:])
usage = resource.getrusage(resource.RUSAGE_CHILDREN)
with open(%(log)r, "a") as log:
    log.write(json.dumps({"seconds": time.perf_counter() - started, "cpu_seconds": usage.ru_utime + usage.ru_stime}) + "\\n")
sys.exit(code)
"""


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


class Run:
    def __init__(self, args, workdir: str):
        self.args = args
        self.workdir = workdir
        self.servers = Backends(workdir)
        self.aws = find_aws(args.aws)
        self.rows: list[dict] = []  # one per measurement
        self.ansible: list[dict] = []
        self.rss: list[dict] = []
        self.notes: list[str] = []

    # -- recording --------------------------------------------------------------------------

    def record(self, backend: str, spec: BundleSpec, phase: str, tool: str, timing: Timing, **detail) -> None:
        row = {"backend": backend, "bundle": spec.name, "bundle_desc": spec.describe(), "phase": phase,
               "tool": tool, "seconds": round(timing.seconds, 4), "cpu_seconds": round(timing.cpu_seconds, 4)}
        row.update(detail)
        self.rows.append(row)
        log("  %-6s %-9s %-10s %-22s %8.3fs  (cpu %.3fs)%s" % (
            backend, spec.name, phase, tool, timing.seconds, timing.cpu_seconds,
            "  " + detail["action"] if "action" in detail else ""))

    # -- the measurements -------------------------------------------------------------------

    def publish(self, backend: str, spec: BundleSpec, phase: str, source: str, storage: dict, expect: str) -> None:
        timing, result = time_call(publish, source, pipeline(spec.markdown), destination(backend, storage),
                                   full_result=False)
        if result["action"] != expect:
            raise RuntimeError("%s %s %s: expected action %s, got %s (%s)" % (
                backend, spec.name, phase, expect, result["action"], result["reason"]))
        self.record(backend, spec, phase, "distributor", timing, action=result["action"],
                    written=len(result["written"]), deleted=len(result["deleted"]))

    def bundle_on_backend(self, backend: str, spec: BundleSpec, pristine: str) -> None:
        source = os.path.join(self.workdir, "work", "%s-%s" % (backend, spec.name))
        shutil.copytree(pristine, source)  # copy2: unchanged files keep their mtimes, as rsync needs
        tools = baselines(backend, self.servers, self.workdir, self.aws)
        mine = self.servers.fresh_root(backend, spec.name + "-distributor")
        theirs = {b.name: self.servers.fresh_root(backend, "%s-%s" % (spec.name, b.name.split()[0])) for b in tools}

        self.publish(backend, spec, "first", source, mine["storage"], "publish")
        self.publish(backend, spec, "republish", source, mine["storage"], "skip")
        for tool in tools:
            self.record(backend, spec, "first", tool.name, tool.run(source, theirs[tool.name]))
            self._check_copy(backend, spec, tool.name, theirs[tool.name])
        for tool in tools:
            if tool.incremental:
                self.record(backend, spec, "republish", tool.name, tool.run(source, theirs[tool.name]))

        # `aws s3 sync` copies a file whose size is unchanged only if it is newer than the
        # object; mtimes have one-second resolution there, so let the clock move on first.
        time.sleep(1.5)
        changed = change(source, spec, self.args.seed)
        self.publish(backend, spec, "replace", source, mine["storage"], "replace")
        for tool in tools:
            self.record(backend, spec, "replace", tool.name, tool.run(source, theirs[tool.name]), changed=len(changed))
            self._check_copy(backend, spec, tool.name, theirs[tool.name])
            self._check_changed(backend, tool.name, theirs[tool.name], source, changed)

        shutil.rmtree(source)
        for root in [mine, *theirs.values()]:
            if root.get("cleanup"):
                shutil.rmtree(root["cleanup"], ignore_errors=True)

    def _check_copy(self, backend: str, spec: BundleSpec, tool: str, root: dict) -> None:
        """A baseline that copied less than the bundle would make its time meaningless."""
        if backend == "s3":
            client = self.servers.s3.client()
            pages = client.get_paginator("list_objects_v2").paginate(Bucket=root["bucket"], Prefix=harness.BUNDLE_PATH + "/")
            found = sum(len(page.get("Contents", ())) for page in pages)
        else:
            found = sum(len([n for n in names if n != "manifest.json"]) for _d, _s, names in os.walk(root["target"]))
        if found != spec.count:
            raise RuntimeError("%s %s: %s left %d files at %s, expected %d" % (backend, spec.name, tool, found, root["target"], spec.count))

    def _check_changed(self, backend: str, tool: str, root: dict, source: str, changed: list) -> None:
        """An incremental baseline that missed a change (an mtime not newer, say) would look fast."""
        for path in changed[:3]:
            with open(os.path.join(source, path), "rb") as handle:
                wanted = handle.read()
            if backend == "s3":
                key = "%s/%s" % (harness.BUNDLE_PATH, path)
                found = self.servers.s3.client().get_object(Bucket=root["bucket"], Key=key)["Body"].read()
            else:
                with open(os.path.join(root["target"], path), "rb") as handle:
                    found = handle.read()
            if found != wanted:
                raise RuntimeError("%s: %s did not copy the changed %s" % (backend, tool, path))

    # -- ansible-playbook -------------------------------------------------------------------

    def ansible_playbook(self, backends, spec: BundleSpec, pristine: str) -> None:
        binary = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")
        if not os.path.exists(binary):
            binary = shutil.which("ansible-playbook")
        if not binary:
            self.notes.append("ansible-playbook not found: its measurements were skipped")
            return
        env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=harness.COLLECTIONS, ANSIBLE_NOCOLOR="1",
                   ANSIBLE_RETRY_FILES_ENABLED="0", ANSIBLE_LOCALHOST_WARNING="0",
                   ANSIBLE_INVENTORY_UNPARSED_WARNING="0")
        module_log = os.path.join(self.workdir, "module-times.jsonl")
        command = [binary, "-i", "localhost,", "-c", "local",
                   "-e", "ansible_python_interpreter=%s" % self._module_timer(module_log)]
        noop = self._playbook("noop", [{"ansible.builtin.debug": {"msg": "hello"}}])
        timing = time_command(command + [noop], env=env)
        self.ansible.append({"backend": "-", "what": "one debug task", "seconds": round(timing.seconds, 4)})
        log("  ansible-playbook one debug task %.3fs" % timing.seconds)
        for backend in backends:
            root = self.servers.fresh_root(backend, "ansible")
            task = {"distributor.core.distributor_publish": {
                "source": pristine, "pipeline": pipeline(False), "destination": destination(backend, root["storage"])},
                "register": "published"}
            check = {"ansible.builtin.assert": {"that": ["published.action == 'publish'"]}}
            if os.path.exists(module_log):
                os.unlink(module_log)
            timing = time_command(command + [self._playbook("publish-%s" % backend, [task, check])], env=env)
            with open(module_log) as handle:
                module = json.loads(handle.read().splitlines()[-1])
            inprocess = next(r for r in self.rows if r["backend"] == backend and r["bundle"] == spec.name
                             and r["phase"] == "first" and r["tool"] == "distributor")
            self.ansible.append({"backend": backend, "what": "first publish of %s" % spec.describe(),
                                 "seconds": round(timing.seconds, 4), "module_seconds": round(module["seconds"], 4),
                                 "module_cpu_seconds": round(module["cpu_seconds"], 4),
                                 "in_process_seconds": inprocess["seconds"], "in_process_cpu_seconds": inprocess["cpu_seconds"]})
            log("  ansible-playbook %s first publish %.3fs (module process %.3fs, in-process publish %.3fs)" % (
                backend, timing.seconds, module["seconds"], inprocess["seconds"]))
            if root.get("cleanup"):
                shutil.rmtree(root["cleanup"], ignore_errors=True)

    def _module_timer(self, log_path: str) -> str:
        """An ansible_python_interpreter that runs the real one and logs the module process's
        wall and CPU time, so Ansible's own share can be told from the publish's."""
        path = os.path.join(self.workdir, "module-timer")
        with open(path, "w") as handle:
            handle.write(MODULE_TIMER % {"python": sys.executable, "log": log_path})
        os.chmod(path, 0o755)
        return path

    def _playbook(self, name: str, tasks: list) -> str:
        path = os.path.join(self.workdir, "%s.yml" % name)
        play = [{"hosts": "localhost", "gather_facts": False, "tasks": tasks}]
        with open(path, "w") as handle:
            json.dump(play, handle)  # JSON is YAML
        return path

    # -- memory -----------------------------------------------------------------------------

    def peak_rss(self, backends, size: int) -> None:
        for label, file_size in (("reference", RSS_REFERENCE_SIZE), ("large", size)):
            spec = BundleSpec("rss-%s" % label, "large", 1, file_size)
            bundle = generate(os.path.join(self.workdir, "bundles", spec.name), spec, self.args.seed)
            for backend in backends:
                root = self.servers.fresh_root(backend, spec.name)
                probe = [sys.executable, os.path.join(harness.BENCH_DIR, "rss_probe.py"), bundle,
                         json.dumps(pipeline(False)), json.dumps(destination(backend, root["storage"]))]
                completed = subprocess.run(probe, capture_output=True, text=True, timeout=harness.COMMAND_TIMEOUT, check=False)
                if completed.returncode != 0:
                    raise RuntimeError("rss probe failed:\n" + completed.stdout + completed.stderr)
                result = json.loads(completed.stdout.strip().splitlines()[-1])
                result.update(backend=backend, file_size=file_size, label=label)
                self.rss.append(result)
                log("  rss %-6s %-9s floor %6.1f MiB  peak %6.1f MiB  %.2fs" % (
                    backend, human_size(file_size), result["floor_kib"] / 1024, result["peak_kib"] / 1024, result["seconds"]))
                if root.get("cleanup"):
                    shutil.rmtree(root["cleanup"], ignore_errors=True)
                elif backend == "s3":
                    self._empty_bucket(root["bucket"])
            shutil.rmtree(bundle)

    def _empty_bucket(self, bucket: str) -> None:
        """moto keeps objects until deleted; a GiB per backend is worth giving back."""
        client = self.servers.s3.client()
        for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket):
            keys = [{"Key": item["Key"]} for item in page.get("Contents", ())]
            if keys:
                client.delete_objects(Bucket=bucket, Delete={"Objects": keys, "Quiet": True})


# ---------------------------------------------------------------------------------------------
# Reporting

def ratio(mine: float, theirs: float) -> str:
    return "%.1fx" % (mine / theirs) if theirs > 0 else "-"


def seconds(row: dict) -> str:
    """Wall seconds with the CPU seconds of the client in brackets: 3.79 (1.31)."""
    return "%.2f (%.2f)" % (row["seconds"], row["cpu_seconds"])


def table(run: Run) -> list[list[str]]:
    """Rows of: backend, bundle, phase, distributor, baseline, baseline's time, ratio."""
    lines = []
    for row in run.rows:
        if row["tool"] != "distributor":
            continue
        others = [r for r in run.rows if r["tool"] != "distributor" and
                  (r["backend"], r["bundle"], r["phase"]) == (row["backend"], row["bundle"], row["phase"])]
        head = [row["backend"], row["bundle_desc"], "%s (%s)" % (row["phase"], row["action"]), seconds(row)]
        if not others:
            lines.append(head + ["-", "-", "-"])
        for index, other in enumerate(others):
            lines.append((head if index == 0 else [""] * 4) + [other["tool"], seconds(other), ratio(row["seconds"], other["seconds"])])
    return lines


HEADERS = ["backend", "bundle", "phase (action)", "distributor s (cpu)", "baseline", "baseline s (cpu)", "ratio"]


def text_table(headers, lines) -> str:
    widths = [max(len(str(x)) for x in column) for column in zip(headers, *lines)]

    def fmt(cells):
        return "  ".join(str(c).ljust(w) for c, w in zip(cells, widths)).rstrip()
    return "\n".join([fmt(headers), fmt(["-" * w for w in widths])] + [fmt(line) for line in lines])


def markdown_table(headers, lines) -> str:
    out = ["| " + " | ".join(headers) + " |", "|" + " --- |" * len(headers)]
    out += ["| " + " | ".join(str(c) for c in line) + " |" for line in lines]
    return "\n".join(out)


def extra_tables(run: Run) -> list[tuple[str, list, list]]:
    tables = []
    if run.ansible:
        lines = []
        for item in run.ansible:
            if "module_seconds" not in item:
                lines.append([item["backend"], item["what"], "%.2f" % item["seconds"], "-", "-", "-"])
                continue
            lines.append([item["backend"], item["what"], "%.2f" % item["seconds"],
                          "%.2f (%.2f)" % (item["module_seconds"], item["module_cpu_seconds"]),
                          "%.2f (%.2f)" % (item["in_process_seconds"], item["in_process_cpu_seconds"]),
                          "%.2f" % (item["seconds"] - item["module_seconds"])])
        tables.append(("ansible-playbook (small bundle, first publish)",
                       ["backend", "what", "ansible-playbook s", "module process s (cpu)", "in-process publish s (cpu)",
                        "Ansible's own s"], lines))
    if run.rss:
        lines = []
        for backend in dict.fromkeys(r["backend"] for r in run.rss):
            ref = next(r for r in run.rss if r["backend"] == backend and r["label"] == "reference")
            big = next(r for r in run.rss if r["backend"] == backend and r["label"] == "large")
            lines.append([backend, "%.0f" % (big["floor_kib"] / 1024), "%.0f" % (ref["peak_kib"] / 1024),
                          "%.0f" % (big["peak_kib"] / 1024), "%+.0f" % ((big["peak_kib"] - ref["peak_kib"]) / 1024),
                          "%.1f" % big["seconds"], "%.0f" % (big["file_size"] / MiB / big["seconds"])])
        size = human_size(run.rss[-1]["file_size"])
        tables.append(("peak RSS in MiB (one file per publish, each in a fresh process)",
                       ["backend", "after imports", "peak, %s file" % human_size(RSS_REFERENCE_SIZE),
                        "peak, %s file" % size, "growth", "%s publish s" % size, "MiB/s"], lines))
    return tables


def write_results(run: Run, meta: dict) -> tuple[str, str]:
    os.makedirs(RESULTS_DIR, exist_ok=True)
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    base = os.path.join(RESULTS_DIR, "%s-%s" % (stamp, meta["profile"]))
    with open(base + ".json", "w") as handle:
        json.dump({"meta": meta, "measurements": run.rows, "ansible": run.ansible, "rss": run.rss, "notes": run.notes}, handle, indent=2)
    parts = ["Measured %s on %s (%d cores), distributor %s, profile %s, load average %s at the start "
             "and %s at the end, whole run %.0fs.\n" % (
                 meta["finished"], meta["machine"], meta["cores"], meta["revision"], meta["profile"],
                 meta["load_start"], meta["load_end"], meta["duration_seconds"]),
             markdown_table(HEADERS, table(run))]
    for title, headers, lines in extra_tables(run):
        parts += ["", "**%s**" % title, "", markdown_table(headers, lines)]
    with open(base + ".md", "w") as handle:
        handle.write("\n".join(parts) + "\n")
    return base + ".json", base + ".md"


# ---------------------------------------------------------------------------------------------

def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--quick", action="store_true", help="smaller bundles (about a minute)")
    parser.add_argument("--backends", default=",".join(BACKENDS), help="comma-separated subset of %s" % ", ".join(BACKENDS))
    parser.add_argument("--bundles", default="small,large,markdown", help="comma-separated subset of small, large, markdown")
    parser.add_argument("--no-ansible", action="store_true", help="skip the ansible-playbook measurements")
    parser.add_argument("--no-rss", action="store_true", help="skip the peak-RSS measurements")
    parser.add_argument("--rss-size", type=int, help="file size in MiB for the peak-RSS measurement")
    parser.add_argument("--aws", help="the aws command to compare with (default: aws on PATH)")
    parser.add_argument("--seed", type=int, default=20260101, help="bundle content seed")
    parser.add_argument("--workdir", help="parent of the temporary work directory (default: the system's)")
    parser.add_argument("--keep", action="store_true", help="leave the work directory behind")
    args = parser.parse_args(argv)
    args.backends = [b for b in args.backends.split(",") if b]
    unknown = set(args.backends) - set(BACKENDS)
    if unknown:
        parser.error("unknown backend(s): %s" % ", ".join(sorted(unknown)))
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    profile = "quick" if args.quick else "full"
    specs = [s for s in PROFILES[profile]["bundles"] if s.name in args.bundles.split(",")]
    rss_size = args.rss_size * MiB if args.rss_size else PROFILES[profile]["rss_size"]
    workdir = tempfile.mkdtemp(prefix="distributor-bench-", dir=args.workdir)
    run = Run(args, workdir)
    if "s3" in args.backends and not run.aws:
        run.notes.append("no aws command found: the S3 baseline was skipped (pass --aws or run `make bench`)")
    # The SDKs are imported once here, so no measurement pays Python's import time for them.
    import boto3  # noqa: F401
    import paramiko  # noqa: F401

    load_start = "%.1f" % os.getloadavg()[0]
    if float(load_start) > 0.5:
        log("warning: load average %s: other work on this machine skews the timings" % load_start)
    started = time.monotonic()
    try:
        log("==> starting servers (%s)" % ", ".join(args.backends))
        run.servers.start(args.backends)
        pristine = {}
        for spec in specs:
            log("==> generating %s bundle: %s" % (spec.name, spec.describe()))
            pristine[spec.name] = generate(os.path.join(workdir, "bundles", spec.name), spec, args.seed)
        for backend in args.backends:
            for spec in specs:
                log("==> %s, %s bundle" % (backend, spec.name))
                run.bundle_on_backend(backend, spec, pristine[spec.name])
        small = next((s for s in specs if s.name == "small"), None)
        if not args.no_ansible and small is not None:
            log("==> ansible-playbook, small bundle")
            run.ansible_playbook(args.backends, small, pristine["small"])
        if not args.no_rss:
            log("==> peak RSS, %s file" % human_size(rss_size))
            run.peak_rss(args.backends, rss_size)
    finally:
        run.servers.stop()
        if args.keep:
            log("work directory kept: %s" % workdir)
        else:
            shutil.rmtree(workdir, ignore_errors=True)

    meta = {"profile": profile, "revision": harness.git_revision(), "machine": platform.platform(),
            "cores": os.cpu_count(), "python": platform.python_version(), "seed": args.seed,
            "aws": run.aws, "collections_path": harness.COLLECTIONS,
            "finished": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "duration_seconds": round(time.monotonic() - started, 1),
            "load_start": load_start, "load_end": "%.1f" % os.getloadavg()[0]}
    print(text_table(HEADERS, table(run)))
    for title, headers, lines in extra_tables(run):
        print("\n" + title + "\n" + text_table(headers, lines))
    for note in run.notes:
        print("note: " + note)
    json_path, md_path = write_results(run, meta)
    print("\nwhole run %.0fs; results in %s and %s" % (meta["duration_seconds"], os.path.relpath(json_path), os.path.relpath(md_path)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
