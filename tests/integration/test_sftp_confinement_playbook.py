# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""SFTP against an account that can write the destination: a planted tree of any depth, the
warning about directories others can write (through ansible-playbook), and a race in which an
unprivileged swapper exchanges directories of the bundle path with links to a root-only directory
outside the root while real publishes, replaces and `--check --diff` runs go on (the arena and
swapper of test_race_local.py).

SFTP is a path-based protocol, so what the race may do is bounded by docs/untrusted-destinations.md ("SFTP:
what a path-based protocol leaves open"): the outside directory's own mode and owner never change,
and no diff shows a file there (each differs from the outputs in mode and owner); the rest (a
directory made there, a file moved between the two lookups of one rename) is counted and printed,
not forbidden.
"""

from __future__ import annotations

import os

from deep_tree import plant_tree, remove_tree
from hostile import assert_refused
import test_race_local
from test_race_local import _snapshot, race

from ansible_collections.distributor.core.plugins.module_utils._distributor.limits import DEPTH_LIMIT


def test_a_deep_tree_planted_in_the_bundle_path_is_storage_error_without_a_traceback(playbook, make_bundle, sshd_server,
                                                                                     tmp_path):
    root = tmp_path / "sftp-root"
    (root / "site" / "planted").mkdir(parents=True)
    plant_tree(root / "site" / "planted", 1500)
    destination = {"id": "archive", "storage": sshd_server.storage(str(root)), "path": "site"}
    try:
        result = playbook.publish(source=make_bundle({"index.html": b"v1"}), pipeline={"id": "reports"},
                                  destination=destination)
    finally:
        remove_tree(root / "site" / "planted")
    assert_refused(result, "storage_error", "/site/planted/d/", "more than %d directories deep" % DEPTH_LIMIT)
    assert not (root / "site" / "index.html").exists()


def test_a_shared_directory_is_a_warning_of_the_run_and_a_refusal_with_require_private_directories(
        playbook, make_bundle, sshd_server, tmp_path):
    root = tmp_path / "sftp-root"
    (root / "site").mkdir(parents=True)
    os.chmod(root / "site", 0o777)
    destination = {"id": "archive", "storage": sshd_server.storage(str(root)), "path": "site"}
    bundle = make_bundle({"index.html": b"v1"})
    result = playbook.publish(source=bundle, pipeline={"id": "reports"}, destination=destination)
    assert result["changed"], result
    assert any("/site is writable by every account (mode 0777)" in warning and "ChrootDirectory" in warning
               for warning in result["warnings"]), result
    destination["storage"]["require_private_directories"] = True
    for check in (True, False):
        refused = playbook.publish(check=check, source=make_bundle({"index.html": b"v2"}, created="2026-06-05T11:55:00Z"),
                                   pipeline={"id": "reports"}, destination=destination)
        assert_refused(refused, "storage_error", "/site is writable by every account", "require_private_directories")
    assert (root / "site" / "index.html").read_bytes() == b"v1"


# -- the race -------------------------------------------------------------------------------------

arena = test_race_local.arena  # the same fixture: one arena and one swapper for both backends


def test_sftp_publishes_raced_by_a_swapper_never_change_the_outside_directory(arena, sshd_server):
    """test_race_local.py's race over SFTP: its arena (a bundle path `site` the attacker's
    account owns, a root-only `outside` holding a secret at each output's name), its swapper
    (docs, docs/sub and docs/sub/deeper exchanged with links to `outside`, as nobody) and its
    rounds of every operation (publishes that verify, --check --diff, prune, reconcile-state,
    state_info's verify), with directory_mode 0777 and owner/group set to the attacker's account,
    and force."""
    destination = {"id": "web", "path": "site", "storage": sshd_server.storage(
        os.path.join(arena["top"], "www"), directory_mode="0777", file_mode="0666", owner=arena["uid"], group=arena["gid"])}
    before = _snapshot(arena["outside"])
    result = race(arena, destination)
    outcomes = result.outcomes
    after = _snapshot(arena["outside"])
    made = sorted(set(after) - set(before))
    gone = sorted(set(before) - set(after))
    changed = sorted(name for name in set(before) & set(after) if before[name] != after[name] and name != ".")
    print("\nSFTP race: %d rounds, %d runs, swapper %d exchanges of %d tried, %d runs after which the outside "
          "differed %s; outcomes %s; changed %s; outside: %d made %s, %d gone %s, %d changed %s, %d diffs showing it"
          % (result.rounds, sum(outcomes.values()), result.swaps, result.tries, sum(result.wins.values()),
             dict(result.wins), dict(outcomes), dict(result.changed), len(made), made[:6], len(gone), gone,
             len(changed), changed, result.shown))
    assert sum(outcomes.values()) >= 10, outcomes  # each SFTP run costs round trips a local one does not
    assert after["."][:3] == before["."][:3], "the mode or owner of the directory outside the root changed"
    assert result.shown == 0, "a diff showed content from outside the root"
    assert all(outcome.endswith((" ok", " storage_error", " unmanaged")) for outcome in outcomes), outcomes
