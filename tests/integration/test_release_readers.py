# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The readers of issue 30's item 3, proven on a stand-in switcher before releases exist.

Three reader processes (tests/integration/readers.py: a directory descriptor, files by name, HTTP
through nginx with the server block docs/releases.md recommends) read a bundle path while it is
switched 100 times. Switched the way a release must be (a new link at a temporary name renamed
over the bundle path) they see only whole generations; switched the way deploy scripts often do
(`rm` then `ln -s`) they catch the moment the bundle path is absent, and published in place (file
after file, as without releases) the descriptor reader catches a marker and an asset of two
generations: a clean run of theirs means something.

`stand_in(www, switch)` is the only part the release test replaces: `release_publishes` makes
generation n by one release publish (the core's `publish()`, in this process) of a bundle holding
`readers.generation_files(n)`, passed to `conftest.under_readers` the same way.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from datetime import datetime, timedelta, timezone

from ansible_collections.distributor.core.plugins.module_utils._distributor.operations.publish import publish

from conftest import problems, under_readers
from generations import generations, live, make_site, release_destination, statuses
from hangs import no_hang
from readers import ASSET, MARKER, generation_files

NAME = "site"
HOME = os.path.join(".distributor-releases", NAME)
PUBLISHES = 100
DEADLINE = 50  # seconds for a whole test; it takes a few


def build_generation(www: str, n: int) -> str:
    """Generation n complete on disk beside the bundle path; its link target (relative)."""
    target = os.path.join(HOME, str(n))
    for path, data in generation_files(n).items():
        full = os.path.join(www, target, path)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "wb") as handle:
            handle.write(data)
    return target


def atomic_switch(www: str, target: str) -> None:
    """What a release switch does: a new link at a temporary name, renamed over the bundle path."""
    temporary = os.path.join(www, HOME, ".distributor.switch.%d" % os.getpid())
    os.symlink(target, temporary)
    os.rename(temporary, os.path.join(www, NAME))


def removing_switch(www: str, target: str) -> None:
    """What releases must never do: remove the link, then make the new one (`rm; ln -s`)."""
    subprocess.run(["rm", NAME], cwd=www, check=True)
    subprocess.run(["ln", "-s", target, NAME], cwd=www, check=True)


def in_place(www: str, target: str) -> None:
    """What a publish without releases does: each file of the new generation renamed over its
    old one in the live directory, assets first, with the rest of the publish's work between."""
    for path in (ASSET, MARKER):
        staged = os.path.join(www, NAME, path + ".distributor.tmp")
        shutil.copyfile(os.path.join(www, target, path), staged)
        os.rename(staged, os.path.join(www, NAME, path))
        time.sleep(0.001)


def stand_in(www: str, switch):
    """publish(n): generation n built, then switched to; a pause stands for the rest of a
    publish, so that readers read each generation a while."""
    def publish(n: int) -> None:
        switch(www, build_generation(www, n))
        time.sleep(0.005)
    return publish


def readers_through(tmp_path, nginx, switch) -> dict:
    www = str(tmp_path / "www")
    atomic_switch(www, build_generation(www, 0))
    server = nginx(os.path.join(www, NAME))
    started = time.monotonic()
    with no_hang(DEADLINE, "%d switches under three readers" % PUBLISHES):
        reports = under_readers(os.path.join(www, NAME), server.url, stand_in(www, switch), PUBLISHES)
    print("%s: %.1fs, %s" % (switch.__name__, time.monotonic() - started, reports))
    return reports


def test_readers_see_one_whole_generation_while_the_bundle_path_is_renamed_over_100_times(tmp_path, nginx):
    reports = readers_through(tmp_path, nginx, atomic_switch)

    assert problems(reports) == []


def test_readers_catch_a_switch_that_removes_the_bundle_path_before_linking_it_again(tmp_path, nginx):
    reports = readers_through(tmp_path, nginx, removing_switch)

    absent = reports["by_name"]["error_kinds"].get("ENOENT", 0) + reports["http"]["error_kinds"].get("404", 0)
    assert absent > 0, reports
    assert all(report["mismatches"] == 0 for report in reports.values()), reports


def test_the_descriptor_reader_catches_a_publish_in_place_that_mixes_two_generations(tmp_path, nginx):
    reports = readers_through(tmp_path, nginx, in_place)

    assert reports["descriptor"]["mismatches"] > 0, reports
    assert all(report["errors"] == 0 for report in reports.values()), reports


START = datetime(2026, 6, 4, 12, 0, tzinfo=timezone.utc)


def release_publishes(tmp_path, www: str):
    """publish(n): one release publish of generation n's bundle (made beforehand, so that the
    publishes follow each other as fast as they run), each a second later than the one before."""
    destination = release_destination({"type": "local", "root": www})
    bundles = [make_site(str(tmp_path / ("bundle-%d" % n)), generation_files(n),
                         (START + timedelta(seconds=n)).strftime("%Y-%m-%dT%H:%M:%SZ")) for n in range(PUBLISHES + 1)]
    done = []

    def publish_n(n: int) -> None:
        result = publish(bundles[n], {"id": "site"}, destination, now=START + timedelta(seconds=n, milliseconds=500))
        assert result["release"]["status"] == "active" and result["written"] == [ASSET, MARKER], result
        done.append(result["release"]["id"])
    return publish_n, done


def test_readers_see_one_whole_generation_throughout_100_release_publishes(tmp_path, nginx):
    www = str(tmp_path / "www")
    publish_n, done = release_publishes(tmp_path, www)
    publish_n(0)
    server = nginx(os.path.join(www, NAME))
    started = time.monotonic()
    with no_hang(DEADLINE, "%d release publishes under three readers" % PUBLISHES):
        reports = under_readers(os.path.join(www, NAME), server.url, publish_n, PUBLISHES)
    took = time.monotonic() - started
    print("\n%d release publishes in %.1fs; %s" % (PUBLISHES, took, "; ".join(
        "%s: %d reads%s, %d errors, %d mismatches, %d generations" % (
            kind, r["reads"], " (%d requests)" % r["requests"] if "requests" in r else "", r["errors"], r["mismatches"],
            r["generations"]) for kind, r in reports.items())))

    assert problems(reports) == []
    assert len(done) == PUBLISHES + 1 and live(www) == done[-1]
    assert generations(www) == set(done[-3:])
    assert statuses(www) == {done[-3]: "superseded", done[-2]: "superseded", done[-1]: "active"}
