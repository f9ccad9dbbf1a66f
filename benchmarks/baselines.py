# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The tools an operator would otherwise use for the same copy, run against the same servers.

Each baseline copies the bundle directory to the place distributor publishes it (the bundle
path under a fresh root). They check nothing (no manifest, no hashes), keep no state, take no
lock and, except `rsync --fsync`, do not fsync: the ratios show what distributor's guarantees
cost, not a like-for-like race.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from typing import Callable

from harness import Timing, services, time_command

MANIFEST = "manifest.json"


@dataclass(frozen=True)
class Baseline:
    name: str
    backend: str
    incremental: bool  # copies only what changed (rsync, aws s3 sync); else every file, every time
    run: Callable[[str, dict], Timing]  # (bundle directory, fresh_root() result) -> timing


def _ssh_options(server) -> list[str]:
    return ["-i", server.private_key_file, "-o", "UserKnownHostsFile=%s" % server.known_hosts_file,
            "-o", "StrictHostKeyChecking=yes", "-o", "BatchMode=yes", "-o", "IdentitiesOnly=yes"]


def _cp(source: str, root: dict) -> Timing:
    os.makedirs(root["target"], exist_ok=True)
    return time_command(["cp", "-r", source + "/.", root["target"]])


def _rsync_local(*extra: str):
    def run(source: str, root: dict) -> Timing:
        return time_command(["rsync", "-a", *extra, "--exclude=/" + MANIFEST, source + "/", root["target"] + "/"])
    return run


def _sftp_put(server, workdir: str):
    """OpenSSH sftp in batch mode: `put -r` of the whole tree (sftp has no notion of changes)."""
    def run(source: str, root: dict) -> Timing:
        batch = os.path.join(workdir, "sftp-batch")
        with open(batch, "w") as handle:
            handle.write("-mkdir %s\nput -r %s/. %s\n" % (os.path.dirname(root["target"]), source, root["target"]))
        return time_command(["sftp", "-q", "-b", batch, "-P", str(server.port), *_ssh_options(server),
                             "%s@%s" % (server.username, server.host)])
    return run


def _rsync_ssh(server, *extra: str):
    def run(source: str, root: dict) -> Timing:
        shell = " ".join(["ssh", "-p", str(server.port), *_ssh_options(server)])
        return time_command(["rsync", "-a", *extra, "-e", shell, "--exclude=/" + MANIFEST, source + "/",
                             "%s@%s:%s/" % (server.username, server.host, root["target"])])
    return run


def aws_env(workdir: str) -> dict:
    """The aws command with the test credentials and nothing from the user's own configuration."""
    env = dict(os.environ)
    env.update(AWS_ACCESS_KEY_ID=services.TEST_ACCESS_KEY, AWS_SECRET_ACCESS_KEY=services.TEST_SECRET_KEY,
               AWS_DEFAULT_REGION=services.TEST_REGION, AWS_CONFIG_FILE=os.path.join(workdir, "no-aws-config"),
               AWS_SHARED_CREDENTIALS_FILE=os.path.join(workdir, "no-aws-credentials"), AWS_PAGER="")
    env.pop("AWS_PROFILE", None)
    env.pop("AWS_SESSION_TOKEN", None)
    return env


def _aws_sync(aws: str, server, workdir: str):
    def run(source: str, root: dict) -> Timing:
        return time_command([aws, "s3", "sync", source, root["target"], "--endpoint-url", server.endpoint_url,
                             "--exclude", MANIFEST, "--only-show-errors", "--no-progress"], env=aws_env(workdir))
    return run


def find_aws(explicit: str | None) -> str | None:
    """The aws command to compare with: --aws, else the first on PATH; None skips that baseline."""
    return explicit or shutil.which("aws")


def baselines(backend: str, servers, workdir: str, aws: str | None) -> list[Baseline]:
    """The baselines for `backend` whose programs are installed (rsync may not be; `aws` is
    checked by find_aws)."""
    return [b for b in _all(backend, servers, workdir, aws) if b.name.startswith("aws ") or shutil.which(b.name.split()[0])]


def _all(backend: str, servers, workdir: str, aws: str | None) -> list[Baseline]:
    if backend == "local":
        return [Baseline("cp -r", backend, False, _cp),
                Baseline("rsync -a", backend, True, _rsync_local()),
                Baseline("rsync -a --fsync", backend, True, _rsync_local("--fsync"))]
    if backend == "sftp":
        return [Baseline("sftp -b put -r", backend, False, _sftp_put(servers.sshd, workdir)),
                Baseline("rsync -e ssh", backend, True, _rsync_ssh(servers.sshd)),
                # The one that, like distributor, makes every file durable (the server's rsync fsyncs).
                Baseline("rsync -a --fsync -e ssh", backend, False, _rsync_ssh(servers.sshd, "--fsync"))]
    if backend == "s3":
        return [Baseline("aws s3 sync", backend, True, _aws_sync(aws, servers.s3, workdir))] if aws else []
    raise ValueError(backend)
