# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one error type the core raises; modules turn it into fail_json(reason=...)."""

from __future__ import annotations

REASONS = (
    "conflict",
    "unmanaged",
    "invalid_state",
    "ownership_conflict",
    "invalid_manifest",
    "invalid_config",
    "verification_failed",
    "storage_error",
    "locked",
    "plan_changed",
    "delete_limit",
    "missing_library",
    "no_release",
)


class DistributorError(Exception):
    """A failure a user can act on: `reason` is stable for automation, `message` is for people."""

    def __init__(self, reason: str, message: str, details: dict | None = None):
        """`details` are extra result values of the failure (plan_changed: the new plan)."""
        if reason not in REASONS:
            raise ValueError("unknown reason %r" % reason)
        super().__init__(message)
        self.reason = reason
        self.message = message
        self.details = details or {}


class MissingLibrary(DistributorError):
    """A backend or transform needs a Python library that is not installed on the target host."""

    def __init__(self, library: str, purpose: str, traceback_text: str):
        super().__init__("missing_library", "%s is required for %s" % (library, purpose))
        self.library = library
        self.purpose = purpose
        self.traceback = traceback_text


class Unreadable(DistributorError):
    """Something other than a regular file (a FIFO, a device, a socket, a directory) at a name
    distributor reads at a destination, refused unopened: a FIFO would block the run. At a
    record's name the run stops on it (`storage_error`); at an output's name the output is just
    not what its record says, so drift counts it drifted and a content diff does not show it.
    `kind` says what was found."""

    def __init__(self, message: str, kind: str):
        super().__init__("storage_error", message)
        self.kind = kind
