# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Test-only callback for test_fleet_release_playbook.py: breaks one host's switch after every
host staged, so the play's switch-back path runs for real. When the task named by
FLEET_FAULT_TASK starts, it removes FLEET_FAULT_FILE from the release its index calls staged in
the release home FLEET_FAULT_HOME: that release is no longer whole, and distributor_release
refuses to switch to it. Enabled only through the test's environment."""

from __future__ import annotations

import json
import os

from ansible.plugins.callback import CallbackBase

DOCUMENTATION = r"""
name: fleet_switch_fault
type: aggregate
short_description: Test only - removes a file from a staged release when a named task starts
description:
  - Test only (tests/integration/test_fleet_release_playbook.py).
"""


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "fleet_switch_fault"
    CALLBACK_NEEDS_ENABLED = True

    def v2_playbook_on_task_start(self, task, is_conditional):
        if task.get_name() != os.environ["FLEET_FAULT_TASK"]:
            return
        home = os.environ["FLEET_FAULT_HOME"]
        with open(os.path.join(home, ".distributor-releases.json")) as handle:
            [staged] = [entry["id"] for entry in json.load(handle)["releases"] if entry["status"] == "staged"]
        os.unlink(os.path.join(home, staged, os.environ["FLEET_FAULT_FILE"]))
