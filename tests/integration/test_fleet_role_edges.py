# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The role's fleets as their users run them (issue 40 items 2-6, issue 41's AWX rules): a check then
the approved run, a mixed fleet, a fleet beside a pipeline not released together, one publish at a
time, approvals that do not cover a change, and task results that do not grow with the bundle."""

from __future__ import annotations

import json
import shlex

import yaml

from test_fleet_role import APPROVAL, V2, fleet, live, one, published_twice, serves, with_bundle  # noqa: F401


def approval_of(output: str) -> tuple:
    return tuple(shlex.split(APPROVAL.search(output).group(1)))


def test_a_destination_not_in_release_mode_in_a_pipeline_released_together_is_an_error_naming_it(role, fleet, tmp_path):
    fleet["distributor_destinations"]["plain"] = {"storage": {"type": "local", "root": str(tmp_path / "plain")}, "path": "site"}
    fleet["distributor_pipelines"]["site"]["destinations"].append("plain")
    output, results = role(fleet, expect_rc=2)
    assert "pipeline 'site' is released together but its destination 'plain' is not in release mode" in output and results is None
    assert not (tmp_path / "plain").exists() and not (tmp_path / "web1").exists()


def test_the_approved_run_of_a_mixed_fleet_switches_to_the_reviewed_release(role, fleet, tmp_path, make_bundle, playbook):
    first, second = published_twice(role, fleet, make_bundle, tmp_path)
    web1 = dict(fleet["distributor_destinations"]["web1"], id="web1")
    playbook.run([{"distributor.core.distributor_release": {"pipeline_id": "site", "release": "previous", "destination": web1}}])
    again = with_bundle(fleet, make_bundle, V2)
    output, _checked = role(again, check=True, diff=True)
    assert "MIXED" in output and live(tmp_path) == {"web1": first, "web2": second, "web3": second}
    output, _results = role(again, extra=approval_of(output))  # failed: the fleet plan ... is not the approved ... (plan_changed)
    converged = one(live(tmp_path))
    assert converged not in (first, second) and serves(tmp_path, b"Version two"), output



def test_the_run_job_after_an_approval_node_is_not_warned_about_the_artifacts_the_check_recorded(role, fleet, tmp_path):
    """AWX gives the run job the check's set_stats (distributor_plans, distributor_release_id) as
    extra variables, beside distributor_expected_plans: "{{ distributor_plans }}"."""
    output, _checked = role(fleet, check=True)
    approval = approval_of(output)
    plans = yaml.safe_load(approval[1])["distributor_expected_plans"]
    artifacts = json.dumps({"distributor_plans": plans, "distributor_expected_plans": plans})
    output, _results = role(fleet, extra=("-e", artifacts) + approval[2:])
    assert "is not a variable of the distributor role" not in output and one(live(tmp_path))
