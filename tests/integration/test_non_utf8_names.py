# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Names that are not UTF-8 at a local or SFTP bundle path, as a neighbour plants them before the
first publish: never outputs, reported escaped as unmanaged, and removed by force (only inside the
bundle path), with the CDN paths of what force removed made from their bytes."""

from __future__ import annotations

import os

import pytest

from hostile import OUTSIDE, assert_refused, destination, neighbour_root, outside

LINKS = {"base_url": "https://docs.example.com/site/"}
PLANTED = (b"caf\xe9.txt", b"d\xff/caf\xe9.html")


@pytest.fixture(params=["local", "sftp"])
def root(request, tmp_path):
    return neighbour_root(request, tmp_path)


def plant(root) -> bytes:
    site = os.path.join(str(root.local_root), "site").encode()
    for name in PLANTED:
        os.makedirs(os.path.dirname(os.path.join(site, name)), exist_ok=True)
        with open(os.path.join(site, name), "wb") as handle:
            handle.write(b"someone else's")
    return site


def test_names_that_are_not_utf8_are_unmanaged_and_force_removes_them(root, playbook, make_bundle):
    site = plant(root)
    bundle = make_bundle({"index.html": b"<p>v1</p>"})
    publish = dict(source=bundle, pipeline={"id": "reports"}, destination=destination(root, links=LINKS))

    refused = playbook.publish(**publish)
    assert_refused(refused, "unmanaged", "caf\\xe9.txt", "d\\xff/caf\\xe9.html")
    reviewed = playbook.publish(check=True, diff=True, force=True, **publish)
    assert not reviewed.get("failed") and reviewed["changed"], reviewed
    assert sorted(reviewed["deleted"]) == ["caf\\xe9.txt", "d\\xff/caf\\xe9.html"]
    assert sorted(os.listdir(site)) == [b"caf\xe9.txt", b"d\xff"], "check mode changed the bundle path"

    forced = playbook.publish(force=True, **publish)
    assert not forced.get("failed") and forced["action"] == "force_replace", forced
    assert sorted(forced["deleted"]) == ["caf\\xe9.txt", "d\\xff/caf\\xe9.html"]
    assert sorted(forced["invalidation_paths"]) == ["/site/", "/site/caf%E9.txt", "/site/d%FF/caf%E9.html",
                                                    "/site/index.html"]
    assert sorted(os.listdir(site)) == [b".distributor.json", b"index.html"]
    assert outside(root) == OUTSIDE
    again = playbook.publish(**publish)
    assert again["action"] == "skip", again
