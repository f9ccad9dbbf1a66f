# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What every benchmark script shares: the import path, the servers, one destination per backend.

The collection is imported as `ansible_collections.distributor.core`, from the installed build
when ANSIBLE_COLLECTIONS_PATH (or DISTRIBUTOR_COLLECTIONS_PATH) holds one (`make bench` builds
it), else from this checkout linked into that layout under .build/src, as the unit tests do.
The servers come from tests/services.py: the same OpenSSH sshd and moto S3 server the
integration tests use, on 127.0.0.1 only.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time
from dataclasses import dataclass, field

BENCH_DIR = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.dirname(BENCH_DIR)
TESTS_DIR = os.path.join(REPO_ROOT, "tests")
SOURCE_COLLECTIONS = os.path.join(REPO_ROOT, ".build", "src")
COLLECTION_PARTS = ("ansible_collections", "distributor", "core")

PIPELINE_ID = "bench"
BUNDLE_PATH = "site"
COMMAND_TIMEOUT = 900  # seconds; no single step of a benchmark may run longer


def _installed(path: str | None) -> str | None:
    for candidate in (path or "").split(os.pathsep):
        if candidate and os.path.isdir(os.path.join(candidate, *COLLECTION_PARTS)):
            return os.path.abspath(candidate)
    return None


def _link_source() -> str:
    """This checkout as ansible_collections/distributor/core under .build/src."""
    link = os.path.join(SOURCE_COLLECTIONS, *COLLECTION_PARTS)
    if os.path.realpath(link) != REPO_ROOT:
        os.makedirs(os.path.dirname(link), exist_ok=True)
        if os.path.islink(link):
            os.unlink(link)
        os.symlink(os.path.relpath(REPO_ROOT, os.path.dirname(link)), link)
    return SOURCE_COLLECTIONS


def collections_path() -> str:
    """Where ansible_collections/distributor/core is found, for imports and ansible-playbook."""
    return (_installed(os.environ.get("DISTRIBUTOR_COLLECTIONS_PATH"))
            or _installed(os.environ.get("ANSIBLE_COLLECTIONS_PATH"))
            or _link_source())


COLLECTIONS = collections_path()
for _path in (COLLECTIONS, TESTS_DIR):
    if _path not in sys.path:
        sys.path.insert(0, _path)

# Found through the sys.path set just above; the other benchmark scripts import these from here.
import services  # noqa: E402
from ansible_collections.distributor.core.plugins.module_utils._distributor.records.manifest_build import create_manifest  # noqa: E402
from ansible_collections.distributor.core.plugins.module_utils._distributor.operations.publish import publish  # noqa: E402

__all__ = ["create_manifest", "publish", "services"]


def git_revision() -> str:
    """The commit measured, with `+dirty` when the work tree differs from it."""
    def git(*args):
        return subprocess.run(["git", "-C", REPO_ROOT, *args], capture_output=True, text=True, check=False).stdout.strip()

    head = git("rev-parse", "--short", "HEAD") or "unknown"
    return head + ("+dirty" if git("status", "--porcelain", "--untracked-files=no", "--", "plugins") else "")


def write_results(name: str, data: dict, table: str) -> str:
    """benchmarks/results/<time>-<name>.json (`data` with the revision and load average) and
    .md (`table`); prints the table. Returns the path without its extension."""
    results = os.path.join(BENCH_DIR, "results")
    os.makedirs(results, exist_ok=True)
    stem = os.path.join(results, time.strftime("%Y%m%dT%H%M%S") + "-" + name)
    meta = {"revision": git_revision(), "load": os.getloadavg(), "cpus": os.cpu_count()}
    with open(stem + ".json", "w") as handle:
        json.dump(dict(data, meta=meta), handle, indent=1)
    with open(stem + ".md", "w") as handle:
        handle.write(table)
    print(table)
    print("load average %s; wrote %s.json and .md" % (meta["load"], stem))
    return stem


# ---------------------------------------------------------------------------------------------
# Timing


@dataclass
class Timing:
    seconds: float
    cpu_seconds: float  # user + system of the process that did the work (this one, or the child)
    detail: dict = field(default_factory=dict)
    stdout: str = ""  # a command's output, where a module's result is read from


def _cpu(who: int) -> float:
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime


def time_call(func, *args, **kwargs) -> tuple[Timing, object]:
    """Wall and CPU time of an in-process call (CPU of this process: threads included)."""
    cpu0, t0 = _cpu(resource.RUSAGE_SELF), time.perf_counter()
    value = func(*args, **kwargs)
    return Timing(time.perf_counter() - t0, _cpu(resource.RUSAGE_SELF) - cpu0), value


def time_command(command: list, env: dict | None = None, cwd: str | None = None) -> Timing:
    """Wall and CPU time of a subprocess (CPU of its children too, e.g. ssh under rsync).
    A failing baseline is an error of the benchmark, not a result: it raises with its output."""
    cpu0, t0 = _cpu(resource.RUSAGE_CHILDREN), time.perf_counter()
    completed = subprocess.run(command, env=env, cwd=cwd, capture_output=True, text=True,
                               timeout=COMMAND_TIMEOUT, check=False)
    timing = Timing(time.perf_counter() - t0, _cpu(resource.RUSAGE_CHILDREN) - cpu0, stdout=completed.stdout)
    if completed.returncode != 0:
        raise RuntimeError("%s failed (exit %d):\n%s%s" % (
            " ".join(command[:3]), completed.returncode, completed.stdout[-2000:], completed.stderr[-2000:]))
    return timing


# ---------------------------------------------------------------------------------------------
# Backends: a fresh destination root per measurement, for distributor and for the baselines


class Backends:
    """The servers a run needs, started lazily and stopped together."""

    def __init__(self, workdir: str):
        self.workdir = workdir
        self.sshd = None
        self.s3 = None
        self._roots = 0

    def start(self, names) -> None:
        if "sftp" in names and self.sshd is None:
            self.sshd = services.start_sshd()
        if "s3" in names and self.s3 is None:
            self.s3 = services.start_s3()

    def stop(self) -> None:
        for server in (self.sshd, self.s3):
            if server is not None:
                server.stop()
        self.sshd = self.s3 = None

    def fresh_root(self, backend: str, label: str) -> dict:
        """A new empty destination root: {'storage': ..., 'target': where baselines copy to}.

        `target` is the directory (local, sftp) or s3:// URL that corresponds to the bundle path
        distributor publishes to, so both sides produce the same tree.
        """
        self._roots += 1
        name = "%s-%s-%d" % (backend, label, self._roots)
        if backend == "s3":
            bucket = self.s3.create_bucket()
            return {"storage": self.s3.storage(bucket), "target": "s3://%s/%s" % (bucket, BUNDLE_PATH),
                    "bucket": bucket, "cleanup": None}
        root = os.path.join(self.workdir, "dest", name)
        os.makedirs(root)
        storage = {"type": "local", "root": root} if backend == "local" else self.sshd.storage(root)
        return {"storage": storage, "target": os.path.join(root, BUNDLE_PATH), "cleanup": root}


MODULE = "ansible_collections.distributor.core.plugins.modules.distributor_publish"


def run_module(arguments: dict, args: str, module: str = MODULE, tree: str = COLLECTIONS) -> Timing:
    """A module as Ansible runs it on the target: a Python process that imports `module` from
    the collection copy `tree` and reads its `arguments` from the file `args`. Its CPU is what
    the per-file targets compare; its result is the Timing's stdout."""
    with open(args, "w") as handle:
        json.dump({"ANSIBLE_MODULE_ARGS": arguments}, handle)
    return time_command([sys.executable, "-m", module, args], env=dict(os.environ, PYTHONPATH=os.path.abspath(tree)))


def module_from(tree: str, site: str = "site"):
    """A runner (source, root) -> Timing of distributor_publish imported from the collection
    copy `tree` (a commit's checkout), publishing in place to `root`/`site`: what the rows
    compare between two trees in the same rounds."""
    def run(source: str, root: str) -> Timing:
        return run_module({"source": source, "pipeline": {"id": "bench"}, "destination": {
            "id": "bench", "storage": {"type": "local", "root": root}, "path": site}}, root + ".args.json", tree=tree)
    return run


def module_process(source: str, markdown: bool, destination_: dict, workdir: str) -> Timing:
    """distributor_publish in a process of its own (run_module) from the installed collection."""
    return run_module({"source": source, "pipeline": pipeline(markdown), "destination": destination_},
                      os.path.join(workdir, "args.json"))


def destination(backend: str, storage: dict) -> dict:
    return {"id": "bench-%s" % backend, "storage": storage, "path": BUNDLE_PATH}


def pipeline(markdown: bool) -> dict:
    if markdown:
        return {"id": PIPELINE_ID, "outputs": [{"match": "**/*.md", "transform": "markdown_to_html"}]}
    return {"id": PIPELINE_ID}
