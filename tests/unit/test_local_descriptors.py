# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Local storage walks from the root by directory descriptors: a link at any component, a
component swapped between two steps of a walk, `..` or an absolute name, a tree deeper than the
bound and a file larger than the read asks for all end in a refusal, never in an act outside the
bundle path."""

from __future__ import annotations

import os

import pytest

from ansible_collections.distributor.core.plugins.module_utils._distributor.errors import DistributorError
from ansible_collections.distributor.core.plugins.module_utils._distributor.limits import DEPTH_LIMIT
from ansible_collections.distributor.core.plugins.module_utils._distributor.storage.local.storage import LocalStorage

from deep_tree import plant_tree, remove_tree
from snapshots import snapshot

BASE = "site/day"
PATH = "a/b/c/page.html"


@pytest.fixture
def place(tmp_path):
    """(storage opener, bundle path directory, outside): `outside` mirrors the bundle path's
    tree, so a followed link would find a file at every name."""
    root = tmp_path / "root"
    (root / BASE / "a/b/c").mkdir(parents=True)
    (root / BASE / PATH).write_bytes(b"ours")
    outside = tmp_path / "outside"
    for depth in range(4):
        target = outside.joinpath(*PATH.split("/")[depth:])
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(b"theirs")
    return (lambda: LocalStorage(str(root), BASE, "t1", {"directory_mode": "0777"})), root / BASE, outside


def _expect_storage_error(call, *args):
    with pytest.raises(DistributorError) as caught:
        call(*args)
    assert caught.value.reason == "storage_error", caught.value.message
    return caught.value


@pytest.mark.parametrize("component", ["a", "a/b", "a/b/c"])
def test_a_link_at_any_component_is_refused_by_every_operation(place, component):
    open_one, site, outside = place
    (site / component).rename(site / "moved")
    os.symlink(outside.joinpath(*PATH.split("/")[component.count("/") + 1:]).parent, site / component)
    before = snapshot(outside)
    storage = open_one()
    _expect_storage_error(storage.read_bytes, PATH, 1024)
    _expect_storage_error(storage.write_bytes, PATH, b"new")
    _expect_storage_error(storage.write_bytes, PATH.replace("page", "new"), b"new")
    _expect_storage_error(storage.delete, PATH)
    _expect_storage_error(storage.exists, PATH)
    assert component in storage.list_files(), "the link itself is listed, its target never"
    assert snapshot(outside) == before


def test_a_link_at_the_file_itself_is_never_read_or_replaced(place):
    open_one, site, outside = place
    (site / PATH).unlink()
    os.symlink(outside / "page.html", site / PATH)
    storage = open_one()
    _expect_storage_error(storage.read_bytes, PATH, 1024)
    _expect_storage_error(storage.write_bytes, PATH, b"new")
    assert (outside / "page.html").read_bytes() == b"theirs"


@pytest.mark.parametrize("path", ["../escape.txt", "a/../../escape.txt", "/etc/escape.txt", "a/./b.txt", "a//b.txt"])
def test_dot_dot_and_absolute_names_are_refused(place, path):
    open_one, site, _outside = place
    before = snapshot(site.parent.parent)
    storage = open_one()
    for call, args in ((storage.write_bytes, (path, b"x")), (storage.write_many, ([("a.txt", lambda: [b"x"]), (path, lambda: [b"x"])],)),
                       (storage.read_bytes, (path, 10)), (storage.delete, (path,))):
        _expect_storage_error(call, *args)
    assert snapshot(site.parent.parent) == before


def _swapping_after_opening(monkeypatch, name: str, site, outside):
    """os.open that swaps `name` for a link to `outside` right after the walk opened it: the
    next step of the walk, and every act after it, must not go through the link."""
    real_open = os.open

    def swapping_open(path, flags, *args, **kwargs):
        fd = real_open(path, flags, *args, **kwargs)
        if path == name and kwargs.get("dir_fd") is not None and not os.path.islink(site / name):
            os.rename(site / name, site / "moved")
            os.symlink(outside, site / name)
        return fd

    monkeypatch.setattr(os, "open", swapping_open)


def test_a_component_swapped_between_two_steps_never_moves_a_write_outside(place, monkeypatch):
    open_one, site, outside = place
    before = snapshot(outside)
    _swapping_after_opening(monkeypatch, "a", site, outside)
    error = _expect_storage_error(open_one().write_bytes, "a/b/new.html", b"new")
    assert "moved or replaced" in error.message
    assert snapshot(outside) == before
    assert (site / "moved/b/new.html").read_bytes() == b"new", "the write went to the directory that was opened"


def test_a_component_swapped_between_two_steps_never_moves_a_delete_outside(place, monkeypatch):
    open_one, site, outside = place
    before = snapshot(outside)
    _swapping_after_opening(monkeypatch, "a", site, outside)
    assert open_one().delete(PATH)
    assert snapshot(outside) == before
    assert not (site / "moved" / PATH.partition("/")[2]).exists(), "the file deleted is the one that was opened"


def test_directory_settings_go_only_to_directories_distributor_created(place):
    open_one, site, _outside = place
    (site / "a").chmod(0o750)
    open_one().write_bytes("a/new/page.html", b"x")
    assert (site / "a").stat().st_mode & 0o777 == 0o750
    assert (site / "a/new").stat().st_mode & 0o777 == 0o777


def test_a_tree_deeper_than_the_bound_is_a_storage_error_not_a_recursion_error(place):
    open_one, site, _outside = place
    plant_tree(site / "a", DEPTH_LIMIT + 5)
    try:
        error = _expect_storage_error(open_one().list_files)
        assert "more than %d directories deep" % DEPTH_LIMIT in error.message
    finally:
        remove_tree(site / "a")


def test_a_read_takes_at_most_one_byte_over_its_limit(place):
    open_one, site, _outside = place
    with open(site / "huge.bin", "wb") as handle:
        handle.truncate(2 * 1024 ** 3)
    assert len(open_one().read_bytes("huge.bin", 4096)) == 4097
