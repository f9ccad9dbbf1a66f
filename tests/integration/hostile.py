# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the hostile-destination suites share: a root holding a neighbour's files next to the
bundle path `site`, and the checks every refusal must pass."""

from __future__ import annotations

import json

from conftest import Backend, tree

OUTSIDE = {"outside.txt": b"neighbour's file", "other/keep.html": b"another pipeline's page"}


def neighbour_root(request, tmp_path) -> Backend:
    """A local or SFTP root (by `request.param`) holding OUTSIDE next to the bundle path."""
    if request.param == "local":
        backend = Backend("local", {"type": "local", "root": str(tmp_path / "root")}, local_root=tmp_path / "root")
    else:
        server = request.getfixturevalue("sshd_server")
        backend = Backend("sftp", server.storage(str(tmp_path / "sftp-root")), local_root=tmp_path / "sftp-root")
    for path, data in OUTSIDE.items():
        backend.put(path, data)
    return backend


def destination(root, **extra) -> dict:
    return dict({"id": "archive", "storage": root.storage, "path": "site"}, **extra)


def outside(root) -> dict:
    """Everything under the root but the bundle path: what no run may change."""
    return {p: d for p, d in tree(root.local_root).items() if not p.startswith("site/") and p != "site"}


def assert_refused(result, reason, *named) -> None:
    """Failed with `reason`, the message naming each of `named`, and no traceback."""
    assert result.get("failed") and result.get("reason") == reason, result
    assert "Traceback" not in json.dumps(result) and "module_stderr" not in result, result
    for name in named:
        assert name in result["msg"], result["msg"]
