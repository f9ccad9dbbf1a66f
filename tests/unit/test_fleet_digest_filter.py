# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The fleet_digest filter the role prints and compares for a pipeline released together: its
rule, planning.digest.fleet_publish_digest (the filter file imports Ansible's controller code,
which would turn this process's modules into a controller's: the role's tests run the filter)."""

from __future__ import annotations

import pytest
from ansible_collections.distributor.core.plugins.module_utils._distributor.planning.digest import fleet_publish_digest

DIGEST = fleet_publish_digest
PLANS = {"site/web1": "sha256:" + "a" * 64, "site/web2": "sha256:" + "b" * 64}
RELEASE = "20261206T053000Z-0123456789ab"


def test_the_same_plans_and_release_give_the_same_digest_in_any_order():
    assert DIGEST(PLANS, RELEASE) == DIGEST(dict(reversed(list(PLANS.items()))), RELEASE)
    assert DIGEST(PLANS, RELEASE).startswith("sha256:") and len(DIGEST(PLANS, RELEASE)) == 71


@pytest.mark.parametrize("plans, release", [
    (dict(PLANS, **{"site/web2": "sha256:" + "c" * 64}), RELEASE),
    (dict(PLANS, **{"site/web3": "sha256:" + "c" * 64}), RELEASE),
    ({"site/web1": PLANS["site/web1"]}, RELEASE),
    (dict(PLANS, **{"site/web2/fleet": "sha256:" + "c" * 64}), RELEASE),
    (PLANS, "20261206T053001Z-0123456789ab"),
], ids=["plan", "added", "removed", "staged-again", "release"])
def test_any_other_plan_destination_or_release_gives_another_digest(plans, release):
    assert DIGEST(plans, release) != DIGEST(PLANS, RELEASE)


def test_anything_but_a_dict_of_digests_is_a_clear_error():
    with pytest.raises(ValueError, match="dict of plan digests"):
        DIGEST(["sha256:x"], RELEASE)
