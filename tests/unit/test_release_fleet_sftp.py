# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A fleet of three SFTP destinations on a real sshd switched together (issue 40 item 2): each
its own session, connected in parallel; the window between the first and the last rename is
reported. No bound is asserted: the window is measured, and documented in docs/releases.md."""

from __future__ import annotations

import os

from ansible_collections.distributor.core.plugins.module_utils._distributor.operations.fleet import switch_fleet
from ansible_collections.distributor.core.plugins.module_utils._distributor.operations.publish import publish

from builders import LATER, NOW, write_bundle

WEB = ("web1", "web2", "web3")
SHARED = "20260605T130000Z-0000000f1ee7"


def test_three_sftp_destinations_switch_together_and_the_window_is_reported(tmp_path, sshd_server):
    fleet = [{"id": where, "storage": sshd_server.storage(str(tmp_path / where)), "path": "site",
              "releases": {"keep": 3}} for where in WEB]
    first = write_bundle(tmp_path / "one", {"index.html": b"one"}, id="site.example", created="2026-06-04T11:55:00Z")
    second = write_bundle(tmp_path / "two", {"index.html": b"two"}, id="site.example", created="2026-06-05T11:55:00Z")
    for destination in fleet:
        publish(first, {"id": "site"}, destination, now=NOW)
        staged = publish(second, {"id": "site"}, dict(destination, releases={"keep": 3, "activate": False, "id": SHARED}), now=LATER)
        assert staged["release"]["id"] == SHARED
    check = switch_fleet("site", fleet, SHARED, check_mode=True)
    result = switch_fleet("site", fleet, SHARED, expect_plan_digest=check["plan_digest"])
    assert result["changed"] and result["window_seconds"] > 0
    print("window_seconds for 3 SFTP destinations: %s" % result["window_seconds"])
    for where in WEB:
        assert os.readlink(str(tmp_path / where / "site")) == ".distributor-releases/site/" + SHARED
        assert (tmp_path / where / "site" / "index.html").read_bytes() == b"two"
