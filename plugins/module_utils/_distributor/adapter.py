# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one place the core meets Ansible: run an operation and report it the Ansible way."""

from __future__ import annotations

from ansible.module_utils.basic import AnsibleModule, missing_required_lib

from .errors import DistributorError, MissingLibrary


class DistributorModule(AnsibleModule):
    """Ansible rejects bad options itself (a wrong type, an unknown choice); those failures carry
    `reason: invalid_config` like the core's own, so automation can rely on `reason`."""

    def fail_json(self, msg, **kwargs):
        kwargs.setdefault("reason", "invalid_config")
        super().fail_json(msg=msg, **kwargs)


def run_module(argument_spec: dict, operation, diff_aware: bool = False) -> None:
    """`operation(params, check_mode)` returns the result dict (with `changed` and `diff`); with
    `diff_aware` it is `operation(params, check_mode, diff_mode)`, for results that are costly
    to build when nobody asked for the diff."""
    module = DistributorModule(argument_spec=argument_spec, supports_check_mode=True)
    try:
        extra = (module._diff,) if diff_aware else ()
        result = operation(module.params, module.check_mode, *extra)
    except MissingLibrary as error:
        module.fail_json(msg=missing_required_lib(error.library, reason="for " + error.purpose), exception=error.traceback, reason=error.reason)
    except DistributorError as error:
        module.fail_json(msg=readable(error.message), reason=error.reason, **readable(error.details))
    result = readable(result)
    for warning in result.pop("warnings", ()):
        module.warn(warning)
    if not module._diff:
        result.pop("diff", None)
    module.exit_json(**result)


def readable(value):
    """A destination may hold names that are not UTF-8; backends carry their bytes as lone
    surrogates (Python's surrogateescape), which no JSON result can hold. They are reported with
    each such byte written as a backslash escape, `caf\\xe9.html`, as `ls -b` shows them."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
            return value
        except UnicodeEncodeError:
            return value.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    if isinstance(value, dict):
        return {readable(k): readable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [readable(v) for v in value]
    return value
