# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""`--diff` shows what changes inside the text outputs, as ansible.builtin.copy shows it."""

from __future__ import annotations

from conftest import tree

PIPELINE = {"id": "reports", "outputs": [{"match": "*.md", "transform": "markdown_to_html"}, {"match": "*.txt"},
                                         {"match": "*.png"}, {"match": "*.csv"}]}
BIG = b"day,value\n" + b"2026-06-04,1\n" * 6000  # 78 kB, over the 64 KiB bound per file


def destination(root) -> dict:
    return {"id": "archive", "storage": {"type": "local", "root": str(root)}}


def publish(source: str, root, **task) -> dict:
    return dict({"distributor.core.distributor_publish": {"source": source, "pipeline": PIPELINE, "destination": destination(root)}},
                **task)


def test_check_diff_shows_old_against_new_content_and_writes_nothing(playbook, make_bundle, tmp_path):
    root = tmp_path / "root"
    first = make_bundle({"report.md": b"# Report\n\nRevenue was flat.\n", "notes.txt": b"first draft\n",
                         "chart.png": b"\x89PNG\r\n\x1a\n\0v1", "data.csv": BIG}, created="2026-06-03T00:00:00Z")
    playbook.run([publish(first, root)])
    second = make_bundle({"report.md": b"# Report\n\nRevenue grew 4%.\n", "notes.txt": b"second draft\n",
                          "chart.png": b"\x89PNG\r\n\x1a\n\0v2", "data.csv": BIG + b"2026-06-05,2\n"})
    published = tree(root)

    [checked] = playbook.run([publish(second, root, check_mode=True, diff=True)])
    assert tree(root) == published, "check mode with --diff wrote to the destination"
    listing, *entries = checked["diff"]
    assert "notes.txt" in listing["after"] and listing["before_header"].endswith("/.distributor.json")
    by_path = {e["after_header"][len(str(root)) + 1:]: e for e in entries}
    assert sorted(by_path) == sorted(checked["written"]) == ["chart.png", "data.csv", "notes.txt", "report.html"]
    assert (by_path["notes.txt"]["before"], by_path["notes.txt"]["after"]) == ("first draft\n", "second draft\n")
    assert "Revenue was flat." in by_path["report.html"]["before"] and "Revenue grew 4%." in by_path["report.html"]["after"]
    assert by_path["chart.png"]["prepared"] == "diff skipped: %s/chart.png: new content is binary\n" % root
    assert "over the bound of 65536 bytes per file" in by_path["data.csv"]["prepared"]

    # The real run with --diff shows the same content diffs, read before it overwrote them.
    [real] = playbook.run([publish(second, root, diff=True)])
    assert real["diff"][1:] == entries
    assert tree(root)["notes.txt"] == b"second draft\n"


def test_ansible_prints_a_unified_diff_of_the_page_and_one_line_for_binary(playbook, make_bundle, tmp_path):
    root = tmp_path / "root"
    playbook.run([publish(make_bundle({"notes.txt": b"alpha\nbeta\n", "chart.png": b"\0v1"}, created="2026-06-03T00:00:00Z"), root)])
    second = make_bundle({"notes.txt": b"alpha\ngamma\n", "chart.png": b"\0v2"})
    playbook_file = tmp_path / "review.yml"
    playbook_file.write_text(
        "- hosts: localhost\n  gather_facts: false\n  tasks:\n"
        "    - distributor.core.distributor_publish:\n"
        "        source: %s\n        pipeline: {id: reports}\n"
        "        destination: {id: archive, storage: {type: local, root: %s}}\n" % (second, root))
    completed = playbook.invoke(str(playbook_file), check=True, diff=True)
    assert completed.returncode == 0, completed.stdout + completed.stderr
    out = completed.stdout
    assert "--- before: %s/notes.txt\n+++ after: %s/notes.txt\n" % (root, root) in out
    assert "-beta\n+gamma\n" in out
    assert "diff skipped: %s/chart.png: new content is binary\n" % root in out


def test_outputs_without_text_changes_have_no_content_diff_and_a_skip_has_none(playbook, make_bundle, tmp_path):
    root = tmp_path / "root"
    bundle = make_bundle({"notes.txt": b"same\n"})
    first, again = playbook.run([publish(bundle, root, diff=True), publish(bundle, root, diff=True)])
    assert [(e["before"], e["after"]) for e in first["diff"][1:]] == [("", "same\n")]
    assert again["action"] == "skip" and len(again["diff"]) == 1
