# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one place the core meets Ansible: run an operation and report it the Ansible way."""

from __future__ import annotations

import gc
import json
from contextlib import nullcontext

from ansible.module_utils.basic import AnsibleModule, missing_required_lib

from ..budget import capped, check_limit, cut_arguments
from ..errors import DistributorError, MissingLibrary
from ..limits import UNLIMITED
from .record import RecordFile, prepare_record, record_lines, write_record
from ..visible import visible


class DistributorModule(AnsibleModule):
    """Ansible rejects bad options itself (a wrong type, an unknown choice); those failures carry
    `reason: invalid_config` like the core's own, so automation can rely on `reason`. Every
    message, Ansible's own (which quote the value given) and the core's, and every warning
    leaves `shown`."""

    def fail_json(self, msg, **kwargs):
        """Ansible calls this itself when an option is invalid, without a `reason`: defaulting it
        here gives those failures `invalid_config`, and every failure's text passes `shown`."""
        kwargs.setdefault("reason", "invalid_config")
        details = shown({key: value for key, value in kwargs.items() if key not in ("exception", "invocation")})
        if "exception" in kwargs:  # a traceback, shown with -vvv: its lines stay lines
            details["exception"] = shown(kwargs["exception"], "\n")
        if "invocation" in kwargs:  # the arguments as given: Ansible hides the no_log values in them
            details["invocation"] = kwargs["invocation"]
        super().fail_json(msg=shown(msg), **details)

    def warn(self, warning):
        """Warnings quote ids and paths from bundles and destinations too: shown like the result."""
        super().warn(shown(warning))

    def _return_formatted(self, kwargs):
        """Ansible walks the whole result with `remove_values` to strip the no_log options' values
        (0.13 s for a 10,000-file result); with none given that walk copies the result unchanged.
        Then the result's own values are held back while Ansible formats the rest (the keys it
        reads, warnings, deprecations, invocation) and put back as it encodes. With a secret among
        the options, or an Ansible without the encoding hook, Ansible walks it all."""
        if self.no_log_values or not _ENCODING_HOOK:
            super()._return_formatted(kwargs)
            return
        self._held = {key: value for key, value in kwargs.items() if key not in ANSIBLE_READS}
        super()._return_formatted({key: None if key in self._held else value for key, value in kwargs.items()})

    def _record_module_result(self, o):
        held = getattr(self, "_held", {})
        super()._record_module_result({key: held.get(key, value) for key, value in o.items()})


# The result keys Ansible's formatting reads (`add_path_info` stats `path` or `dest`): never held back.
ANSIBLE_READS = frozenset(("invocation", "warnings", "deprecations", "path", "dest"))
_ENCODING_HOOK = hasattr(AnsibleModule, "_record_module_result")


def run_module(argument_spec: dict, operation, diff_aware: bool = False) -> None:
    """`operation(params, check_mode)` returns the result dict (with `changed` and `diff`); with
    `diff_aware` it is `operation(params, check_mode, diff_mode)`, for results that are costly
    to build when nobody asked for the diff. A module whose spec has `result_limit` returns its
    lists within that budget (budget.py), its `invocation` too, and with `record_file` writes the
    whole result there, with the `plan` the operation returns beside it (record.py), before the
    lists are cut.

    The cyclic garbage collector is off while the module works: the process lives seconds, and
    the collector's passes over its records (100,000 at a large destination, none of them
    garbage) cost a sixth of a 100,000-file skip. Reference counting still frees all but cycles,
    and the peak memory of a 50,000-file check with diff is the same without the collector.

    When the module runs as the program (AnsiballZ and `python -m` run it as `__main__`, so the
    operation its `main` defines belongs there), the process ends with the module: what the run
    allocated is frozen (`gc.freeze`) before the collector is back on, so neither the pass that
    enabling it triggers nor the interpreter's passes at exit walk those objects again (0.2 s of
    a 100,000-file skip). They are still freed as their references go; the exit, its status,
    AnsiballZ's removal of its payload and every `atexit` handler are Python's own. A caller
    running the module in its own process (the tests) gets the collector back as it was, with
    nothing frozen."""
    module = DistributorModule(argument_spec=argument_spec, supports_check_mode=True)
    collecting = gc.isenabled()
    gc.disable()
    try:
        _run(module, "result_limit" in argument_spec, operation, diff_aware)
    finally:
        if getattr(operation, "__module__", None) == "__main__":
            gc.freeze()
        if collecting:
            gc.enable()


def _run(module: DistributorModule, budgeted: bool, operation, diff_aware: bool) -> None:
    limit = module.params.get("result_limit")
    try:
        if budgeted:
            check_limit(limit)
        with prepare_record(module.params["record_file"]) if budgeted and module.params["record_file"] else nullcontext() as record:
            extra = (module._diff,) if diff_aware else ()
            result = operation(module.params, module.check_mode, *extra)
            plan = result.pop("plan", None)
            if record is not None:
                if record.warnings:
                    result["warnings"] = [*result.get("warnings", ()), *record.warnings]
                result.update(record_file=record.where, record_sha256=_recorded(record, module, result, plan))
    except MissingLibrary as error:
        module.fail_json(msg=missing_required_lib(error.library, reason="for " + error.purpose), exception=error.traceback, reason=error.reason)
    except DistributorError as error:
        details = capped(error.details, limit) if budgeted and error.details else dict(error.details)
        if budgeted:
            details["invocation"] = {"module_args": cut_arguments(module.params, max(limit, UNLIMITED))}
        module.fail_json(msg=error.message, reason=error.reason, **details)
    diff = result.pop("diff", None)
    if budgeted:
        result = capped(result, limit)
    result = result if plain(result) else shown(result)
    if budgeted:  # after `shown`: Ansible finds the no_log values to hide only as they were given
        result["invocation"] = {"module_args": cut_arguments(module.params, limit)}
    for warning in result.pop("warnings", ()):
        module.warn(warning)
    if module._diff and diff is not None:
        result["diff"] = [_shown_diff(entry) for entry in diff] if isinstance(diff, list) else _shown_diff(diff)
    module.exit_json(**result)


def _recorded(record: RecordFile, module, result: dict, plan) -> str:
    """The record written, or a failure that says the run itself went through: a real run has
    changed the destination by now, and its result must not read as if nothing happened."""
    try:
        return write_record(record, record_lines(module._name, module.check_mode, result, plan))
    except DistributorError as error:
        raise DistributorError(error.reason, "%s; the %s itself completed (changed: %s, plan_digest %s)" % (
            error.message, "check" if module.check_mode else "run", result.get("changed"), result.get("plan_digest")),
            dict(error.details, changed=bool(result.get("changed")), plan_digest=result.get("plan_digest"))) from None


# The diff texts Ansible prints line by line keep their newlines, and a content diff its tabs;
# the listings (report.listing) escape their fields themselves, so no id can start a line.
DIFF_KEEPS = {"before": "\n\t", "after": "\n\t", "prepared": "\n"}


def shown(value, keep: str = ""):
    """A result or message as a person reads it: the presentation boundary of every module, so
    no id, path or content from a bundle or a destination reaches a terminal raw (see
    visible.py): control characters, format characters and bytes that are not UTF-8 escaped."""
    if isinstance(value, str):
        return visible(value, keep)
    if isinstance(value, dict):
        return {shown(k): shown(v, keep) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [shown(v, keep) for v in value]
    return value


def plain(value) -> bool:
    """Whether `shown` would return `value` unchanged, told by one encoding in C instead of a
    walk over a result that lists every path: JSON writes every character outside printable
    ASCII with a backslash."""
    try:
        text = json.dumps(value)
    except (TypeError, ValueError):
        return False
    return "\\" not in text


def _shown_diff(entry: dict) -> dict:
    return {shown(key): shown(value, DIFF_KEEPS.get(key, "")) for key, value in entry.items()}
