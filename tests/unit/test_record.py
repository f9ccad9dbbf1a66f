# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The record file: the whole result and plan as JSON lines, written atomically by the module's
own open, with the digest of its bytes."""

from __future__ import annotations

import hashlib
import json
import os
import stat
from types import SimpleNamespace

import pytest

from ansible_collections.distributor.core.plugins.module_utils._distributor.operations.adapter import _recorded
from ansible_collections.distributor.core.plugins.module_utils._distributor.errors import DistributorError
from ansible_collections.distributor.core.plugins.module_utils._distributor.operations.publish import publish
from ansible_collections.distributor.core.plugins.module_utils._distributor.operations.record import (
    prepare_record, record_lines, write_record)

from builders import MEMORY_STORAGE, NOW, write_bundle
from memory_storage import MemoryStorage

PIPELINE = {"id": "reports", "outputs": [{"match": "*.md", "transform": "markdown_to_html"}, {"match": "*.txt"}]}
DEST = {"id": "archive", "storage": MEMORY_STORAGE}
NOBODY = 65534


def published(tmp_path, count=30) -> dict:
    made = {"p%02d.md" % i: b"# Page %d\n" % i for i in range(count)}
    made["notes.txt"] = b"notes\n"
    return publish(write_bundle(tmp_path / "bundle", made), PIPELINE, DEST, check_mode=True, now=NOW,
                   opener=lambda cfg, base, token: MemoryStorage({}, base, token), diff_contents=True)


def lines_of(path) -> list:
    with open(path, "rb") as handle:
        return [json.loads(line) for line in handle]


def test_the_record_holds_every_entry_of_every_list_and_the_plan_the_digest_is_taken_over(tmp_path):
    result = published(tmp_path)
    plan = result.pop("plan")
    where = str(tmp_path / "records" / "r.jsonl")
    with prepare_record(where) as record:
        digest = write_record(record, record_lines("distributor_publish", True, result, plan))
    with open(where, "rb") as handle:
        assert digest == "sha256:" + hashlib.sha256(handle.read()).hexdigest()
    head, planned, *rest = lines_of(where)
    assert head["record_format"] == 1 and head["module"] == "distributor_publish" and head["check_mode"] is True
    assert head["result"]["plan_digest"] == result["plan_digest"] and head["result"]["written_count"] == 31
    canonical = json.dumps(planned["plan"], sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode("ascii")
    assert "sha256:" + hashlib.sha256(canonical).hexdigest() == result["plan_digest"]
    assert [line["written"] for line in rest if "written" in line] == result["written"]
    assert [line["changes"] for line in rest if "changes" in line] == result["changes"]
    assert [line["state"] for line in rest if "state" in line] == [result["state"]]
    assert not [line for line in rest if "diff" in line], "the diff is presentation, not record"


def test_a_link_at_the_record_path_is_replaced_not_written_through(tmp_path):
    victim = tmp_path / "victim"
    victim.write_bytes(b"keep me\n")
    link = tmp_path / "record.jsonl"
    link.symlink_to(victim)
    with prepare_record(str(link)) as record:
        write_record(record, iter([b"{}\n"]))
    assert victim.read_bytes() == b"keep me\n"
    assert not link.is_symlink() and link.read_bytes() == b"{}\n"


def test_a_failed_write_keeps_the_previous_record_and_leaves_no_staged_file(tmp_path):
    where = tmp_path / "record.jsonl"
    where.write_bytes(b"previous\n")

    def lines():
        yield b"{}\n"
        raise OSError(28, "No space left on device")

    with pytest.raises(DistributorError) as caught, prepare_record(str(where)) as record:
        write_record(record, lines())
    assert caught.value.reason == "storage_error" and "No space left on device" in caught.value.message
    assert sorted(os.listdir(tmp_path)) == ["record.jsonl"] and where.read_bytes() == b"previous\n"


def test_prepare_record_creates_the_directory_and_refuses_what_cannot_be_a_record(tmp_path):
    with prepare_record(str(tmp_path / "a" / "b" / "r.jsonl")) as record:
        assert record.where == str(tmp_path / "a" / "b" / "r.jsonl")
    assert (tmp_path / "a" / "b").is_dir()
    (tmp_path / "file").write_bytes(b"")
    for path, words in ((tmp_path / "a", "is a directory"), (tmp_path / "file" / "r.jsonl", "cannot create its directory")):
        with pytest.raises(DistributorError) as caught:
            prepare_record(str(path))
        assert caught.value.reason == "invalid_config" and words in caught.value.message


def test_a_record_that_cannot_be_written_after_a_real_run_says_the_run_itself_completed(tmp_path):
    module = SimpleNamespace(_name="distributor_publish", check_mode=False)
    result = {"changed": True, "plan_digest": "sha256:" + "a" * 64, "written": ["a.html"]}
    with pytest.raises(DistributorError) as caught, prepare_record(str(tmp_path / "gone" / "record.jsonl")) as record:
        (tmp_path / "gone").rmdir()
        _recorded(record, module, result, None)
    assert caught.value.reason == "storage_error"
    assert "the run itself completed (changed: True, plan_digest sha256:%s)" % ("a" * 64) in caught.value.message
    assert caught.value.details == {"changed": True, "plan_digest": "sha256:" + "a" * 64}


def test_the_record_is_created_with_mode_0600_even_over_a_record_others_could_read(tmp_path):
    where = tmp_path / "record.jsonl"
    where.write_bytes(b"previous\n")
    where.chmod(0o644)
    with prepare_record(str(where)) as record:
        write_record(record, iter([b"{}\n"]))
    assert stat.S_IMODE(where.stat().st_mode) == 0o600 and where.read_bytes() == b"{}\n"


@pytest.mark.skipif(os.geteuid() != 0, reason="root writing the record where another account planted a link")
def test_a_link_another_account_planted_at_the_records_directory_is_refused_and_nothing_is_written_through_it(tmp_path):
    """The issue's case: root's record_file in a sticky world-writable directory, where uid 65534
    put a link at the record's directory, not yet made, to a root-only directory. The shared
    directory is that account's own, so the kernel would follow the link even with
    fs.protected_symlinks=1."""
    root_only = tmp_path / "root-only"
    root_only.mkdir(mode=0o700)
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)
    os.chown(shared, NOBODY, NOBODY)
    (shared / "records").symlink_to(root_only)
    os.lchown(shared / "records", NOBODY, NOBODY)
    with pytest.raises(DistributorError) as caught:
        prepare_record(str(shared / "records" / "run0.jsonl"))
    assert caught.value.reason == "invalid_config"
    assert "%s is a symbolic link" % (shared / "records") in caught.value.message
    assert os.listdir(root_only) == []


@pytest.mark.skipif(os.geteuid() != 0, reason="needs a directory of another account")
def test_a_directory_on_the_way_that_another_account_owns_is_named_in_a_warning(tmp_path):
    theirs = tmp_path / "theirs"
    theirs.mkdir(mode=0o755)
    os.chown(theirs, NOBODY, NOBODY)
    with prepare_record(str(theirs / "sub" / "run0.jsonl")) as record:
        [warning] = record.warnings
    assert warning.startswith("record_file %s: " % (theirs / "sub" / "run0.jsonl"))
    assert "%s is owned by uid %d" % (theirs, NOBODY) in warning and "can replace the record" in warning


def test_a_sticky_world_writable_directory_on_the_way_is_named_and_a_private_one_is_not(tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    with prepare_record(str(shared / "run0.jsonl")) as record:
        [warning] = record.warnings
    assert "%s is writable by every account (mode 1777)" % shared in warning
    with prepare_record(str(private / "run0.jsonl")) as record:
        assert not [warning for warning in record.warnings if "%s is" % private in warning]
