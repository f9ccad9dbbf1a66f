# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The README's first playbook, taken from README.md and run verbatim, with its two commands:
the check shows the plan, and the run given that plan's digest publishes exactly it."""

from __future__ import annotations

import os
import re
import shutil

from conftest import REPO_ROOT, tree


def readme_section(title: str) -> str:
    with open(os.path.join(REPO_ROOT, "README.md"), encoding="utf-8") as handle:
        text = handle.read()
    start = text.index("\n## %s\n" % title)
    end = text.find("\n## ", start + 1)
    return text[start:end if end >= 0 else len(text)]


def fenced(section: str, language: str) -> str:
    return re.search(r"```%s\n(.*?)```" % language, section, re.S).group(1)


def test_the_readme_playbook_runs_as_written_check_then_approved_run(playbook, tmp_path):
    section = readme_section("A first playbook")
    (tmp_path / "publish.yml").write_text(fenced(section, "yaml"))
    shutil.copytree(os.path.join(REPO_ROOT, "examples", "bundle"), tmp_path / "bundle")
    manifest = (tmp_path / "bundle" / "manifest.json").read_bytes()
    check_command, run_command = fenced(section, "sh").strip().splitlines()
    assert check_command == "ansible-playbook -i localhost, publish.yml --check --diff"
    assert run_command == "ansible-playbook -i localhost, publish.yml -e approved=sha256:..."

    checked = playbook.invoke(str(tmp_path / "publish.yml"), check=True, diff=True)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "+report.html  sha256:" in checked.stdout and "WARNING" not in checked.stdout + checked.stderr
    digest = re.search(r"publish \[.*\]; plan (sha256:[0-9a-f]{64})", checked.stdout).group(1)
    assert not (tmp_path / "www").exists() and (tmp_path / "bundle" / "manifest.json").read_bytes() == manifest

    run = playbook.invoke(str(tmp_path / "publish.yml"), extra=("-e", "approved=" + digest))
    assert run.returncode == 0, run.stdout + run.stderr
    assert "plan %s" % digest in run.stdout
    published = sorted(tree(tmp_path / "www"))
    assert [p.split("/", 2)[2] for p in published] == [".distributor.json", "chart.png", "notes.html", "report.html"]

    (tmp_path / "bundle" / "notes.md").write_text("# Notes\n\nChanged after the review.\n")
    refused = playbook.invoke(str(tmp_path / "publish.yml"), extra=("-e", "approved=" + digest))
    assert refused.returncode != 0 and "plan_changed" in refused.stdout
