# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A tree of 1,500 directories planted in the bundle path: listing it is a storage_error with a
reason, through the real ansible-playbook, never a RecursionError ("Module failed" without a
reason), and nothing planted is changed."""

from __future__ import annotations

from deep_tree import plant_tree, remove_tree

from ansible_collections.distributor.core.plugins.module_utils._distributor.limits import DEPTH_LIMIT

PLANTED_LEVELS = 1500


def test_a_planted_deep_tree_is_a_storage_error_local(playbook, make_bundle, tmp_path):
    root = tmp_path / "www"
    (root / "site").mkdir(parents=True)
    plant_tree(root / "site", PLANTED_LEVELS)
    destination = {"id": "web", "storage": {"type": "local", "root": str(root)}, "path": "site",
                   "state": {"mode": "shared_root"}}
    try:
        for check in (True, False):
            result = playbook.publish(check=check, source=make_bundle({"index.html": b"x"}), pipeline={"id": "p"},
                                      destination=destination)
            assert result["failed"] and result["reason"] == "storage_error", result
            assert "more than %d directories deep" % DEPTH_LIMIT in result["msg"]
            assert "Traceback" not in str(result) and "RecursionError" not in str(result)
        assert not (root / "site" / "index.html").exists()
    finally:
        remove_tree(root / "site")
