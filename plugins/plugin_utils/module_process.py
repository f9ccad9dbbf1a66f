# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Whether a module on the controller may run in the task's worker (in_controller.py), decided
from the task's facts alone, without the controller's imports, so it is tested as plain data."""

from __future__ import annotations

import os

SWITCH = "distributor_in_controller"


def module_process_needed(wanted: bool, connection: str, become: bool, run_async: bool, environment: bool,
                          interpreter: str, controller_python: str, hooks: bool) -> str:
    """Why the module must run as a process of its own, or "" when the worker may run it: only a
    process started by the local connection as the same user, with no environment of the task's
    own, under the controller's Python (the one with the controller's libraries: boto3, paramiko)
    is the worker's twin."""
    if not wanted:
        return "%s is false" % SWITCH
    if connection != "local":
        return "the connection is %s, not local" % connection
    if become:
        return "the task uses become"
    if run_async:
        return "the task runs async"
    if environment:
        return "the task sets an environment"
    if os.path.normpath(interpreter) != os.path.normpath(controller_python):
        return "the module's Python would be %s, not the controller's %s" % (interpreter, controller_python)
    if not hooks:
        return "this ansible-core cannot run a module in its worker (2.19 or newer can)"
    return ""
