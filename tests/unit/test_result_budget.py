# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The result budget: every count and scalar kept, every list cut to `result_limit` and said so,
the `--diff` listing bounded, and the plan digest taken over the whole plan whatever is returned."""

from __future__ import annotations

import pytest

from ansible_collections.distributor.core.plugins.module_utils._distributor.budget import capped, check_limit, cut_arguments
from ansible_collections.distributor.core.plugins.module_utils._distributor.planning.digest import plan_digest
from ansible_collections.distributor.core.plugins.module_utils._distributor.errors import DistributorError
from ansible_collections.distributor.core.plugins.module_utils._distributor.operations.publish import publish

from builders import MEMORY_STORAGE, NOW, write_bundle
from memory_storage import MemoryStorage

PIPELINE = {"id": "reports"}
DEST = {"id": "archive", "storage": MEMORY_STORAGE, "links": {"base_url": "https://example.com/r/"}}


def memory(store):
    return lambda cfg, base, token: MemoryStorage(store, base, token)


def files(count: int, last: bytes = b"last\n") -> dict:
    made = {"f%03d.txt" % i: b"file %d\n" % i for i in range(count - 1)}
    made["f%03d.txt" % (count - 1)] = last
    return made


def test_a_capped_result_keeps_every_scalar_and_count_and_names_what_each_list_left_out():
    result = {"changed": True, "plan_digest": "sha256:x", "written": ["a", "b", "c"], "deleted": ["d"], "changes": []}
    assert capped(result, 2) == {
        "changed": True, "plan_digest": "sha256:x", "written": ["a", "b"], "written_count": 3, "deleted": ["d"],
        "deleted_count": 1, "changes": [], "changes_count": 0, "truncated": {"written": 1}}


def test_lists_inside_objects_are_cut_too_and_named_by_their_dotted_path_summed_over_list_entries():
    state = {"schema_version": 3, "owners": [{"source": {"manifest": {"files": [1, 2, 3]}}},
                                             {"source": {"manifest": {"files": [4, 5, 6, 7]}}}],
             "outputs": list(range(5))}
    cut = capped({"state": state}, 2)
    assert cut["state"]["outputs"] == [0, 1] and [o["source"]["manifest"]["files"] for o in cut["state"]["owners"]] == [[1, 2], [4, 5]]
    assert cut["truncated"] == {"state.outputs": 3, "state.owners.source.manifest.files": 3}
    assert "state_count" not in cut


def test_invalidation_paths_the_diff_and_warnings_are_never_cut():
    result = {"invalidation_paths": list("abcdef"), "diff": [{}, {}, {}], "warnings": ["w1", "w2", "w3"]}
    assert capped(result, 1) == dict(result, truncated={})


def test_result_limit_minus_one_returns_every_entry_and_zero_only_the_counts():
    result = {"written": ["a", "b"], "state": {"outputs": [1, 2]}}
    assert capped(result, -1) == dict(result, written_count=2, truncated={})
    assert capped(result, 0) == {"written": [], "written_count": 2, "state": {"outputs": []},
                                 "truncated": {"written": 2, "state.outputs": 2}}


def test_the_arguments_a_result_echoes_are_cut_like_its_lists_without_counts():
    arguments = {"manifest": {"id": "m", "files": [1, 2, 3]}, "source": "/b", "result_limit": 2}
    assert cut_arguments(arguments, 2) == {"manifest": {"id": "m", "files": [1, 2]}, "source": "/b", "result_limit": 2}
    assert cut_arguments(arguments, -1) == arguments


def test_a_result_limit_below_minus_one_is_invalid_config():
    check_limit(-1)
    check_limit(0)
    with pytest.raises(DistributorError) as caught:
        check_limit(-2)
    assert caught.value.reason == "invalid_config" and "result_limit -2" in caught.value.message


def test_the_plan_digest_covers_the_entries_a_capped_result_leaves_out(tmp_path):
    one = publish(write_bundle(tmp_path / "one", files(300)), PIPELINE, DEST, check_mode=True, now=NOW, opener=memory({}))
    other = publish(write_bundle(tmp_path / "other", files(300, b"edited\n")), PIPELINE, DEST, check_mode=True, now=NOW,
                    opener=memory({}))
    shown_one, shown_other = capped(one, 10), capped(other, 10)
    for name in ("written", "changes", "outputs", "invalidation_paths"):
        if name != "invalidation_paths":
            assert shown_one[name] == shown_other[name], "the difference lies beyond the first 10 entries"
    assert shown_one["plan_digest"] != shown_other["plan_digest"]
    assert shown_one["plan_digest"] == plan_digest(one["plan"]) == one["plan_digest"]
    assert shown_one["written_count"] == 300 and shown_one["truncated"]["changes"] == 290


def test_the_plan_digest_is_the_same_whatever_result_limit_the_diff_is_built_with(tmp_path):
    bundle = write_bundle(tmp_path / "b", files(50))
    digests = {publish(bundle, PIPELINE, DEST, check_mode=True, now=NOW, opener=memory({}), diff_contents=True,
                       result_limit=limit)["plan_digest"] for limit in (-1, 0, 3)}
    assert len(digests) == 1


def test_a_listing_over_the_limit_lists_the_changed_lines_first_by_path_and_counts_the_rest(tmp_path):
    store = {}
    publish(write_bundle(tmp_path / "v1", files(20), created="2026-06-03T00:00:00Z"), PIPELINE, DEST, now=NOW,
            opener=memory(store))
    changed = dict(files(20), **{"f005.txt": b"new 5\n", "f015.txt": b"new 15\n", "f019.txt": b"new 19\n", "new.txt": b"n\n"})
    del changed["f010.txt"]
    result = publish(write_bundle(tmp_path / "v2", changed), PIPELINE, DEST, check_mode=True, now=NOW, opener=memory(store),
                     result_limit=3)
    before, after = result["diff"][0]["before"], result["diff"][0]["after"]
    assert [line.split()[0] for line in before.splitlines() if not line.startswith("#")] == ["f005.txt", "f010.txt", "f015.txt"]
    assert [line.split()[0] for line in after.splitlines() if not line.startswith("#")] == ["f005.txt", "f015.txt"]
    assert before.splitlines()[-1] == "# 17 more output(s) not shown, 1 of them changed"
    assert after.splitlines()[-1] == "# 18 more output(s) not shown, 2 of them changed"


def test_a_listing_of_as_many_outputs_as_the_limit_lists_every_one(tmp_path):
    listed = publish(write_bundle(tmp_path / "v1", files(5)), PIPELINE, DEST, check_mode=True, now=NOW,
                     opener=memory({}), result_limit=5)["diff"][0]["after"]
    assert len([line for line in listed.splitlines() if not line.startswith("#")]) == 5 and "more output" not in listed
