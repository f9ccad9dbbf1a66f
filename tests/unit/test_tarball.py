# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The collection tarball holds what a user runs and nothing made for working on it.

`ansible-galaxy collection build` packs whatever sits in the checkout except galaxy.yml's
`build_ignore`, so a test double, a benchmark or a tool's cache left in the tree would ship
unless a rule keeps it out; and a rule too broad would drop a file the modules import.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile

import pytest

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ANSIBLE_GALAXY = os.path.join(os.path.dirname(sys.executable), "ansible-galaxy")
CORE = "plugins/module_utils/_distributor/"
NOT_SHIPPED = ("tests/", "benchmarks/", ".build/", ".venv/", ".git/")
PACKING_LISTS = {"MANIFEST.json", "FILES.json"}


@pytest.fixture(scope="module")
def shipped(tmp_path_factory) -> list[str]:
    """The regular files of a freshly built tarball, as paths relative to the collection root."""
    output = tmp_path_factory.mktemp("dist")
    subprocess.run([ANSIBLE_GALAXY, "collection", "build", "--output-path", str(output), REPO_ROOT],
                   check=True, capture_output=True, cwd=REPO_ROOT)
    (tarball,) = output.iterdir()
    with tarfile.open(tarball) as archive:
        return sorted(member.name for member in archive.getmembers() if member.isfile())


def git_files(*args: str) -> set[str]:
    """Files git tracks, plus new ones it does not ignore (as `make sanity` copies them)."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard", *args],
                            check=True, capture_output=True, cwd=REPO_ROOT).stdout
    return {name for name in listed.decode("utf-8").split("\0") if name}


def test_no_tests_benchmarks_or_build_output_ship(shipped):
    assert [name for name in shipped if name.startswith(NOT_SHIPPED)] == []


def test_the_memory_test_double_does_not_ship(shipped):
    assert [name for name in shipped if "memory" in name] == []


def test_nothing_git_ignores_ships(shipped):
    """Caches and virtual environments (.hypothesis, __pycache__, .venv) are what git ignores."""
    known = git_files()
    assert [name for name in shipped if name not in PACKING_LISTS and name not in known] == []


def test_every_file_of_the_core_ships(shipped):
    core = {name for name in git_files(CORE) if name.endswith(".py") and os.path.exists(os.path.join(REPO_ROOT, name))}
    assert core, "git lists no file under %s" % CORE
    assert sorted(core - set(shipped)) == []
