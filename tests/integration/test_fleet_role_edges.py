# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The role's fleets as their users run them (issue 40 items 2-6, issue 41's AWX rules): a check then
the approved run, a mixed fleet, a fleet beside a pipeline not released together, one publish at a
time, approvals that do not cover a change, and task results that do not grow with the bundle."""

from __future__ import annotations

from test_fleet_role import fleet  # noqa: F401


def test_a_destination_not_in_release_mode_in_a_pipeline_released_together_is_an_error_naming_it(role, fleet, tmp_path):
    fleet["distributor_destinations"]["plain"] = {"storage": {"type": "local", "root": str(tmp_path / "plain")}, "path": "site"}
    fleet["distributor_pipelines"]["site"]["destinations"].append("plain")
    output, results = role(fleet, expect_rc=2)
    assert "pipeline 'site' is released together but its destination 'plain' is not in release mode" in output and results is None
    assert not (tmp_path / "plain").exists() and not (tmp_path / "web1").exists()

