# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A planted record costs what reading a valid one of its size costs: it is refused at its first
error, named as today's messages name it, without a look at each of its millions of entries.

So each refusal's CPU time is compared with that of reading a valid record of the same size,
measured in the same test: a busy host slows both alike, where a fixed number of seconds failed
on one (6.4 s against 5.0). The margin is wide (MARGIN times the valid record's cost; the
refusals take 0.5 to 3 times it), and still far below what a look at every entry would cost.
"""

from __future__ import annotations

import json
import time
from functools import lru_cache

import pytest

from ansible_collections.distributor.core.plugins.module_utils._distributor.records.bundle import Bundle, read_manifest_json
from ansible_collections.distributor.core.plugins.module_utils._distributor.errors import DistributorError
from ansible_collections.distributor.core.plugins.module_utils._distributor.records.journal import Entry, Journal, serialize_journal
from ansible_collections.distributor.core.plugins.module_utils._distributor.limits import BYTES_PER_CONTAINER
from ansible_collections.distributor.core.plugins.module_utils._distributor.records.manifest import parse_manifest
from ansible_collections.distributor.core.plugins.module_utils._distributor.paths import JOURNAL_NAME, STATE_NAME
from ansible_collections.distributor.core.plugins.module_utils._distributor.records.schemas import load_json
from ansible_collections.distributor.core.plugins.module_utils._distributor.records.state import serialize_state, state_to_dict
from ansible_collections.distributor.core.plugins.module_utils._distributor.records.state_parse import parse_state
from ansible_collections.distributor.core.plugins.module_utils._distributor.operations.state_info import state_info

from builders import MEMORY_STORAGE, manifest, sha, shared_state, single_state, write_bundle
from memory_storage import MemoryStorage

PLANTED = 64 * 1024 * 1024
MARGIN = 10
# The same paths at a size that keeps the suite quick.
SMALLER = 8 * 1024 * 1024
DESTINATION = {"id": "archive", "storage": MEMORY_STORAGE}


def zeros(size: int) -> bytes:
    """A JSON array of `size` bytes of 2-byte entries: `[0,0,0,…]`."""
    return b"[" + b"0," * (size // 2 - 1) + b"0]"


def with_array(record: dict, key: str, array: bytes) -> bytes:
    """`record` as JSON with the array at `key` (a dotted path) replaced by the raw `array`."""
    *parents, last = key.split(".")
    inner = record
    for name in parents:
        inner = inner[name]
    inner[last] = "@planted@"
    return json.dumps(record).encode().replace(b'"@planted@"', array)


def valid_record() -> dict:
    return state_to_dict(single_state(manifest()))


def cpu_of(call):
    """(what `call` returned, its CPU seconds)."""
    start = time.process_time()
    result = call()
    return result, time.process_time() - start


def sized(build, size: int) -> bytes:
    """`build(n)`, the bytes of a valid record of n entries, with n chosen to make about `size` bytes."""
    empty, thousand = len(build(0)), len(build(1000))
    return build(max(0, (size - empty) * 1000 // (thousand - empty)))


def paths(count: int) -> list:
    return ["d/f%07d.txt" % i for i in range(count)]


def valid_state(count: int) -> bytes:
    return serialize_state(single_state(manifest(files=dict.fromkeys(paths(count), b"x")), paths=tuple(paths(count))))


@lru_cache(maxsize=None)
def valid_state_of(size: int) -> bytes:
    return sized(valid_state, size)


def valid_journal(count: int) -> bytes:
    return serialize_journal(Journal("t0", tuple(Entry(path, sha(b"x"), 1) for path in paths(count))))


def valid_manifest(count: int) -> bytes:
    return json.dumps(manifest(files=dict.fromkeys(paths(count), b"x")).to_dict()).encode()


def assert_costs_what_a_valid_one_does(cpu: float, valid: float, what: str) -> None:
    assert cpu < MARGIN * valid, "%.1f s of CPU to refuse %s, %.1f s to read a valid one of its size" % (cpu, what, valid)


def info_of(files: dict) -> dict:
    return state_info(DESTINATION, opener=lambda cfg, base, token: MemoryStorage(files, base, token))


def test_a_planted_state_of_64_mib_of_tiny_entries_is_invalid_state_in_seconds():
    """The record of the report: `outputs` of 2-byte entries, read by distributor_state_info."""
    files = {STATE_NAME: with_array(valid_record(), "outputs", zeros(PLANTED))}
    result, cpu = cpu_of(lambda: info_of(files))
    assert result["valid"] is False
    assert result["error"].startswith("memory:/.distributor.json: outputs[0] must be an object, not an integer")
    valid = {STATE_NAME: sized(valid_state, len(files[STATE_NAME]))}
    read, cpu_valid = cpu_of(lambda: info_of(valid))
    assert read["valid"] is True
    assert_costs_what_a_valid_one_does(cpu, cpu_valid, "a 64 MiB state")


@pytest.mark.parametrize("planted, error", [
    (lambda: zeros(SMALLER), "schema_version 'list' is not 1, 2 or 3"),
    (lambda: with_array(valid_record(), "source.manifest.files", zeros(SMALLER)),
     "source.manifest: files[0] must be an object, not an integer"),
    (lambda: with_array(state_to_dict(shared_state(("reports", "archive", manifest(), ["report.md"]))), "owners",
                        b"[" + b'{"pipeline_id": "", "destination_id": ""},' * (SMALLER // 43) + b"{}]"),
     'owners[0] is missing "reconciliation"'),
], ids=["top-level array", "embedded manifest", "owners"])
def test_other_planted_states_are_refused_at_their_first_error(planted, error):
    planted = planted()
    result, cpu = cpu_of(lambda: info_of({STATE_NAME: planted}))
    assert result["valid"] is False and error in result["error"]
    _read, cpu_valid = cpu_of(lambda: info_of({STATE_NAME: valid_state_of(len(planted))}))
    assert_costs_what_a_valid_one_does(cpu, cpu_valid, "an 8 MiB state")


@pytest.mark.parametrize("size, planted, error", [
    (PLANTED, lambda size: with_array({"token": "t0", "writes": []}, "writes", zeros(size)), "writes[0] 0 is not a string"),
    (SMALLER, zeros, "writes must be an array"),
], ids=["writes", "top-level array"])
def test_a_planted_journal_of_tiny_entries_is_invalid_state_in_seconds(size, planted, error):
    files = {STATE_NAME: serialize_state(single_state(manifest())), JOURNAL_NAME: planted(size)}
    result, cpu = cpu_of(lambda: info_of(files))
    assert result["valid"] is False and error in result["error"]
    valid = dict(files, **{JOURNAL_NAME: sized(valid_journal, len(files[JOURNAL_NAME]))})
    read, cpu_valid = cpu_of(lambda: info_of(valid))
    assert read["valid"] is True, read["error"]
    assert_costs_what_a_valid_one_does(cpu, cpu_valid, "a journal of %d bytes" % size)


def test_a_planted_manifest_of_64_mib_of_tiny_entries_is_invalid_manifest_in_seconds(tmp_path):
    bundle = write_bundle(tmp_path / "b", {"a.txt": b"a"})
    record = json.loads((tmp_path / "b/manifest.json").read_bytes())
    (tmp_path / "b/manifest.json").write_bytes(with_array(record, "files", zeros(PLANTED)))
    start = time.process_time()
    with pytest.raises(DistributorError) as failure:
        Bundle.load(bundle)
    cpu = time.process_time() - start
    assert failure.value.reason == "invalid_manifest"
    assert failure.value.message.endswith("manifest.json: files[0] must be an object, not an integer")
    valid = tmp_path / "valid.json"
    valid.write_bytes(sized(valid_manifest, PLANTED))
    _parsed, cpu_valid = cpu_of(lambda: parse_manifest(read_manifest_json(str(valid)), str(valid)))
    assert_costs_what_a_valid_one_does(cpu, cpu_valid, "a 64 MiB manifest")


def test_owners_of_empty_objects_are_refused_at_the_first():
    record = state_to_dict(shared_state(("reports", "archive", manifest(), ["report.md"])))
    with pytest.raises(DistributorError) as failure:
        parse_state(with_array(record, "owners", b"[" + b"{}," * 499 + b"{}]"), "s")
    assert failure.value.message == 's: owners[0] is missing "pipeline_id"'


@pytest.mark.parametrize("planted", [
    lambda: b"[" * PLANTED,
    lambda: with_array(state_to_dict(shared_state(("reports", "archive", manifest(), ["report.md"]))), "owners",
                       b"[" + b"{}," * 999_999 + b"{}]"),
    lambda: b"[" + b"[[[[[[[[]]]]]]]]," * (PLANTED // 17) + b"0]",
], ids=["brackets", "owners of a million empty objects", "nested arrays"])
def test_json_denser_than_any_record_is_refused_before_it_is_decoded(planted, monkeypatch):
    planted = planted()

    def decoded(*_args, **_kwargs):
        raise AssertionError("decoded before it was refused")

    monkeypatch.setattr(json, "loads", decoded)
    with pytest.raises(DistributorError) as failure:
        load_json(planted, "s", "invalid_state")
    assert failure.value.reason == "invalid_state"
    assert "arrays and objects in %d bytes, more than one per %d bytes" % (len(planted), BYTES_PER_CONTAINER) \
        in failure.value.message


def test_the_densest_record_distributor_writes_is_well_within_the_density_bound():
    """A shared root of owners of empty bundles, with one-letter ids, written without spaces."""
    m = manifest(id="x", files={})
    record = state_to_dict(shared_state(*(("p%d" % i, "d", m, []) for i in range(2000))))
    raw = json.dumps(record, separators=(",", ":")).encode()
    containers = raw.count(b"{") + raw.count(b"[")
    assert len(raw) / containers > 1.5 * BYTES_PER_CONTAINER
    assert len(parse_state(raw, "s").owners) == 2000


def test_brackets_inside_names_do_not_count_as_arrays_or_objects():
    paths = ["{[%d]}" % i + "{[" * 40 + ".txt" for i in range(3000)]
    m = manifest(files={p: b"x" for p in paths})
    raw = serialize_state(single_state(m, paths=tuple(sorted(paths))))
    assert raw.count(b"{") + raw.count(b"[") > len(raw) / BYTES_PER_CONTAINER, "not planted dense enough"
    assert len(parse_state(raw, "s").outputs) == 3000


def test_a_broken_output_after_many_valid_ones_is_named_by_its_index():
    m = manifest(files={"f%d" % i: b"x" for i in range(20000)})
    record = state_to_dict(single_state(m, paths=tuple("f%d" % i for i in range(20000))))
    record["outputs"].append(0)
    with pytest.raises(DistributorError) as failure:
        parse_state(json.dumps(record).encode(), "s")
    assert failure.value.message == "s: outputs[20000] must be an object, not an integer"


def test_owners_recorded_once_each_are_checked_in_linear_time():
    m = manifest(id="x", files={})
    raw = serialize_state(shared_state(*(("p%d" % i, "d", m, []) for i in range(20000))))
    state, cpu = cpu_of(lambda: parse_state(raw, "s"))
    assert len(state.owners) == 20000
    one_owner = sized(valid_state, len(raw))
    _state, cpu_one = cpu_of(lambda: parse_state(one_owner, "s"))
    # One owner's record is parsed in a few hundredths of a second, where a scheduler's noise is
    # a large part; a check that compared owners pairwise would cost a thousand times more.
    assert cpu < 5 * MARGIN * cpu_one, "%.1f s of CPU for 20,000 owners, %.1f s for one owner's record of that size" % (
        cpu, cpu_one)


def test_a_record_naming_a_path_that_is_not_utf8_never_makes_it_an_output():
    """Names that are not UTF-8 are listed as surrogate escapes, which JSON can write ("\\udce9"):
    a planted state or journal naming one is refused, so such a name is never managed and stays
    unmanaged (force may delete it), and recovery never deletes it."""
    name = "caf\udce9.txt"
    m = manifest()
    record = state_to_dict(single_state(m))
    record["outputs"][0]["path"] = name
    with pytest.raises(DistributorError) as failure:
        parse_state(json.dumps(record).encode(), "s")
    assert failure.value.message == "s: outputs[0].path 'caf\\udce9.txt' is not valid UTF-8"
    record = state_to_dict(single_state(m))
    record["source"]["manifest"]["files"][0]["path"] = record["outputs"][0]["path"] = name
    with pytest.raises(DistributorError) as failure:
        parse_state(json.dumps(record).encode(), "s")
    assert failure.value.message == 's: source.manifest: files[0].path "caf\\udce9.txt" is not valid UTF-8'
    files = {JOURNAL_NAME: json.dumps({"token": "t0", "writes": [name]}).encode()}
    result = info_of(dict(files, **{STATE_NAME: serialize_state(single_state(m))}))
    assert 'writes[0] "caf\\udce9.txt" is not valid UTF-8' in result["error"]
