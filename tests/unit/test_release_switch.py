# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""distributor_release's review (#30 item 6): a switch approved by its plan digest runs only while
the bundle path holds the release the review saw; otherwise it is refused, naming the switch it
would now make, and nothing changes."""

from __future__ import annotations

import pytest

from ansible_collections.distributor.core.plugins.module_utils._distributor.errors import DistributorError
from ansible_collections.distributor.core.plugins.module_utils._distributor.operations.switch import switch_release

from builders import LATER, NOW
from test_release_publish import destination, index, live, opener, publish_files


def test_a_switch_whose_plan_changed_is_refused_naming_the_switch_it_would_now_make(tmp_path):
    store = {}
    publish_files(tmp_path, store, "one", {"index.html": b"one"}, now=NOW)
    first = live(store)
    publish_files(tmp_path, store, "two", {"index.html": b"two"}, now=LATER)
    second = live(store)
    reviewed = switch_release("site", destination(), "previous", check_mode=True, opener=opener(store))
    publish_files(tmp_path, store, "three", {"index.html": b"three"}, now=LATER.replace(hour=LATER.hour + 1))
    third, before = live(store), index(store)
    with pytest.raises(DistributorError) as refused:
        switch_release("site", destination(), "previous", opener=opener(store), expect_plan_digest=reviewed["plan_digest"])
    assert refused.value.reason == "plan_changed"
    assert "switch site from release %s to %s (a rollback), changing the outputs of owners site/web" % (
        third, second) in refused.value.message
    assert refused.value.details["changes"] == [{"release": second, "change": "rollback"}]
    assert live(store) == third and index(store) == before and first != second
