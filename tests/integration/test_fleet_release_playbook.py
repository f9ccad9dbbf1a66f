# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""playbooks/fleet_release.yml (issue 40 item 9): three web servers, each an inventory host that
runs the modules itself against a local root of its own, released to one id together, or not at all."""

from __future__ import annotations

import json
import os
import sys

import yaml

from conftest import PLAYBOOKS

HOSTS = ("web1", "web2", "web3")
PIPELINE = {"id": "site", "outputs": [{"match": "*.md", "transform": "markdown_to_html"}, {"match": "*.png"}]}
V1 = {"index.md": b"# Version one\n", "logo.png": b"\x89PNG logo"}
V2 = dict(V1, **{"index.md": b"# Version two\n", "news.md": b"# News\n"})


def inventory(tmp_path) -> str:
    hosts = {host: {"ansible_connection": "local", "ansible_python_interpreter": sys.executable,
                    "fleet_destination": {"id": "web", "storage": {"type": "local", "root": str(tmp_path / host)},
                                          "path": "site", "releases": {"keep": 3}}} for host in HOSTS}
    path = tmp_path / "fleet-inventory.yml"
    path.write_text(yaml.safe_dump({"web": {"hosts": hosts}}))
    return str(path)


def release(playbook, tmp_path, source: str, expect_rc: int = 0) -> str:
    completed = playbook.invoke(os.path.join(PLAYBOOKS, "fleet_release.yml"), extra=(
        "-i", inventory(tmp_path), "-e", json.dumps({"fleet_source": source, "fleet_pipeline": PIPELINE})))
    assert completed.returncode == expect_rc, completed.stdout + completed.stderr
    return completed.stdout


def live(tmp_path) -> dict:
    return {host: os.path.basename(os.readlink(str(tmp_path / host / "site"))) for host in HOSTS}


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
