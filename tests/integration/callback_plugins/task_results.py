# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Test-only callback for conftest.py's Playbook.run and role fixture: writes every task's result
(or only those of the task DISTRIBUTOR_TEST_RESULTS_TASK names), in the order they came, to the
JSON file DISTRIBUTOR_TEST_RESULTS names when the playbook ends. It stands in for a `copy` task of
the registered results, a module run of its own that cost about 0.9 s of CPU on every playbook
the integration tests run. A result is kept as `register` would keep it: the callback's copy less
Ansible's internal keys and the invocation, with `failed` or `skipped` put back."""

from __future__ import annotations

import json
import os

from ansible.module_utils.common.json import AnsibleJSONEncoder
from ansible.plugins.callback import CallbackBase

DOCUMENTATION = r"""
name: task_results
type: aggregate
short_description: Test only - writes each task's result to a JSON file
description:
  - Test only (tests/integration/conftest.py).
"""


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "task_results"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.results = []

    def keep(self, result, **status):
        if os.environ.get("DISTRIBUTOR_TEST_RESULTS_TASK", result.task_name) != result.task_name:
            return
        kept = {key: value for key, value in result._result.items() if not key.startswith("_ansible_") and key != "invocation"}
        self.results.append(dict(kept, **status))

    def v2_runner_on_ok(self, result):
        self.keep(result, failed=False)

    def v2_runner_on_failed(self, result, ignore_errors=False):
        self.keep(result, failed=True)

    def v2_runner_on_skipped(self, result):
        self.keep(result, skipped=True)

    def v2_runner_on_unreachable(self, result):
        self.keep(result, failed=True)

    def v2_playbook_on_stats(self, stats):
        with open(os.environ["DISTRIBUTOR_TEST_RESULTS"], "w") as handle:
            json.dump(self.results, handle, cls=AnsibleJSONEncoder)
