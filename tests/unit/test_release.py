# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""One version story: galaxy.yml names the version in the making, each module's version_added
is the release whose notes announce it (antsibull-changelog, from changelogs/), and one minimum
Python version is stated everywhere."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

import pytest
import yaml

from ansible_collections.distributor.core.plugins.module_utils._distributor.records.bundle import Bundle
from ansible_collections.distributor.core.plugins.module_utils._distributor.records.manifest_build import build_manifest

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODULES = os.path.join(REPO_ROOT, "plugins", "modules")
PYTHON_MINIMUM = "3.10"


def read(*path: str) -> str:
    with open(os.path.join(REPO_ROOT, *path), encoding="utf-8") as handle:
        return handle.read()


def documentation(module: str) -> dict:
    source = read("plugins", "modules", module + ".py")
    return yaml.safe_load(re.search(r'DOCUMENTATION = r"""(.*?)"""', source, re.S).group(1))


def modules() -> list:
    return sorted(name[:-3] for name in os.listdir(MODULES) if name.endswith(".py") and not name.startswith("_"))


@pytest.fixture(scope="module")
def release_notes(tmp_path_factory):
    """(changelog.yaml, CHANGELOG.rst) as `antsibull-changelog release` makes them for the
    version galaxy.yml names, in a copy of the collection (the repository keeps its fragments)."""
    version = yaml.safe_load(read("galaxy.yml"))["version"]
    copy = tmp_path_factory.mktemp("release") / "ansible_collections" / "distributor" / "core"
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=REPO_ROOT,
                            capture_output=True, check=True).stdout.decode().split("\0")
    for path in filter(None, listed):
        if os.path.isfile(os.path.join(REPO_ROOT, path)):
            os.makedirs(os.path.dirname(os.path.join(copy, path)), exist_ok=True)
            shutil.copy2(os.path.join(REPO_ROOT, path), os.path.join(copy, path))
    bin_dir = os.path.dirname(sys.executable)
    released = yaml.safe_load(read("changelogs", "changelog.yaml"))["releases"]
    if version not in released:
        subprocess.run([os.path.join(bin_dir, "antsibull-changelog"), "release", "--version", version, "--date", "2026-12-04"],
                       cwd=str(copy), check=True, capture_output=True,
                       env=dict(os.environ, PATH=bin_dir + os.pathsep + os.environ["PATH"]))
    with open(os.path.join(copy, "changelogs", "changelog.yaml"), encoding="utf-8") as handle:
        changelog = yaml.safe_load(handle)
    with open(os.path.join(copy, "CHANGELOG.rst"), encoding="utf-8") as handle:
        return version, changelog, handle.read()


def test_every_module_is_announced_by_the_release_its_version_added_names(release_notes):
    version, changelog, _rst = release_notes
    announced = {m["name"]: release for release, notes in changelog["releases"].items() for m in notes.get("modules", ())}
    assert announced == {module: str(documentation(module)["version_added"]) for module in modules()}
    assert max(announced.values(), key=lambda v: tuple(map(int, v.split(".")))) == version


def test_the_release_notes_list_the_new_modules_of_the_version_in_the_making(release_notes):
    version, _changelog, rst = release_notes
    section = rst[rst.index("\nv%s\n" % version):]
    section = section[:section.index("\nv", 1)] if "\nv" in section[1:] else section
    new = section[section.index("New Modules\n"):]
    for module in modules():
        if str(documentation(module)["version_added"]) == version:
            assert "- distributor.core.%s - %s" % (module, documentation(module)["short_description"]) in new


def test_one_minimum_python_version_everywhere():
    for module in modules():
        assert "python >= %s" % PYTHON_MINIMUM in documentation(module)["requirements"], module
    assert "Python %s or newer" % PYTHON_MINIMUM in read("README.md")
    assert not re.search(r"Python 3\.(?!%s)\d+ or newer" % PYTHON_MINIMUM.split(".")[1], read("README.md"))
    assert "Python %s or newer" % PYTHON_MINIMUM in read("meta", "runtime.yml")
    assert yaml.safe_load(read("tests", "config.yml"))["modules"]["python_requires"] == ">=%s" % PYTHON_MINIMUM


def test_the_example_bundle_holds_the_manifest_of_its_files():
    """The demo and the README copy examples/bundle with its manifest.json; a file edited
    without regenerating it would make every one of them fail verification."""
    bundle = os.path.join(REPO_ROOT, "examples", "bundle")
    recorded = Bundle.load(bundle).manifest
    assert build_manifest(bundle, recorded.id, recorded.created) == recorded
