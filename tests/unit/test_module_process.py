# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""When a module may run in the controller's worker (plugin_utils/module_process.py): only when its
process would be the worker's twin, and otherwise with the reason said."""

from __future__ import annotations

import pytest

from ansible_collections.distributor.core.plugins.plugin_utils.module_process import module_process_needed

PYTHON = "/opt/venv/bin/python"
TWIN = dict(wanted=True, connection="local", become=False, run_async=False, environment=False, interpreter=PYTHON,
            controller_python=PYTHON, hooks=True)


def test_the_local_connection_as_the_same_user_under_the_controllers_python_runs_in_the_worker():
    assert module_process_needed(**TWIN) == ""
    same_python = dict(TWIN)
    same_python["interpreter"] = "/opt/venv/bin/../bin/python"
    assert module_process_needed(**same_python) == ""


@pytest.mark.parametrize("difference, reason", [
    (dict(wanted=False), "distributor_in_controller is false"),
    (dict(connection="ssh"), "the connection is ssh, not local"),
    (dict(become=True), "the task uses become"),
    (dict(run_async=True), "the task runs async"),
    (dict(environment=True), "the task sets an environment"),
    (dict(interpreter="/usr/bin/python3"), "the module's Python would be /usr/bin/python3, not the controller's /opt/venv/bin/python"),
    (dict(interpreter="auto"), "the module's Python would be auto"),
    (dict(hooks=False), "2.19 or newer"),
])
def test_anything_that_would_make_the_module_process_differ_keeps_the_module_process(difference, reason):
    assert reason in module_process_needed(**dict(TWIN, **difference))
