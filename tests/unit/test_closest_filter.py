# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The filter the role names a misspelt variable's meaning with (its warning runs in
tests/integration/test_role.py)."""

from __future__ import annotations

import pytest

from ansible_collections.distributor.core.plugins.filter.closest import FilterModule

KNOWN = ["distributor_operation", "distributor_force", "distributor_publications", "distributor_parallel"]


@pytest.mark.parametrize("name, meant", [
    ("distributor_opration", "distributor_operation"),
    ("distributor_publication", "distributor_publications"),
    ("distributor_colour", ""),
    ("distributor_parallel_jobs", "distributor_parallel"),
])
def test_closest_names_the_known_name_a_misspelling_resembles_or_none(name, meant):
    assert FilterModule().filters()["closest"](name, KNOWN, prefix="distributor_") == meant


def test_without_the_prefix_left_out_every_name_looks_close():
    assert FilterModule().filters()["closest"]("distributor_colour", KNOWN) != ""
