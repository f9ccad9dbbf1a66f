# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What SFTP storage does about a destination others can write, against the real sshd: attributes
never set through a link, the way looked at again right before each act (a swap landing in each
gap is injected by wrapping the session's requests), directories another account can write named
in a warning or refused, and listings without recursion, bounded in depth."""

from __future__ import annotations

import os
import stat

import pytest
from deep_tree import plant_tree, remove_tree
from paramiko.sftp import CMD_EXTENDED, CMD_REMOVE

from ansible_collections.distributor.core.plugins.module_utils._distributor.errors import DistributorError
from ansible_collections.distributor.core.plugins.module_utils._distributor.limits import DEPTH_LIMIT
from ansible_collections.distributor.core.plugins.module_utils._distributor.operations.prune import prune
from ansible_collections.distributor.core.plugins.module_utils._distributor.operations.publish import publish
from ansible_collections.distributor.core.plugins.module_utils._distributor.operations.reconcile import reconcile_state
from ansible_collections.distributor.core.plugins.module_utils._distributor.records.manifest_build import create_manifest
from ansible_collections.distributor.core.plugins.module_utils._distributor.storage.select import open_storage
from ansible_collections.distributor.core.plugins.module_utils._distributor.storage.private import writable_by_others
from ansible_collections.distributor.core.plugins.module_utils._distributor.storage.sftp.private import foreign_owner
from ansible_collections.distributor.core.plugins.module_utils._distributor.storage.sftp.wire import Pipe

NOBODY = 65534


@pytest.fixture
def place(tmp_path, sshd_server):
    """(open, root, outside): a root and a root-only directory outside it that links point at."""
    root = tmp_path / "root"
    outside = tmp_path / "outside"
    outside.mkdir(mode=0o700)
    (outside / "a.html").write_bytes(b"the neighbour's a.html")
    opened = []

    def open_one(base="site", **settings):
        opened.append(open_storage(sshd_server.storage(str(root), **settings), base, "t1"))
        return opened[-1]

    yield open_one, root, outside
    for storage in opened:
        storage.close()


def attributes(path) -> tuple:
    info = os.lstat(path)
    return stat.S_IMODE(info.st_mode), info.st_uid, info.st_gid, sorted(os.listdir(path))


def swap_for_link(directory, outside) -> None:
    os.rename(directory, str(directory) + ".moved")
    os.symlink(str(outside), str(directory))


def expect_error(reason: str, call, *args) -> DistributorError:
    with pytest.raises(DistributorError) as caught:
        call(*args)
    assert caught.value.reason == reason, caught.value.message
    return caught.value


def after_request(monkeypatch, session, name: str, when, action) -> None:
    """Run `action` once, right after the session's `name` request on a path for which `when` holds."""
    real = getattr(session, name)
    done = []

    def wrapped(*args, **kwargs):
        result = real(*args, **kwargs)
        if not done and when(os.fsdecode(args[0])):
            done.append(True)
            action()
        return result

    monkeypatch.setattr(session, name, wrapped)


def before_commit(monkeypatch, storage, action) -> None:
    """Run `action` on the staged files of a window once they are all staged, right before
    their way and their names are looked at again and they are renamed."""
    real = storage._commit_window

    def wrapped(items):
        action(items)
        return real(items)

    monkeypatch.setattr(storage, "_commit_window", wrapped)


def before_send(monkeypatch, command: int, action) -> None:
    """Run `action` once, right before the first request of `command` is queued on a pipe
    (sftp.wire.Pipe): the server sees the change before that request."""
    real = Pipe.send
    done = []

    def wrapped(pipe, sent, *args):
        if sent == command and not done:
            done.append(True)
            action()
        return real(pipe, sent, *args)

    monkeypatch.setattr(Pipe, "send", wrapped)


# -- judging directories ------------------------------------------------------------------


@pytest.mark.parametrize("mode,expected", [
    (0o40755, None), (0o40700, None), (0o40775, "is writable by its group (mode 0775)"),
    (0o40777, "is writable by every account (mode 0777)"), (0o41777, "is writable by every account (mode 1777)"),
])
def test_a_directory_writable_by_its_group_or_by_all_is_shared(mode, expected):
    assert writable_by_others(mode) == expected


@pytest.mark.parametrize("uid,name,shared", [
    (0, "root", False), (1000, "deploy", False), (33, "www-data", True), (4242, None, True), (0, None, False),
])
def test_a_directory_owned_by_another_account_than_the_sftp_user_is_shared(uid, name, shared):
    assert (foreign_owner(uid, name, "deploy") is not None) == shared


def test_directories_writable_by_others_are_named_in_one_warning_with_the_window_left(place):
    open_one, root, _outside = place
    (root / "site" / "docs").mkdir(parents=True)
    os.chmod(root / "site", 0o777)
    os.chown(root / "site" / "docs", NOBODY, NOBODY)
    storage = open_one()
    assert storage.list_files() == []
    [warning] = storage.warnings
    assert "/site is writable by every account (mode 0777)" in warning
    assert "/site/docs is owned by nobody (uid %d), not root" % NOBODY in warning
    assert "ChrootDirectory" in warning and "require_private_directories" in warning


def test_settings_that_give_directories_to_another_account_are_warned_of(place):
    open_one, root, _outside = place
    storage = open_one(directory_mode="0775", owner=NOBODY)
    storage.write_bytes("a.html", b"a")
    [warning] = storage.warnings
    assert "the directories distributor creates (storage.directory_mode) is writable by its group" in warning
    assert "the directories distributor creates (storage.owner) is owned by nobody" in warning


def test_private_directories_give_no_warning(place):
    open_one, root, _outside = place
    storage = open_one(directory_mode="0750")
    storage.write_bytes("docs/a.html", b"a")
    assert storage.list_files() == ["docs/a.html"] and storage.warnings == []


def test_require_private_directories_refuses_a_shared_directory_before_acting_in_it(place):
    open_one, root, _outside = place
    (root / "site" / "docs").mkdir(parents=True)
    (root / "site" / "docs" / "old.html").write_bytes(b"old")
    os.chmod(root / "site" / "docs", 0o777)
    storage = open_one(require_private_directories=True)
    error = expect_error("storage_error", storage.write_bytes, "docs/old.html", b"new")
    assert "/site/docs is writable by every account (mode 0777), and storage.require_private_directories" in error.message
    assert (root / "site" / "docs" / "old.html").read_bytes() == b"old"
    assert os.listdir(root / "site" / "docs") == ["old.html"]


def test_require_private_directories_refuses_settings_that_share_new_directories(place):
    open_one, root, _outside = place
    storage = open_one(require_private_directories=True, directory_mode="0777")
    error = expect_error("storage_error", storage.write_bytes, "docs/a.html", b"a")
    assert "storage.directory_mode" in error.message
    assert not (root / "site").exists()


def test_results_carry_the_warning_and_check_mode_refuses_like_a_real_run(place, tmp_path, sshd_server):
    _open_one, root, _outside = place
    (root / "site").mkdir(parents=True)
    os.chmod(root / "site", 0o777)
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    (bundle / "a.html").write_bytes(b"a")
    create_manifest(str(bundle), "reports.example", "2026-06-04T11:55:00Z", ["a.html"])
    destination = {"id": "archive", "storage": sshd_server.storage(str(root)), "path": "site"}
    result = publish(str(bundle), {"id": "reports"}, destination)
    assert any("/site is writable by every account" in warning for warning in result["warnings"]), result["warnings"]
    for operation in (prune, reconcile_state):
        warnings = operation("reports", dict(destination, retention={"max_outputs": 5}), check_mode=True)["warnings"]
        assert any("/site is writable by every account" in warning for warning in warnings), (operation, warnings)
    destination["storage"]["require_private_directories"] = True
    for check_mode in (True, False):
        error = expect_error("storage_error", lambda: publish(str(bundle), {"id": "reports"}, destination,
                                                              check_mode=check_mode))
        assert "/site is writable by every account" in error.message


# -- attributes: never through a link ---------------------------------------------------------


def test_a_base_directory_swapped_right_after_its_mkdir_gets_no_attributes_outside(place, monkeypatch):
    """The mkdir made `site`; before distributor sets its mode and owner, `site` becomes a link
    to a root-only directory. A SETSTAT would follow it (the outside directory chmodded and
    chowned); distributor looks again and stops."""
    open_one, root, outside = place
    storage = open_one(base="site/sub", directory_mode="0777", owner=NOBODY, group=NOBODY)
    before = attributes(outside)
    after_request(monkeypatch, storage._open(), "mkdir", lambda remote: remote.endswith("/site"),
                  lambda: swap_for_link(root / "site", outside))
    expect_error("storage_error", storage.write_bytes, "a.html", b"a")
    assert attributes(outside) == before


@pytest.mark.parametrize("ids", [{"owner": NOBODY, "group": NOBODY}, {"owner": NOBODY}, {"group": NOBODY}])
def test_a_staged_directory_is_given_its_attributes_before_it_is_moved_into_place(place, ids):
    """An unset owner or group keeps the server's (root's, here)."""
    open_one, root, _outside = place
    storage = open_one(directory_mode="0751", **ids)
    storage.write_bytes("docs/deep/a.html", b"a")
    for directory in (root / "site", root / "site" / "docs", root / "site" / "docs" / "deep"):
        assert attributes(directory)[:3] == (0o751, ids.get("owner", 0), ids.get("group", 0)), directory
    assert sorted(os.listdir(root / "site")) == ["docs"]


def test_a_server_without_lsetstat_gets_only_the_attributes_mkdir_can_give(place):
    """mkdir carries the mode (less the server's umask); anything more needs lsetstat."""
    open_one, root, _outside = place
    storage = open_one(directory_mode="0700")
    storage._open()
    storage._extensions = frozenset()
    storage.write_bytes("docs/a.html", b"a")
    assert attributes(root / "site" / "docs")[0] == 0o700
    storage = open_one(directory_mode="0700", owner=NOBODY)
    storage._open()
    storage._extensions = frozenset()
    error = expect_error("storage_error", storage.write_bytes, "new/a.html", b"a")
    assert "lsetstat@openssh.com" in error.message
    assert not (root / "site" / "new").exists()


# -- the way looked at again right before each act --------------------------------------------


def test_a_directory_swapped_before_a_rename_leads_nothing_outside(place, monkeypatch):
    open_one, root, outside = place
    storage = open_one()
    storage.write_bytes("docs/a.html", b"first")
    before = attributes(outside), (outside / "a.html").read_bytes()
    before_commit(monkeypatch, storage, lambda _items: swap_for_link(root / "site" / "docs", outside))
    expect_error("storage_error", storage.write_bytes, "docs/a.html", b"second")
    assert (attributes(outside), (outside / "a.html").read_bytes()) == before


def test_a_delete_through_a_directory_swapped_after_its_check_removes_nothing_outside(place, monkeypatch):
    """The output is parked (renamed into the staging directory) before it is removed: through
    the link, the rename finds no staging directory and moves nothing."""
    open_one, root, outside = place
    storage = open_one()
    storage.write_bytes("docs/a.html", b"ours")
    before = attributes(outside)
    before_send(monkeypatch, CMD_EXTENDED, lambda: swap_for_link(root / "site" / "docs", outside))
    before_send(monkeypatch, CMD_REMOVE, lambda: pytest.fail("removed by name"))
    error = expect_error("storage_error", storage.delete, "docs/a.html")
    assert "/site/docs is a symbolic link" in error.message
    assert attributes(outside) == before
    assert (outside / "a.html").read_bytes() == b"the neighbour's a.html"


def test_a_directory_swapped_in_the_middle_of_a_delete_window_moves_nothing_outside(place, monkeypatch):
    """The names of one window are parked together: `docs` becomes a link once their ways are
    judged, before the renames reach the server. Its names move nothing outside and the error
    names it; the window's other names, judged before, still go (parked and removed)."""
    open_one, root, outside = place
    storage = open_one()
    paths = ["docs/a.html", "docs/b.html", "other/a.html", "other/b.html"]
    for path in paths:
        storage.write_bytes(path, b"ours")
    (outside / "b.html").write_bytes(b"the neighbour's b.html")
    before = attributes(outside)
    before_send(monkeypatch, CMD_EXTENDED, lambda: swap_for_link(root / "site" / "docs", outside))
    error = expect_error("storage_error", storage.delete_many, paths)
    assert "/site/docs is a symbolic link" in error.message
    assert attributes(outside) == before
    assert [(outside / name).read_bytes() for name in ("a.html", "b.html")] == [b"the neighbour's a.html", b"the neighbour's b.html"]
    assert {"a.html", "b.html"} <= set(os.listdir(root / "site" / "docs.moved"))  # and the staging directory, reserved
    assert os.listdir(root / "site" / "other") == []  # a failed delete tidies no directory


def test_a_directory_swapped_between_the_looks_and_the_ways_of_a_delete_window_stops_it_whole(place, monkeypatch):
    """Every way of a window is judged before any of its acts is sent: a link found on one way
    stops the window, and none of its names is removed."""
    open_one, root, outside = place
    storage = open_one()
    paths = ["a.html", "docs/a.html", "docs/b.html"]
    for path in paths:
        storage.write_bytes(path, b"ours")
    before = attributes(outside)
    real = storage._make_stagings

    def swap_then_make(remotes):
        if not os.path.islink(root / "site" / "docs"):
            swap_for_link(root / "site" / "docs", outside)
        return real(remotes)

    monkeypatch.setattr(storage, "_make_stagings", swap_then_make)
    error = expect_error("storage_error", storage.delete_many, paths)
    assert "/site/docs is a symbolic link" in error.message
    assert attributes(outside) == before
    assert (root / "site" / "a.html").read_bytes() == b"ours"
    assert sorted(os.listdir(root / "site" / "docs.moved")) == ["a.html", "b.html"]


def test_a_read_through_a_directory_swapped_after_its_check_shows_nothing_outside(place, monkeypatch):
    """The file opened must be the one looked at: the outside a.html has another mode and size.
    (Looked at again, the way holds the link.)"""
    open_one, root, outside = place
    storage = open_one(file_mode="0640")
    storage.write_bytes("docs/a.html", b"ours")
    session = storage._open()
    real_open = session.open

    def swapped_open(remote, mode="r", *args):
        if mode == "rb" and not os.path.islink(root / "site" / "docs"):
            swap_for_link(root / "site" / "docs", outside)
        return real_open(remote, mode, *args)

    monkeypatch.setattr(session, "open", swapped_open)
    error = expect_error("storage_error", storage.read_bytes, "docs/a.html", 100)
    assert "another file was there" in error.message or "/site/docs is a symbolic link" in error.message


def test_a_release_checked_whole_refuses_a_link_on_the_way_or_at_the_name(place):
    """measure_many looks at a window's names and ways together and judges each file as measure
    does: `docs`, walked before, swapped for a link since, is refused by name, and so is a link at
    an output's name; nothing is read through either."""
    open_one, root, outside = place
    storage = open_one()
    storage.write_many([(path, lambda: [b"ours"]) for path in ("c.html", "docs/a.html", "docs/b.html")])
    assert storage.measure_many([("c.html", 4), ("docs/a.html", 4)], True)["docs/a.html"][0] == 4
    swap_for_link(root / "site" / "docs", outside)
    error = expect_error("storage_error", storage.measure_many, [("c.html", 4), ("docs/a.html", 22)], True)
    assert "/site/docs is a symbolic link" in error.message
    os.symlink(outside / "a.html", root / "site" / "d.html")
    error = expect_error("storage_error", storage.measure_many, [("c.html", 4), ("d.html", 22)], True)
    assert "/site/d.html is a symbolic link" in error.message


def test_a_file_rewritten_in_place_between_the_look_and_the_open_is_looked_at_again(place, monkeypatch):
    """As a lock holder renews its record while distributor_state_info reads it."""
    open_one, root, _outside = place
    storage = open_one()
    storage.write_bytes("a.html", b"first")
    session = storage._open()
    real_open = session.open
    rewritten = []

    def open_after_a_rewrite(remote, mode="r", *args):
        if mode == "rb" and not rewritten:
            rewritten.append(True)
            (root / "site" / "a.html").write_bytes(b"second, longer")
        return real_open(remote, mode, *args)

    monkeypatch.setattr(session, "open", open_after_a_rewrite)
    assert storage.read_bytes("a.html", 100) == b"second, longer"


def test_a_staged_file_changed_before_its_rename_is_not_published(place, monkeypatch):
    """The staged file is compared with what its own handle saw (mode, owner, size, time)."""
    open_one, root, _outside = place
    storage = open_one(file_mode="0640")
    before_commit(monkeypatch, storage, lambda items: os.chmod(items[0].staged, 0o666))
    error = expect_error("storage_error", storage.write_bytes, "a.html", b"a")
    assert "replaced or removed" in error.message
    assert not (root / "site" / "a.html").exists()


def test_an_emptied_directory_behind_a_swapped_parent_is_not_removed(place, monkeypatch):
    open_one, root, outside = place
    (outside / "docs").mkdir()
    storage = open_one()
    storage.write_bytes("docs/a.html", b"ours")
    storage.write_bytes("keep.html", b"kept")
    real = storage._remove_empty_parents

    def swap_then_tidy(head):
        swap_for_link(root / "site", outside)
        return real(head)

    monkeypatch.setattr(storage, "_remove_empty_parents", swap_then_tidy)
    expect_error("storage_error", storage.delete, "docs/a.html")
    assert (outside / "docs").is_dir()


# -- listings: no recursion, bounded depth ---------------------------------------------------


def test_a_tree_deeper_than_the_limit_is_storage_error_naming_it(place):
    open_one, root, _outside = place
    (root / "site").mkdir(parents=True)
    plant_tree(root / "site", 1500)
    try:
        error = expect_error("storage_error", open_one().list_files)
    finally:
        remove_tree(root / "site")
    assert "more than %d directories deep" % DEPTH_LIMIT in error.message
    assert "/site/" + "d/" * DEPTH_LIMIT + "d is" in error.message


def test_a_tree_as_deep_as_the_limit_is_listed(place):
    open_one, root, _outside = place
    (root / "site").mkdir(parents=True)
    deepest = plant_tree(root / "site", DEPTH_LIMIT)
    try:
        assert open_one().list_files() == [deepest]
    finally:
        remove_tree(root / "site")


def test_a_rename_failing_in_the_middle_of_a_delete_window_names_the_file_and_the_channel_serves_on(place):
    """A directory planted at one file's parked name: that rename fails, the window's other files
    go, the error names the file, and the next requests on the same channel get their own replies."""
    open_one, _root, _outside = place
    storage = open_one()
    paths = ["docs/a.html", "docs/b.html", "docs/c.html"]
    for path in paths:
        storage.write_bytes(path, b"ours")
    real = storage._make_stagings

    def make_then_block(remotes):
        real(remotes)
        for remote in set(remotes):
            os.makedirs(os.path.join(remote, "b.html", "x"), exist_ok=True)

    storage._make_stagings = make_then_block
    error = expect_error("storage_error", storage.delete_many, paths)
    assert "b.html" in error.message
    del storage._make_stagings
    assert storage.read_bytes("docs/b.html", 100) == b"ours"
    assert "docs/a.html" not in storage.list_files() and "docs/c.html" not in storage.list_files()
    assert storage.measure_many([("docs/b.html", 4)], True)["docs/b.html"][0] == 4
