# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 40 item 10 with real parts: three web servers, each an sshd (SFTP) and an nginx in a
network namespace of its own, behind an nginx round-robin load balancer (the `web_fleet`
fixture), and a reader through the load balancer counting responses by release (each release's
marker, tests/integration/readers.py's `by_release` reader) while ansible-playbook publishes.

Hosts released one by one, each on its own (as without `release_together`), serve two releases at
once through the load balancer until the last one switched. The figures (requests by release,
errors) are printed: `-s` shows them.
"""

from __future__ import annotations

import os
import time

from conftest import reading
from readers import generation_files

PIPELINE = {"id": "site"}
CREATED = "2026-06-0%dT11:55:00Z"
SETTLE = 0.5  # seconds the reader reads on after ansible-playbook returned
# A link's ctime, the moment of its switch, comes from the kernel's coarse clock, up to a tick
# (1-10 ms) behind time.time(): a request is after a switch when it started this long after.
CLOCK_MARGIN = 0.05


def destination(host, n: int, **releases) -> dict:
    return {"id": "web%d" % n, "storage": host.sshd.storage(host.root), "path": "site",
            "releases": dict({"keep": 3}, **releases)}


def publish(bundle: str, destination: dict) -> dict:
    return {"distributor.core.distributor_publish": {"source": bundle, "pipeline": PIPELINE, "destination": destination}}


def bundles(make_bundle, *generations) -> dict:
    """{n: a bundle of generation n}: the marker and the asset readers.py recognises."""
    return {n: make_bundle(generation_files(n), id="site.example", created=CREATED % n) for n in generations}


def switched_at(fleet) -> list:
    """When each host's bundle path was last switched: the ctime of its link, renamed into place."""
    return [os.lstat(os.path.join(host.root, "site")).st_ctime for host in fleet.hosts]


def served_after(report: dict, moment: float) -> set:
    """The kinds (generations, `error`, `mismatch`) of the responses to requests started after `moment`."""
    return {kind for kind, _count, _first, last in report["timeline"] if last > moment + CLOCK_MARGIN}


def mixed(report: dict, old: int, new: int) -> int:
    """Responses of `old` served after the first one of `new`: the load balancer serving both."""
    kinds = [kind for kind, *_rest in report["timeline"]]
    if str(new) not in kinds:
        return 0
    return sum(count for kind, count, *_times in report["timeline"][kinds.index(str(new)):] if kind == str(old))


def figures(what: str, report: dict, releases: dict, window=None) -> str:
    """One line for the test's output: requests by release, errors, the window."""
    by_release = ", ".join("%s (v%s): %d" % (releases.get(int(n), "?"), n, count)
                           for n, count in sorted(report["by_generation"].items()))
    line = "\n%s: %d requests; by release: %s; errors: %d %s; mismatches: %d" % (
        what, report["requests"], by_release or "none", report["errors"], report["error_kinds"], report["mismatches"])
    return line + ("; window_seconds: %s" % window if window is not None else "")


def test_hosts_released_one_by_one_serve_two_releases_at_once_through_the_load_balancer(playbook, make_bundle, web_fleet):
    sites = bundles(make_bundle, 1, 2)
    destinations = [destination(host, n) for n, host in enumerate(web_fleet.hosts, 1)]
    first = playbook.run([publish(sites[1], each) for each in destinations])
    assert all(result["release"]["status"] == "active" for result in first), first
    with reading({"by_release": web_fleet.balancer.url}) as reports:
        second = playbook.run([publish(sites[2], each) for each in destinations])
        time.sleep(SETTLE)
    report = reports["by_release"]
    ids = {n: "/".join(result["release"]["id"] for result in results) for n, results in ((1, first), (2, second))}
    print(figures("three hosts released one by one", report, ids)
          + "; v1 served after v2's first response: %d" % mixed(report, 1, 2))

    assert all(result["release"]["status"] == "active" for result in second), second
    assert report["errors"] == 0 and report["mismatches"] == 0, report
    assert served_after(report, max(switched_at(web_fleet))) == {"2"}, report["timeline"][-5:]
    assert mixed(report, 1, 2) > 0, "the reader never saw both releases served at once: it proves nothing"

