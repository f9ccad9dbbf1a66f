# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The action every distributor module runs through: when the task's host is the controller
itself, the module's own `main` runs in the task's worker process instead of a module process.

A module process on the controller costs Ansible a payload for every task: it parses and packs the
collection's module_utils into an AnsiballZ zip (0.3 s of CPU for distributor_publish's 150 files),
then a new Python unpacks it and compiles every module from the zip again, with no bytecode. A
10,000-file no-op through `ansible-playbook` spent more of its time there than in the publish
(benchmarks/playbook_sync.py). In the worker, the same `main` reads the same arguments, encoded
and decoded as Ansible sends them to a module, and its result is parsed as Ansible parses a
module's: validation, `no_log`, warnings and failures are the module's own, on either path.

The worker is the module's place only when the module process would be the controller's own
Python, as the task's user, in the task's environment: `module_process_needed` names what rules
it out (module_process.py), and the variable `distributor_in_controller: false` asks for the module
process always.
"""

from __future__ import annotations

import contextlib
import importlib
import io
import json
import sys

from ansible import constants as C
from ansible.errors import AnsibleError
from ansible.module_utils import basic
from ansible.module_utils.parsing.convert_bool import boolean
from ansible.plugins.action import ActionBase
from ansible.utils.display import Display
from ansible.utils.vars import merge_hash
from ansible.vars.clean import remove_internal_keys

from ansible_collections.distributor.core.plugins.plugin_utils.module_process import SWITCH, module_process_needed

try:
    from ansible.module_utils.common.json import Direction, get_module_encoder
except ImportError:  # ansible-core before 2.19, whose modules always run as processes
    get_module_encoder = None

display = Display()

# The modules declare no metadata, so Ansible sends their arguments in its legacy profile.
PROFILE = "legacy"
# The hooks the worker run needs, ansible-core 2.19's: the module encoder and the profile
# AnsibleModule reads its arguments in (`_ANSIBLE_ARGS` is older and always there).
_WORKER_HOOKS = get_module_encoder is not None and hasattr(basic, "_ANSIBLE_PROFILE")


class ActionModule(ActionBase):
    """A distributor module's action: its own `main` in the worker, or the module process."""

    _supports_check_mode = True
    _supports_async = True

    def run(self, tmp=None, task_vars=None):
        task_vars = task_vars or {}
        result = super().run(tmp, task_vars)
        del tmp
        reason = module_process_needed(
            self._switch(task_vars), self._connection.transport, bool(self._play_context.become), bool(self._task.async_val),
            bool(self._environment()), self._interpreter(task_vars), sys.executable, _WORKER_HOOKS)
        if not reason:
            display.vvv("distributor: %s runs in the controller's worker" % self._task.action)
            return merge_hash(result, self._in_worker(task_vars))
        display.vvv("distributor: %s runs as a module process: %s" % (self._task.action, reason))
        wrap_async = self._task.async_val and not self._connection.has_native_async
        result = merge_hash(result, self._execute_module(task_vars=task_vars, wrap_async=wrap_async))
        if not wrap_async:
            self._remove_tmp_path(self._connection._shell.tmpdir)
        return result

    def _switch(self, task_vars: dict) -> bool:
        try:
            return boolean(self._templar.template(task_vars.get(SWITCH, True)))
        except TypeError as error:
            raise AnsibleError("%s must be a boolean: %s" % (SWITCH, error)) from None

    def _environment(self) -> dict:
        """The variables the task's `environment` (its own, its block's and its play's) would give a module process."""
        given = {}
        self._compute_environment_string(given)
        return given

    def _interpreter(self, task_vars: dict) -> str:
        """The Python Ansible would start the module with, as its own shebang lookup reads it; a
        discovered one (`auto`) is never the controller's for certain."""
        own = task_vars.get("ansible_delegated_vars", {}).get(self._task.delegate_to, {}) if self._task.delegate_to else task_vars
        configured = C.config.get_config_value("INTERPRETER_PYTHON", variables=own)
        return str(self._templar.template(configured))

    def _in_worker(self, task_vars: dict) -> dict:
        """The module's `main`, given its arguments as AnsiballZ gives them and read back as
        Ansible reads a module's output."""
        arguments = dict(self._task.args)
        self._update_module_args(self._task.action, arguments, task_vars)
        namespace, collection, name = self._task.resolved_action.split(".")
        module = importlib.import_module("ansible_collections.%s.%s.plugins.modules.%s" % (namespace, collection, name))
        encoder = get_module_encoder(PROFILE, Direction.CONTROLLER_TO_MODULE)
        given = (basic._ANSIBLE_ARGS, basic._ANSIBLE_PROFILE)
        basic._ANSIBLE_ARGS = json.dumps({"ANSIBLE_MODULE_ARGS": arguments}, cls=encoder).encode()
        basic._ANSIBLE_PROFILE = PROFILE
        printed = io.StringIO()
        try:
            with contextlib.redirect_stdout(printed):
                module.main()
        except SystemExit:  # exit_json and fail_json end the module this way, after printing its result
            pass
        finally:
            basic._ANSIBLE_ARGS, basic._ANSIBLE_PROFILE = given
        data = self._parse_returned_data({"stdout": printed.getvalue()}, PROFILE)
        remove_internal_keys(data)
        return data
