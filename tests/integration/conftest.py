# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Run the real ansible-playbook against localhost and read back what the modules returned."""

from __future__ import annotations

import contextlib
import json
import os
import re
import selectors
import subprocess
import sys
import time

import pytest
import yaml

from ansible_collections.distributor.core.plugins.module_utils._distributor.records.manifest_build import create_manifest
from network import WebFleet
from services import NGINX, _die_with_parent, start_nginx

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
INSTALLED = os.path.join(REPO_ROOT, ".build", "collections")
PLAYBOOKS = os.path.join(REPO_ROOT, "playbooks")
VENV_BIN = os.path.dirname(sys.executable)
READERS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "readers.py")
READY_SECONDS = 20
# Each task's result, written by a test-only callback (callback_plugins/task_results.py).
RESULTS_CALLBACK = {"ANSIBLE_CALLBACK_PLUGINS": os.path.join(os.path.dirname(os.path.abspath(__file__)), "callback_plugins"),
                    "ANSIBLE_CALLBACKS_ENABLED": "task_results"}


def collections_path() -> str:
    """The collection as `make collection` built and installed it, like a user gets it."""
    path = os.environ.get("DISTRIBUTOR_COLLECTIONS_PATH", INSTALLED)
    if not os.path.isdir(os.path.join(path, "ansible_collections", "distributor", "core")):
        pytest.fail("the collection is not installed under %s; run `make collection` first" % path)
    return path


class Playbook:
    """Writes a one-play playbook, runs ansible-playbook, returns each task's result as `register` keeps it."""

    def __init__(self, workdir: str):
        self.workdir = workdir
        self.runs = 0

    def run(self, tasks: list, check: bool = False, diff: bool = False, expect_rc: int = 0) -> list:
        self.runs += 1
        results = os.path.join(self.workdir, "results-%d.json" % self.runs)
        play_tasks = [dict(task, register="r%d" % i, ignore_errors=True) for i, task in enumerate(tasks)]
        playbook = os.path.join(self.workdir, "play-%d.yml" % self.runs)
        with open(playbook, "w") as handle:
            yaml.safe_dump([{"hosts": "localhost", "gather_facts": False, "tasks": play_tasks}], handle)
        completed = self.invoke(playbook, check=check, diff=diff, env=dict(RESULTS_CALLBACK, DISTRIBUTOR_TEST_RESULTS=results))
        assert completed.returncode == expect_rc, completed.stdout + completed.stderr
        with open(results) as handle:
            return json.load(handle)

    @staticmethod
    def env() -> dict:
        return dict(os.environ, ANSIBLE_COLLECTIONS_PATH=collections_path(), ANSIBLE_NOCOLOR="1",
                    ANSIBLE_RETRY_FILES_ENABLED="0", ANSIBLE_LOCALHOST_WARNING="0", ANSIBLE_INVENTORY_UNPARSED_WARNING="0",
                    PATH=VENV_BIN + os.pathsep + os.environ.get("PATH", ""))

    @staticmethod
    def command(playbook: str, check: bool = False, diff: bool = False, extra: tuple = ()) -> list:
        command = [os.path.join(VENV_BIN, "ansible-playbook"), "-i", "localhost,", "-c", "local",
                   "-e", "ansible_python_interpreter=%s" % sys.executable, playbook]
        return command + (["--check"] if check else []) + (["--diff"] if diff else []) + list(extra)

    def invoke(self, playbook: str, check: bool = False, diff: bool = False, extra: tuple = (), env: dict = None) -> subprocess.CompletedProcess:
        return subprocess.run(self.command(playbook, check, diff, extra), env=dict(self.env(), **(env or {})), capture_output=True,
                              text=True, timeout=300, check=False)

    def publish(self, check: bool = False, diff: bool = False, **args) -> dict:
        return self.run([{"distributor.core.distributor_publish": args}], check=check, diff=diff)[0]


@pytest.fixture
def playbook(tmp_path):
    return Playbook(str(tmp_path))


@pytest.fixture
def make_bundle(tmp_path):
    """make_bundle(files, id=..., created=...) -> directory of a bundle with a correct manifest."""
    counter = iter(range(1000))

    def make(files: dict, id: str = "reports.example", created: str = "2026-06-04T11:55:00Z") -> str:
        directory = tmp_path / ("bundle-%d" % next(counter))
        for path, data in files.items():
            target = directory / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        directory.mkdir(exist_ok=True)
        create_manifest(str(directory), id, created, sorted(files))
        return str(directory)

    return make


# What a check of the role prints to approve its plans: the extra variables for the run.
RECORDED = "Record the role's results"
APPROVAL = re.compile(r"run the same command without --check, adding: (-e '\{distributor_expected_plans: \{[^']*\}\}')")


@pytest.fixture
def role(playbook, tmp_path):
    """role(variables, operation=..., check=..., diff=..., expect_rc=...) -> (ansible-playbook
    output, the role's registered results) after running playbooks/<operation>.yml with
    `variables` as the inventory's group variables; with `registered=True` the whole registered
    variable (its `fleets` too) in place of its results."""
    runs = iter(range(100))

    def run(variables: dict, operation: str = "publish", check: bool = False, diff: bool = False,
            expect_rc: int = 0, extra: tuple = (), registered: bool = False):
        run_dir = tmp_path / ("run-%d" % next(runs))
        (run_dir / "inventory" / "group_vars").mkdir(parents=True)
        hosts = {"distributor_publishers": {"hosts": {"localhost": {
            "ansible_connection": "local", "ansible_python_interpreter": sys.executable}}}}
        (run_dir / "inventory" / "hosts.yml").write_text(yaml.safe_dump(hosts))
        (run_dir / "inventory" / "group_vars" / "distributor_publishers.yml").write_text(yaml.safe_dump(variables))
        results = run_dir / "results.json"
        site = [
            {"import_playbook": os.path.join(PLAYBOOKS, operation + ".yml")},
            {"name": "Record the role's results", "hosts": "distributor_publishers", "gather_facts": False, "tasks": [{
                "name": RECORDED, "ansible.builtin.set_fact": {"recorded": "{{ distributor_%s_results }}" % operation},
            }]},
        ]
        (run_dir / "site.yml").write_text(yaml.safe_dump(site, sort_keys=False))
        completed = playbook.invoke(str(run_dir / "site.yml"), check=check, diff=diff,
                                    extra=("-i", str(run_dir / "inventory")) + extra,
                                    env=dict(RESULTS_CALLBACK, DISTRIBUTOR_TEST_RESULTS=str(results), DISTRIBUTOR_TEST_RESULTS_TASK=RECORDED))
        assert completed.returncode == expect_rc, completed.stdout + completed.stderr
        recorded = json.loads(results.read_text()) if results.exists() else []
        if not recorded:
            return completed.stdout, None
        variable = recorded[0]["ansible_facts"]["recorded"]
        return completed.stdout, variable if registered else variable["results"]

    return run


def tree(root) -> dict:
    """Every file under `root` as {relative path: bytes}, for asserting what a publish left."""
    found = {}
    for directory, _dirs, files in os.walk(str(root)):
        for name in files:
            full = os.path.join(directory, name)
            with open(full, "rb") as handle:
                found[os.path.relpath(full, str(root))] = handle.read()
    return found


class Backend:
    """One destination root on one backend, with independent ways to look at and tamper with
    it: the local filesystem for local and SFTP (sshd serves this machine), boto3 for S3."""

    def __init__(self, name: str, storage: dict, local_root=None, s3=None):
        self.name = name
        self.storage = storage
        self.local_root = local_root
        self.s3 = s3

    def _key(self, path: str) -> str:
        prefix = self.storage.get("prefix") or ""
        return (prefix.rstrip("/") + "/" + path) if prefix else path

    def files(self, under: str = "") -> dict:
        """{path relative to `under`: bytes} of every file below it (reserved names included)."""
        if self.local_root is not None:
            return tree(os.path.join(str(self.local_root), under)) if os.path.isdir(os.path.join(str(self.local_root), under)) else {}
        client, bucket = self.s3
        prefix = self._key(under).rstrip("/") + "/" if under or self.storage.get("prefix") else ""
        found = {}
        for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
            for item in page.get("Contents", []):
                found[item["Key"][len(prefix):]] = client.get_object(Bucket=bucket, Key=item["Key"])["Body"].read()
        return found

    def put(self, path: str, data: bytes) -> None:
        """Content distributor does not manage, placed by someone else."""
        if self.local_root is not None:
            target = os.path.join(str(self.local_root), path)
            os.makedirs(os.path.dirname(target), exist_ok=True)
            with open(target, "wb") as handle:
                handle.write(data)
        else:
            client, bucket = self.s3
            client.put_object(Bucket=bucket, Key=self._key(path), Body=data)

    def remove(self, path: str) -> None:
        """A file deleted behind distributor's back."""
        if self.local_root is not None:
            os.unlink(os.path.join(str(self.local_root), path))
        else:
            client, bucket = self.s3
            client.delete_object(Bucket=bucket, Key=self._key(path))

    def state(self, under: str = "") -> dict:
        return json.loads(self.files(under)[".distributor.json"])


@pytest.fixture(params=["local", "sftp", "s3"])
def backend(request, tmp_path):
    """The same scenario on every backend: a fresh root per test."""
    if request.param == "local":
        root = tmp_path / "root"
        return Backend("local", {"type": "local", "root": str(root)}, local_root=root)
    if request.param == "sftp":
        server = request.getfixturevalue("sshd_server")
        root = tmp_path / "sftp-root"
        return Backend("sftp", server.storage(str(root)), local_root=root)
    server = request.getfixturevalue("s3_server")
    bucket = server.create_bucket()
    return Backend("s3", server.storage(bucket, prefix="site"), s3=(server.client(), bucket))


def recommended_nginx_server() -> str:
    """The `server` block docs/releases.md recommends for serving releases: the tests serve
    exactly what users are told to write."""
    with open(os.path.join(REPO_ROOT, "docs", "releases.md"), encoding="utf-8") as handle:
        text = handle.read()
    start = text.index("\n## Serving releases from a web server\n")
    end = text.find("\n## ", start + 1)
    [block] = re.findall(r"```nginx\n(.*?)```", text[start:end if end >= 0 else len(text)], re.S)
    return block


@pytest.fixture
def nginx():
    """serve(root) -> a running nginx (its `url`) serving `root`, a bundle path that may be a
    symbolic link, with the recommended server block; its own port on 127.0.0.1, its own
    configuration, pid and logs in a temporary directory, stopped at the end of the test."""
    if not os.access(NGINX, os.X_OK):
        pytest.fail("%s is missing: install Debian's nginx package (see .ci/run)" % NGINX)
    servers = []

    def serve(root: str):
        servers.append(start_nginx(str(root), recommended_nginx_server()))
        return servers[-1]

    yield serve
    for server in servers:
        server.stop()


@pytest.fixture
def web_fleet(tmp_path):
    """Three web servers (web1, web2, web3) behind a round-robin load balancer, each in a network
    namespace of its own with its sshd and its nginx serving `<root>/site` with the recommended
    server block (tests/network.py's WebFleet); everything stopped at the end of the test."""
    roots = [tmp_path / name for name in ("web1", "web2", "web3")]
    for root in roots:
        root.mkdir()
    fleet = WebFleet(roots, "site", recommended_nginx_server())
    yield fleet
    fleet.stop()


def _ready(kind: str, process: subprocess.Popen) -> None:
    with selectors.DefaultSelector() as selector:  # select.select refuses descriptors past 1023
        selector.register(process.stdout, selectors.EVENT_READ)
        waited = selector.select(READY_SECONDS)
    line = process.stdout.readline() if waited else "no read succeeded within %ds\n" % READY_SECONDS
    if line != "ready\n":
        process.kill()
        _out, err = process.communicate()
        raise AssertionError("the %s reader never read a whole generation before switching began: %s%s"
                             % (kind, line, err))


@contextlib.contextmanager
def reading(targets: dict, seconds: float = 120):
    """The readers of readers.py ({kind: its bundle path or URL}) reading while the body runs;
    yields a dict that holds {kind: its counts} once the body is done. Each reader has read a
    whole generation before the body starts, and stops after it, or after `seconds` whatever
    happens here."""
    processes = {kind: subprocess.Popen([sys.executable, READERS, kind, target, str(seconds)], stdin=subprocess.DEVNULL,
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                        preexec_fn=_die_with_parent)
                 for kind, target in targets.items()}
    reports = {}
    try:
        for kind, process in processes.items():
            _ready(kind, process)
        yield reports
    finally:
        for process in processes.values():
            if process.poll() is None:
                process.terminate()
    for kind, process in processes.items():
        out, err = process.communicate(timeout=30)
        if process.returncode != 0 or not out.strip():
            raise AssertionError("the %s reader failed (exit %s): %s" % (kind, process.returncode, err))
        reports[kind] = json.loads(out.splitlines()[-1])


def under_readers(bundle_path: str, url: str, publish, publishes: int = 100, settle: float = 0.2,
                  seconds: float = 120) -> dict:
    """Runs publish(1) ... publish(publishes) while the three readers read; {kind: its counts}.

    `publish(n)` makes generation n (`readers.generation_files(n)`) live at `bundle_path` by
    whatever is under test: a stand-in switcher, or one release publish. Generation 0 must be
    live, and `url` served from `bundle_path`, before the call. The readers (tests/integration/
    readers.py) start first and each has read a whole generation before the first publish; they
    read on for `settle` seconds after the last one (so each sees where it ended)."""
    with reading({"descriptor": bundle_path, "by_name": bundle_path, "http": url}, seconds) as reports:
        for n in range(1, publishes + 1):
            publish(n)
        time.sleep(settle)
    return reports


def problems(reports: dict) -> list:
    """What the readers saw that a whole-generation switch must never show; [] when nothing."""
    found = []
    for kind, report in reports.items():
        if report["reads"] == 0 or report["generations"] < 2:
            found.append("%s reader: %d reads over %d generation(s): it proves nothing"
                         % (kind, report["reads"], report["generations"]))
        if report["errors"] or report["mismatches"]:
            found.append("%s reader: %d errors %s, %d mismatches in %d reads"
                         % (kind, report["errors"], report["error_kinds"], report["mismatches"], report["reads"]))
    return found
