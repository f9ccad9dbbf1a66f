# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The distributor.core.fleet_digest filter: one digest for the plans of a pipeline released
together, so that a reviewer approves the fleet as one and a run whose plan changed on any one
destination, or that stages a different set of destinations, switches none."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.distributor.core.plugins.module_utils._distributor.planning.digest import fleet_publish_digest

DOCUMENTATION = r"""
name: fleet_digest
author: distributor maintainers
version_added: 0.2.0
short_description: One plan digest for the destinations of a pipeline released together
description:
  - C(sha256:<64 hex>) over the plan digest of each destination of a fleet, keyed as the role keys them
    (C(pipeline/destination), and C(pipeline/destination/fleet) for a destination staged again to join the
    fleet's release), and the release id the fleet switches to. The same plans and id give the same digest on
    any host; any other plan, destination or id gives another.
  - The distributor role prints it in check mode and records it under the pipeline id in C(distributor_plans);
    a run given it in C(distributor_expected_plans) switches the fleet only when its own plans give the same.
positional: release
options:
  _input:
    description: The plan digest of each destination, by key.
    type: dict
    required: true
  release:
    description: The release id the fleet is staged as and switches to.
    type: str
    required: true
"""

EXAMPLES = r"""
- name: One digest for three web servers
  ansible.builtin.debug:
    msg: "{{ {'site/web1': 'sha256:' ~ 'a' * 64, 'site/web2': 'sha256:' ~ 'b' * 64}
             | distributor.core.fleet_digest('20261206T053000Z-0123456789ab') }}"
"""

RETURN = r"""
_value:
  description: The fleet's plan digest, C(sha256:<64 hex>).
  type: str
"""


def fleet_digest(plans: dict, release: str) -> str:
    """planning.digest.fleet_publish_digest, its refusal as a filter's error."""
    try:
        return fleet_publish_digest(plans, release)
    except ValueError as error:
        raise AnsibleFilterError(str(error)) from None


class FilterModule:
    """The collection's fleet filter."""

    def filters(self) -> dict:
        return {"fleet_digest": fleet_digest}
