# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 40 item 10 with real parts: three web servers, each an sshd (SFTP) and an nginx in a
network namespace of its own, behind an nginx round-robin load balancer (the `web_fleet`
fixture), and a reader through the load balancer counting responses by release (each release's
marker, tests/integration/readers.py's `by_release` reader) while ansible-playbook publishes.

The first test is the problem: hosts released one by one, each on its own (as without
`release_together`) serve two releases at once through the load balancer until the last one
switched. The others run the role on the pipeline released together: a completed fleet publish
serves only the new release after its last switch (each host's link's ctime, its rename); one host
that cannot stage (a file planted in its live release), or cannot switch (its staged release
damaged before activation), and no response of the new release is served; staging serves nothing
new, activation and rollback switch every host. Each prints its figures (requests by release,
errors, the fleet switch's window_seconds): `-s` shows them.
"""

from __future__ import annotations

import os
import time

from conftest import reading
from generations import generation, live, statuses
from readers import ASSET, generation_files

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


def fleet_variables(fleet, bundle: str, **extra) -> dict:
    """The role's inventory: web1, web2, web3 in release mode over SFTP, one pipeline released together."""
    names = ["web%d" % n for n in range(1, len(fleet.hosts) + 1)]
    return dict({
        "distributor_destinations": {name: {"storage": host.sshd.storage(host.root), "path": "site", "releases": {"keep": 3}}
                                     for name, host in zip(names, fleet.hosts)},
        "distributor_pipelines": {"site": {"destinations": names, "release_together": True}},
        "distributor_publications": [{"pipeline": "site", "source": bundle}],
    }, **extra)


def window(results: dict):
    """window_seconds of the role's one fleet switch, None when it switched nothing."""
    switched = [fleet for fleet in results["fleets"] if "window_seconds" in fleet]
    return switched[0]["window_seconds"] if switched else None


def lives(fleet) -> list:
    return [live(host.root) for host in fleet.hosts]


def staged(fleet) -> list:
    """Each host's staged releases."""
    return [sorted(id for id, status in statuses(host.root).items() if status == "staged") for host in fleet.hosts]


def under_reader(fleet, run):
    """run() while the by_release reader reads through the load balancer; (what run returned, its counts)."""
    with reading({"by_release": fleet.balancer.url}) as reports:
        returned = run()
        time.sleep(SETTLE)
    return returned, reports["by_release"]


def fleet_of_v1(role, make_bundle, fleet) -> tuple:
    """Release 1 live on every host, published by the role as a fleet; (bundles, its id)."""
    sites = bundles(make_bundle, 1, 2)
    role(fleet_variables(fleet, sites[1]))
    [v1] = set(lives(fleet))
    return sites, v1


def switch(role, fleet, site: str, operation: str, expect_rc: int = 0, **variables):
    """The role's activate or rollback playbook on the pipeline: (output, registered results)."""
    return role(fleet_variables(fleet, site, distributor_rollback_pipeline="site", **variables), operation=operation,
                expect_rc=expect_rc, registered=True)


def test_a_fleet_publish_serves_only_the_new_release_after_its_last_switch(role, make_bundle, web_fleet):
    sites, v1 = fleet_of_v1(role, make_bundle, web_fleet)
    (output, results), report = under_reader(web_fleet, lambda: role(fleet_variables(web_fleet, sites[2]), registered=True))
    [v2] = set(lives(web_fleet))
    print(figures("fleet publish", report, {1: v1, 2: v2}, window=window(results))
          + "; v1 served after v2's first response: %d" % mixed(report, 1, 2))

    assert v2 > v1 and report["errors"] == 0 and report["mismatches"] == 0, report
    assert served_after(report, max(switched_at(web_fleet))) == {"2"}, report["timeline"][-5:]
    assert window(results) is not None and "switch window" in output, output


def test_a_fleet_that_cannot_stage_on_one_host_serves_nothing_of_the_new_release(role, make_bundle, web_fleet):
    sites, v1 = fleet_of_v1(role, make_bundle, web_fleet)
    with open(os.path.join(web_fleet.hosts[2].root, "site", "planted.html"), "wb") as handle:
        handle.write(b"someone else's")
    (output, _results), report = under_reader(web_fleet, lambda: role(fleet_variables(web_fleet, sites[2]), expect_rc=2))
    print(figures("fleet publish, web3 cannot stage", report, {1: v1}))

    assert lives(web_fleet) == [v1, v1, v1]
    assert report["by_generation"] == {"1": report["requests"]} and report["errors"] == 0, report
    assert "none switched: web3 could not stage" in output, output
    assert [len(ids) for ids in staged(web_fleet)] == [1, 1, 0], "web1 and web2 hold the new release staged (docs/fleets.md)"


def test_a_fleet_that_cannot_switch_on_one_host_switches_none(role, make_bundle, web_fleet):
    sites, v1 = fleet_of_v1(role, make_bundle, web_fleet)
    role(fleet_variables(web_fleet, sites[2], distributor_activate=False))
    [v2] = {id for ids in staged(web_fleet) for id in ids}
    os.unlink(os.path.join(generation(web_fleet.hosts[2].root, v2), ASSET))
    (output, _results), report = under_reader(web_fleet, lambda: switch(
        role, web_fleet, sites[2], "activate", expect_rc=2, distributor_release=v2))
    print(figures("fleet activation, web3's staged release damaged", report, {1: v1, 2: v2}))

    assert lives(web_fleet) == [v1, v1, v1] and staged(web_fleet) == [[v2]] * 3
    assert report["by_generation"] == {"1": report["requests"]} and report["errors"] == 0, report
    assert "web3" in output and ASSET in output, output


def test_staging_serves_nothing_new_then_activation_and_rollback_switch_every_host(role, make_bundle, web_fleet):
    sites, v1 = fleet_of_v1(role, make_bundle, web_fleet)
    (output, _results), staging = under_reader(web_fleet, lambda: role(fleet_variables(web_fleet, sites[2], distributor_activate=False)))
    [v2] = {id for ids in staged(web_fleet) for id in ids}
    print(figures("fleet staged", staging, {1: v1, 2: v2}))
    assert lives(web_fleet) == [v1, v1, v1] and staged(web_fleet) == [[v2]] * 3
    assert staging["by_generation"] == {"1": staging["requests"]} and staging["errors"] == 0, staging
    assert v2 in output

    (output, results), activation = under_reader(web_fleet, lambda: switch(
        role, web_fleet, sites[2], "activate", distributor_release=v2))
    print(figures("fleet activation", activation, {1: v1, 2: v2}, window=window(results)))
    assert lives(web_fleet) == [v2, v2, v2] and activation["errors"] == 0 and activation["mismatches"] == 0, activation
    assert served_after(activation, max(switched_at(web_fleet))) == {"2"}, activation["timeline"][-5:]

    (output, results), rollback = under_reader(web_fleet, lambda: switch(role, web_fleet, sites[2], "rollback"))
    print(figures("fleet rollback", rollback, {1: v1, 2: v2}, window=window(results)))
    assert lives(web_fleet) == [v1, v1, v1] and rollback["errors"] == 0 and rollback["mismatches"] == 0, rollback
    assert served_after(rollback, max(switched_at(web_fleet))) == {"1"}, rollback["timeline"][-5:]
