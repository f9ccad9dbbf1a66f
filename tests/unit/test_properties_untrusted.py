# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Property tests: random and mutated journals, states, manifests and settings never raise
anything but DistributorError, and every storage operation they cause stays in the bundle path."""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings, strategies as st

from ansible_collections.distributor.core.plugins.module_utils._distributor.errors import DistributorError
from ansible_collections.distributor.core.plugins.module_utils._distributor.records.config import parse_destination, parse_pipeline
from ansible_collections.distributor.core.plugins.module_utils._distributor.records.journal import parse_journal
from ansible_collections.distributor.core.plugins.module_utils._distributor.records.manifest import parse_manifest
from ansible_collections.distributor.core.plugins.module_utils._distributor.paths import path_problem
from ansible_collections.distributor.core.plugins.module_utils._distributor.operations.publish import publish
from ansible_collections.distributor.core.plugins.module_utils._distributor.releases.index import parse_index
from ansible_collections.distributor.core.plugins.module_utils._distributor.records.state_parse import parse_state

from builders import LATER, MEMORY_STORAGE, NOW, write_bundle
from memory_storage import MemoryStorage

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
NAMES = st.sampled_from(["index.html", "../outside.txt", "/etc/passwd", "a/../../b", ".distributor.json", "a//b",
                         "x\\y", "ok/page.html", "", ".", "caf\udce9.html", "\ud800", "..", "sub/.distributor.lock"])
JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8) | NAMES,
                    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8) | NAMES, inner, max_size=4),
                    max_leaves=20)


def quietly(parse, *args):
    try:
        parse(*args)
    except DistributorError:
        pass


@SETTINGS
@given(JSON)
def test_parsers_raise_only_distributor_errors(data):
    raw = json.dumps(data).encode()
    quietly(parse_journal, raw, "journal")
    quietly(parse_state, raw, "state")
    quietly(parse_index, raw, "index")
    quietly(parse_manifest, data, "manifest")
    quietly(parse_pipeline, data)
    quietly(parse_destination, data)


@SETTINGS
@given(st.fixed_dictionaries({"token": st.text(max_size=6) | NAMES, "writes": st.lists(NAMES | st.text(max_size=6), max_size=4)}))
def test_a_random_journal_is_accepted_only_with_clean_paths(journal):
    try:
        parsed = parse_journal(json.dumps(journal).encode(), "journal")
    except DistributorError as error:
        assert error.reason == "invalid_state"
        return
    assert all(path_problem(p) is None for p in parsed.paths)


def spying(store, seen):
    def opener(cfg, base, token):
        return MemoryStorage(store, base, token, fault=lambda op, path: seen.append((op, path)))
    return opener


MUTATIONS = st.sampled_from(["journal", "state_path", "state_garbage", "state_deep"])


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(MUTATIONS, st.lists(NAMES | st.text(max_size=6), min_size=1, max_size=3), st.booleans(), st.booleans())
def test_publish_over_a_mutated_root_stays_inside_the_bundle_path(tmp_path_factory, mutation, names, force, check):
    tmp = tmp_path_factory.mktemp("b")
    first = write_bundle(tmp / "b1", {"index.html": b"v1"}, created="2026-06-03T00:00:00Z")
    second = write_bundle(tmp / "b2", {"index.html": b"v2", "new.html": b"n"})
    store = {"outside.txt": b"keep", "other/page.html": b"keep"}
    destination = {"id": "archive", "storage": MEMORY_STORAGE, "path": "site"}
    publish(first, {"id": "reports"}, destination, now=NOW, opener=spying(store, []))
    state = json.loads(store["site/.distributor.json"])
    if mutation == "journal":
        store["site/.distributor.journal.json"] = json.dumps({"token": names[0], "writes": names}).encode()
    elif mutation == "state_path":
        state["outputs"][0]["path"] = names[0]
        store["site/.distributor.json"] = json.dumps(state).encode()
    elif mutation == "state_garbage":
        store["site/.distributor.json"] = json.dumps(dict(state, outputs=names)).encode()
    else:
        store["site/.distributor.json"] = b"[" * 3000 + b"]" * 3000
    seen = []
    try:
        publish(second, {"id": "reports"}, destination, force=force, check_mode=check, now=LATER, opener=spying(store, seen))
        succeeded = True
    except DistributorError:
        succeeded = False
    assert all(path_problem(path) is None for op, path in seen if op != "list"), seen
    assert store["outside.txt"] == b"keep" and store["other/page.html"] == b"keep"
    if succeeded and not check:
        parse_state(store["site/.distributor.json"], "state")  # the next run accepts what this one wrote


@SETTINGS
@given(st.text(min_size=1, max_size=12), st.sampled_from(["https://docs.example.com/{source_id}/", "http://h/{created:%Y/%m}/{source_id}",
                                                          "https://{source_id}/", "https://h/{source_id}?q={pipeline_id}"]))
def test_a_producer_id_never_moves_the_url_to_another_host(tmp_path_factory, source_id, base_url):
    bundle = write_bundle(tmp_path_factory.mktemp("b"), {"index.html": b"hi"}, id=source_id)
    store = {}
    destination = {"id": "archive", "storage": MEMORY_STORAGE, "links": {"base_url": base_url}}
    try:
        result = publish(bundle, {"id": "reports"}, destination, now=NOW, opener=spying(store, []))
    except DistributorError as error:
        assert error.reason in ("invalid_config", "invalid_manifest")
        return
    assert result["primary_url"].split("/")[2] in ("docs.example.com", "h")
    parse_state(store[".distributor.json"], "state")
