# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""playbooks/fleet_release.yml (issue 40 item 9): three web servers, each an inventory host that
runs the modules itself against a local root of its own, released to one id together, or not at all."""

from __future__ import annotations

import json
import os
import re
import stat
import sys

import yaml

from conftest import PLAYBOOKS

HOSTS = ("web1", "web2", "web3")
SWITCH = "Switch each host to the release"  # the playbook's task the fault plugin waits for
CALLBACKS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "callback_plugins")
PIPELINE = {"id": "site", "outputs": [{"match": "*.md", "transform": "markdown_to_html"}, {"match": "*.png"}]}
V1 = {"index.md": b"# Version one\n", "logo.png": b"\x89PNG logo"}
V2 = dict(V1, **{"index.md": b"# Version two\n", "news.md": b"# News\n"})
V3 = dict(V2, **{"index.md": b"# Version three\n"})


def inventory(tmp_path, storage: dict) -> str:
    """Three hosts, each with a local root of its own; storage: {host: more storage settings}."""
    hosts = {host: {"ansible_connection": "local", "ansible_python_interpreter": sys.executable,
                    "fleet_destination": {"id": "web", "storage": dict({"type": "local", "root": str(tmp_path / host)}, **storage.get(host, {})),
                                          "path": "site", "releases": {"keep": 3}}} for host in HOSTS}
    path = tmp_path / "fleet-inventory.yml"
    path.write_text(yaml.safe_dump({"web": {"hosts": hosts}}))
    return str(path)


def release(playbook, tmp_path, source: str, expect_rc: int = 0, env: dict = None, storage: dict = None, hosts: str = "web") -> str:
    completed = playbook.invoke(os.path.join(PLAYBOOKS, "fleet_release.yml"), env=env, extra=(
        "-i", inventory(tmp_path, storage or {}), "-e", json.dumps({"fleet_source": source, "fleet_pipeline": PIPELINE, "fleet_hosts": hosts})))
    assert completed.returncode == expect_rc, completed.stdout + completed.stderr
    return completed.stdout


def live(tmp_path) -> dict:
    return {host: os.path.basename(os.readlink(str(tmp_path / host / "site"))) for host in HOSTS}


def home(tmp_path, host: str) -> str:
    return str(tmp_path / host / ".distributor-releases" / "site")


def statuses(tmp_path) -> dict:
    """Each host's release index: {host: {release id: status}}."""
    def read(host):
        with open(os.path.join(home(tmp_path, host), ".distributor-releases.json")) as handle:
            return {entry["id"]: entry["status"] for entry in json.load(handle)["releases"]}
    return {host: read(host) for host in HOSTS}


def test_every_host_switches_to_one_release_and_a_rerun_changes_nothing(playbook, tmp_path, make_bundle):
    release(playbook, tmp_path, make_bundle(V1, id="site.example"))
    first = live(tmp_path)
    assert len(set(first.values())) == 1, first
    assert all(b"Version one" in (tmp_path / host / "site" / "index.html").read_bytes() for host in HOSTS)

    output = release(playbook, tmp_path, make_bundle(V1, id="site.example"))
    assert "changed=0" in output and "changed=1" not in output
    assert live(tmp_path) == first


def test_a_host_that_cannot_stage_stops_every_host_from_switching(playbook, tmp_path, make_bundle):
    release(playbook, tmp_path, make_bundle(V1, id="site.example"))
    first = live(tmp_path)
    (tmp_path / "web3" / "site" / "news.html").write_bytes(b"planted by hand\n")  # in web3's live release

    output = release(playbook, tmp_path, make_bundle(V2, id="site.example", created="2026-06-05T11:55:00Z"), expect_rc=2)
    assert "no host switches to " in output and "web3 could not stage it" in output
    assert "web1 could not stage" not in output and "web2 could not stage" not in output
    assert live(tmp_path) == first  # each still serves the old release
    assert all(b"Version one" in (tmp_path / host / "site" / "index.html").read_bytes() for host in HOSTS)

    (tmp_path / "web3" / "site" / "news.html").unlink()
    release(playbook, tmp_path, make_bundle(V2, id="site.example", created="2026-06-05T11:55:00Z"))
    second = live(tmp_path)
    assert len(set(second.values())) == 1 and second != first, second
    assert all(b"Version two" in (tmp_path / host / "site" / "index.html").read_bytes() for host in HOSTS)


def fault(tmp_path) -> dict:
    """The environment that makes web3's switch fail once every host staged: as the switch task starts, web3's
    staged release loses a file (callback_plugins/fleet_switch_fault.py), and distributor_release refuses it."""
    return {"ANSIBLE_CALLBACK_PLUGINS": CALLBACKS, "ANSIBLE_CALLBACKS_ENABLED": "fleet_switch_fault",
            "FLEET_FAULT_TASK": SWITCH, "FLEET_FAULT_HOME": home(tmp_path, "web3"), "FLEET_FAULT_FILE": "index.html"}


def test_a_switch_that_fails_on_one_host_switches_the_others_back_to_the_release_each_left(playbook, tmp_path, make_bundle):
    release(playbook, tmp_path, make_bundle(V1, id="site.example"))
    release(playbook, tmp_path, make_bundle(V2, id="site.example", created="2026-06-05T11:55:00Z"), hosts="web2")  # a mixed fleet
    first = live(tmp_path)
    before = statuses(tmp_path)
    assert first["web1"] == first["web3"] != first["web2"], first

    output = release(playbook, tmp_path, make_bundle(V3, id="site.example", created="2026-06-06T11:55:00Z"), expect_rc=2, env=fault(tmp_path))
    assert "failed on web3; switched back: web1, web2; could not switch back: none" in output, output
    assert all(re.search(r"%s +: .* failed=1 " % host, output) for host in HOSTS), output  # the play failed on every host
    assert live(tmp_path) == first
    pages = {host: (tmp_path / host / "site" / "index.html").read_bytes() for host in HOSTS}
    assert b"Version one" in pages["web1"] and b"Version two" in pages["web2"] and b"Version one" in pages["web3"], pages
    [new] = set(statuses(tmp_path)["web3"]) - set(before["web3"])
    assert statuses(tmp_path) == {"web1": dict(before["web1"], **{new: "rolled_back"}), "web2": dict(before["web2"], **{new: "rolled_back"}),
                                  "web3": dict(before["web3"], **{new: "staged"})}  # web3 never switched

    release(playbook, tmp_path, make_bundle(V3, id="site.example", created="2026-06-06T11:55:00Z"))  # the fault gone
    second = live(tmp_path)
    assert len(set(second.values())) == 1 and not set(second.values()) & (set(first.values()) | {new}), second
    assert all(b"Version three" in (tmp_path / host / "site" / "index.html").read_bytes() for host in HOSTS)
    assert all(new not in statuses(tmp_path)[host] for host in HOSTS)  # the next run's switch cleared it


def test_a_first_release_whose_switch_fails_on_one_host_names_the_hosts_it_cannot_switch_back(playbook, tmp_path, make_bundle):
    output = release(playbook, tmp_path, make_bundle(V1, id="site.example"), expect_rc=2, env=fault(tmp_path))
    [new] = statuses(tmp_path)["web3"]
    assert "failed on web3; switched back: none; could not switch back (serving %s): web1, web2" % new in output, output
    assert not os.path.lexists(str(tmp_path / "web3" / "site"))


def test_hosts_with_nothing_to_change_stage_the_release_another_host_built(playbook, tmp_path, make_bundle):
    """Only web2's file mode changed (a host variable): web2 builds a release, web1 and web3 have nothing to
    change and stage the same release id in the second pass (every file a link to their live one's)."""
    bundle = make_bundle(V1, id="site.example")
    release(playbook, tmp_path, bundle)
    first = live(tmp_path)

    output = release(playbook, tmp_path, bundle, storage={"web2": {"file_mode": "0640"}})
    assert re.search(r"TASK \[Stage it on the hosts with nothing to change too\][^\n]*\n(changed: \[web[13]\]\n|skipping: \[web2\]\n){3}", output), output
    second = live(tmp_path)
    assert len(set(second.values())) == 1 and second != first, second
    modes = {host: stat.S_IMODE(os.stat(str(tmp_path / host / "site" / "index.html")).st_mode) for host in HOSTS}
    assert modes == {"web1": 0o644, "web2": 0o640, "web3": 0o644}, modes
