# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue #42's fleet row: three SFTP destinations switched to one release together, the time
from the first destination's rename to the last one's (goal under 1 s; issue #40).

    python benchmarks/fleet_switch.py [--files 2000] [--rounds 5] [--quick] [--seed N]

Three sshd servers from tests/services.py, one web server each, each destination in release mode
(`keep: 3`). The bundle (2,000 x 4 KiB; 300 with --quick) is published live to all three first.
Each round then changes one file, stages the changed bundle on every destination with one new
release id (`releases: {id, activate: false, build: always}`, as the role's `release_together`
does; distributor's core `publish()` in this process: the staging is not what is measured), and
switches the fleet with one distributor_release call with `fleet`, the module process as Ansible
runs it. Each round records the result's `window_seconds` (start of the first rename to end of the
last) and the call's wall and CPU (user + sys of the process and its children: ssh's key exchange
and the three sessions are most of it); medians over the rounds. From the fourth release on, each
switch also removes the generation keep-N no longer keeps. --quick: 300 files, 3 rounds. Writes
benchmarks/results/<time>-fleet.json and .md.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from datetime import datetime, timezone

from bundles import BundleSpec, generate
from harness import pipeline, publish, run_module, services, write_results
from release_change import one_file_changed
from ansible_collections.distributor.core.plugins.module_utils._distributor.releases.rules import release_id
from ansible_collections.distributor.core.plugins.module_utils._distributor.storage.select import new_token

MODULE = "ansible_collections.distributor.core.plugins.modules.distributor_release"
HOSTS = ("web1", "web2", "web3")
KEEP = 3


def fleet(servers: list, workdir: str) -> list[dict]:
    return [{"id": host, "storage": server.storage(os.path.join(workdir, host)), "path": "site", "releases": {"keep": KEEP}}
            for host, server in zip(HOSTS, servers)]


def stage(source: str, destinations: list[dict], release: str) -> None:
    """`release` staged on every destination, as the role stages a fleet before its switch."""
    for destination_ in destinations:
        settings = dict(destination_["releases"], id=release, activate=False, build="always")
        result = publish(source, pipeline(False), dict(destination_, releases=settings), full_result=False)
        if result["release"]["id"] != release or result["release"]["status"] != "staged":
            raise RuntimeError("%s: %s not staged: %s" % (destination_["id"], release, result["release"]))


def switch(destinations: list[dict], release: str, workdir: str) -> dict:
    """One distributor_release call with `fleet`, in a process of its own: wall, CPU and window."""
    timing = run_module({"pipeline_id": "bench", "release": release, "fleet": destinations},
                        os.path.join(workdir, "switch.args.json"), MODULE)
    result = json.loads(timing.stdout)
    if result["release"] != release or not result["changed"] or result["window_seconds"] is None:
        raise RuntimeError("the fleet did not switch to %s: %s" % (release, timing.stdout[-2000:]))
    return {"window": result["window_seconds"], "wall": timing.seconds, "cpu": timing.cpu_seconds,
            "removed": sum(len(one.get("removed", [])) for one in result["destinations"])}


def measure(files: int, rounds: int, seed: int, servers: list, workdir: str) -> list[dict]:
    spec = BundleSpec("fleet", "small", files, 4096)
    source = generate(os.path.join(workdir, "bundle"), spec, seed)
    destinations = fleet(servers, workdir)
    for destination_ in destinations:
        publish(source, pipeline(False), destination_, full_result=False)
    time.sleep(1.0)  # release ids sort by their UTC second first: round 1's must not share the first publish's
    rng = random.Random(seed)
    measured = []
    for number in range(1, rounds + 1):
        one_file_changed(source, spec, rng, number)
        release = release_id(datetime.now(timezone.utc), new_token())
        stage(source, destinations, release)
        os.sync()  # the staging's dirty pages are not the switch's cost
        row = dict(switch(destinations, release, workdir), round=number, release=release)
        print("round %d: window %.4f s, switch call %.2f s (CPU %.2f s), %d generation(s) removed" % (
            number, row["window"], row["wall"], row["cpu"], row["removed"]), flush=True)
        measured.append(row)
    return measured


def summary(rows: list[dict], files: int) -> dict:
    return {"files": files, "destinations": len(HOSTS), "rounds": len(rows),
            **{key: statistics.median(row[key] for row in rows) for key in ("window", "wall", "cpu")}}


def markdown(line: dict) -> str:
    return "\n".join([
        "| case | rounds | window s (median) | switch call wall s | switch call CPU s |",
        "| --- | ---: | ---: | ---: | ---: |",
        "| fleet of %d SFTP destinations, %s x 4 KiB | %d | %.4f | %.2f | %.2f |" % (
            line["destinations"], "{:,}".format(line["files"]), line["rounds"], line["window"], line["wall"], line["cpu"]),
    ]) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--files", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seed", type=int, default=40)
    parser.add_argument("--quick", action="store_true", help="300 files, 3 rounds")
    options = parser.parse_args(argv)
    if options.quick:
        options.files, options.rounds = 300, 3
    workdir = tempfile.mkdtemp(prefix="distributor-fleet-")
    servers = []
    try:
        for _host in HOSTS:
            servers.append(services.start_sshd())
        rows = measure(options.files, options.rounds, options.seed, servers, workdir)
    finally:
        for server in servers:
            server.stop()
        shutil.rmtree(workdir, ignore_errors=True)
    line = summary(rows, options.files)
    write_results("fleet", {"rows": rows, "summary": line}, markdown(line))
    return 0


if __name__ == "__main__":
    sys.exit(main())
