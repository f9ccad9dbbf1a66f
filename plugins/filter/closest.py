# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The distributor.core.closest filter: the known name a misspelt one most resembles, so the role
can name it when it warns about a variable it does not know."""

from __future__ import annotations

import difflib

DOCUMENTATION = r"""
name: closest
author: distributor maintainers
version_added: 0.2.0
short_description: The known name closest to a misspelt one
description:
  - The entry of O(known) that the input most resembles (Python's C(difflib.get_close_matches), cutoff 0.6), or an
    empty string when none is close. A O(prefix) every name starts with is left out of the comparison, where it
    would make every name look close. The distributor role uses it to name the variable a misspelt C(distributor_*)
    variable was probably meant to be.
positional: known
options:
  _input:
    description: The name to look up.
    type: str
    required: true
  known:
    description: The names it may be a misspelling of.
    type: list
    elements: str
    required: true
  prefix:
    description: What the names share at their start, compared no further.
    type: str
    default: ""
"""

EXAMPLES = r"""
- name: Name the variable meant
  ansible.builtin.debug:
    msg: "{{ 'distributor_opration' | distributor.core.closest(['distributor_operation', 'distributor_force'], prefix='distributor_') }}"
"""

RETURN = r"""
_value:
  description: The closest known name, or an empty string.
  type: str
"""


def closest(name: str, known: list, prefix: str = "") -> str:
    """The entry of `known` closest to `name`, or ""."""
    def rest(text) -> str:
        return str(text)[len(prefix):] if str(text).startswith(prefix) else str(text)

    found = difflib.get_close_matches(rest(name), [rest(entry) for entry in known], n=1)
    return next((str(entry) for entry in known if found and rest(entry) == found[0]), "")


class FilterModule:
    """The collection's filters."""

    def filters(self) -> dict:
        return {"closest": closest}
