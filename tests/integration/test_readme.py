# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The README as a new user follows it from a clone, its commands run verbatim: Install builds the
collection and installs it where ansible-playbook looks by default, then "A first playbook" sets
up its directory, checks (the plan shown) and runs the approved plan, all with a fresh HOME and
no ANSIBLE_COLLECTIONS_PATH, so nothing but the README's own steps provides the collection."""

from __future__ import annotations

import os
import re
import subprocess

from conftest import REPO_ROOT, VENV_BIN, tree

# The one line not run: it would install requirements.txt into the test environment, which has
# them already (requirements-test.txt includes requirements.txt).
PIP_LINE = "python3 -m pip install -r requirements.txt"


def readme_section(title: str) -> str:
    with open(os.path.join(REPO_ROOT, "README.md"), encoding="utf-8") as handle:
        text = handle.read()
    start = text.index("\n## %s\n" % title)
    end = text.find("\n## ", start + 1)
    return text[start:end if end >= 0 else len(text)]


def fenced(section: str, language: str) -> list:
    return re.findall(r"```%s\n(.*?)```" % language, section, re.S)


def as_a_new_user(home):
    """run(commands, cwd) -> the completed bash running them, with HOME at `home` and only the
    PATH to ansible (the test environment's, which has requirements.txt) added."""
    env = {key: value for key, value in os.environ.items()
           if key not in ("ANSIBLE_COLLECTIONS_PATH", "DISTRIBUTOR_COLLECTIONS_PATH")}
    env.update(HOME=str(home), ANSIBLE_NOCOLOR="1", PATH=VENV_BIN + os.pathsep + os.environ.get("PATH", ""))

    def run(commands: str, cwd) -> subprocess.CompletedProcess:
        return subprocess.run(["bash", "-e", "-c", commands], cwd=str(cwd), env=env, capture_output=True, text=True,
                              timeout=300, check=False)
    return run


def test_the_readme_installs_from_a_clone_and_its_first_playbook_runs_as_written(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    run = as_a_new_user(home)

    [install] = fenced(readme_section("Install"), "sh")
    assert install.splitlines()[0] == PIP_LINE
    installed = run("\n".join(install.splitlines()[1:]), REPO_ROOT)
    assert installed.returncode == 0, installed.stdout + installed.stderr
    assert (home / ".ansible" / "collections" / "ansible_collections" / "distributor" / "core" / "MANIFEST.json").exists()

    section = readme_section("A first playbook")
    setup, commands = fenced(section, "sh")
    [playbook] = fenced(section, "yaml")
    prepared = run(setup, REPO_ROOT)
    assert prepared.returncode == 0, prepared.stdout + prepared.stderr
    first = home / "distributor-first"
    (first / "publish.yml").write_text(playbook)
    manifest = (first / "bundle" / "manifest.json").read_bytes()
    check_command, run_command = commands.strip().splitlines()
    assert check_command == "ansible-playbook -i localhost, publish.yml --check --diff"
    assert run_command == "ansible-playbook -i localhost, publish.yml -e approved=sha256:..."

    checked = run(check_command, first)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "+report.html  sha256:" in checked.stdout and "WARNING" not in checked.stdout + checked.stderr
    digest = re.search(r"publish \[.*\]; plan (sha256:[0-9a-f]{64})", checked.stdout).group(1)
    assert not (first / "www").exists() and (first / "bundle" / "manifest.json").read_bytes() == manifest

    approved = run_command.replace("sha256:...", digest)
    published = run(approved, first)
    assert published.returncode == 0, published.stdout + published.stderr
    assert "plan %s" % digest in published.stdout
    assert sorted(tree(first / "www")) == ["reports/2026-06-04/.distributor.json", "reports/2026-06-04/chart.png",
                                           "reports/2026-06-04/notes.html", "reports/2026-06-04/report.html"]

    (first / "bundle" / "notes.md").write_text("# Notes\n\nChanged after the review.\n")
    refused = run(approved, first)
    assert refused.returncode != 0 and "plan_changed" in refused.stdout
