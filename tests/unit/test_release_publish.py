# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Publishing in release mode (#30), on the memory double: a publish builds a whole generation
beside the live one and switches the link to it; a skip makes none; keep-N keeps good releases;
a dead build is marked failed and cleared; distributor_release switches forward and back."""

from __future__ import annotations

import json
import os
from datetime import timedelta

import pytest

from ansible_collections.distributor.core.plugins.module_utils._distributor.errors import DistributorError
from ansible_collections.distributor.core.plugins.module_utils._distributor.operations.prune import prune
from ansible_collections.distributor.core.plugins.module_utils._distributor.operations.publish import publish
from ansible_collections.distributor.core.plugins.module_utils._distributor.releases.home import SharedLinks
from ansible_collections.distributor.core.plugins.module_utils._distributor.operations.switch import switch_release
from ansible_collections.distributor.core.plugins.module_utils._distributor.timestamps import format_rfc3339

from builders import LATER, MEMORY_STORAGE, NOW, write_bundle
from memory_storage import MemoryStorage, hard_link
from test_crash_safety import Killed

PIPELINE = {"id": "site"}
HOME = ".distributor-releases/site"


def destination(**releases):
    return {"id": "web", "storage": MEMORY_STORAGE, "path": "site", "releases": dict({"keep": 3}, **releases)}


def opener(store, cut=None):
    return lambda cfg, base, token: MemoryStorage(store, base, token, cut)


def look(store) -> MemoryStorage:
    return MemoryStorage(store, "")


def live(store) -> str:
    kind, target = look(store).entry("site")
    assert kind == "link" and target.startswith(HOME + "/"), (kind, target)
    return target.rpartition("/")[2]


def index(store) -> dict:
    return json.loads(look(store).read_bytes(HOME + "/.distributor-releases.json", 1 << 20))


def statuses(store) -> dict:
    return {r["id"]: r["status"] for r in index(store)["releases"]}


def generations(store) -> set:
    return {p.split("/")[2] for p in look(store).list_files() if p.startswith(HOME + "/") and p.count("/") > 2}


def bundle(tmp_path, name, files, created="2026-06-04T11:55:00Z"):
    return write_bundle(tmp_path / name, files, id="site.example", created=created)


def publish_files(tmp_path, store, name, files, dest=None, **kwargs):
    """A publish of `files` made at `now`, its bundle created a minute before."""
    now = kwargs.pop("now", NOW)
    created = format_rfc3339(now - timedelta(minutes=1))
    return publish(bundle(tmp_path, name, files, created), PIPELINE, dest or destination(), now=now,
                   opener=opener(store, kwargs.pop("cut", None)), **kwargs)


def read(store, path) -> bytes:
    return look(store).read_bytes(path, 1 << 20)


def test_a_first_publish_makes_a_generation_and_links_the_bundle_path_to_it(tmp_path):
    store = {}
    result = publish_files(tmp_path, store, "one", {"index.html": b"one", "app.css": b"css"})
    release = live(store)
    assert result["release"]["id"] == release and result["release"]["status"] == "active"
    assert read(store, "%s/%s/index.html" % (HOME, release)) == b"one"
    assert read(store, "%s/%s/.distributor.json" % (HOME, release)) is not None
    assert statuses(store) == {release: "active"}


def test_a_publish_links_what_stays_and_writes_what_changes_then_switches(tmp_path):
    store = {}
    publish_files(tmp_path, store, "one", {"index.html": b"one", "app.css": b"css"})
    first = live(store)
    result = publish_files(tmp_path, store, "two", {"index.html": b"two", "app.css": b"css"}, now=LATER)
    second = live(store)
    assert second != first and result["written"] == ["index.html"]
    assert read(store, "%s/%s/index.html" % (HOME, first)) == b"one"
    assert read(store, "%s/%s/index.html" % (HOME, second)) == b"two"
    shared = store["%s/%s/app.css" % (HOME, second)]
    assert shared is store["%s/%s/app.css" % (HOME, first)] and shared.links(store) == 2
    assert statuses(store) == {first: "superseded", second: "active"}


def test_a_skip_makes_no_generation(tmp_path):
    store = {}
    files = {"index.html": b"one"}
    publish_files(tmp_path, store, "one", files)
    before = index(store)
    result = publish_files(tmp_path, store, "again", files)
    assert result["changed"] is False and result["release"]["id"] is None
    assert len(generations(store)) == 1 and index(store) == before


def test_keep_removes_superseded_generations_beyond_keep_but_never_the_previous_one(tmp_path):
    store = {}
    ids = []
    for n in range(5):
        publish_files(tmp_path, store, "b%d" % n, {"index.html": b"v%d" % n}, dest=destination(keep=2),
                      now=NOW.replace(hour=n))
        ids.append(live(store))
    assert generations(store) == set(ids[-2:])
    assert statuses(store) == {ids[-2]: "superseded", ids[-1]: "active"}


def killed_at(operation, nth=1):
    """A fault that kills the run (SIGKILL: no clean-up) at its `nth` `operation`."""
    seen = []

    def fault(op, path):
        if op == operation:
            seen.append(path)
            if len(seen) == nth:
                raise Killed("killed at %s %s" % (op, path))
    return fault


def test_five_failed_publishes_then_one_success_leave_the_active_and_the_previous_good_one(tmp_path):
    store = {}
    publish_files(tmp_path, store, "good1", {"index.html": b"g1", "app.css": b"c"}, now=NOW.replace(hour=1))
    publish_files(tmp_path, store, "good2", {"index.html": b"g2", "app.css": b"c"}, now=NOW.replace(hour=2))
    good = live(store)
    for n in range(5):
        with pytest.raises(Killed):
            publish_files(tmp_path, store, "bad%d" % n, {"index.html": b"bad%d" % n, "app.css": b"c"},
                          cut=killed_at("rename" if n % 2 else "write", 2), now=NOW.replace(hour=3 + n))
        assert live(store) == good
    bad = {i: status for i, status in statuses(store).items() if i > good}
    assert bad and set(bad.values()) <= {"staged", "failed"} and len(generations(store)) > 2
    result = publish_files(tmp_path, store, "good3", {"index.html": b"g3", "app.css": b"c"}, dest=destination(keep=1),
                           now=NOW.replace(hour=9))
    assert result["release"]["kept"] == [] and set(bad) <= set(result["release"]["removed"])
    assert generations(store) == {good, live(store)}
    assert statuses(store) == {good: "superseded", live(store): "active"}


class Written(dict):
    """A store that remembers every key ever set in it, the lock's included."""

    def __init__(self):
        super().__init__()
        self.keys = []

    def __setitem__(self, key, value):
        self.keys.append(key)
        super().__setitem__(key, value)


@pytest.mark.parametrize("check_mode", [False, True])
def test_a_storage_that_cannot_switch_atomically_is_refused_before_the_lock_is_taken(tmp_path, check_mode):
    store = Written()
    with pytest.raises(DistributorError) as refused:
        publish(bundle(tmp_path, "one", {"index.html": b"one"}), PIPELINE, destination(), now=NOW, check_mode=check_mode,
                opener=lambda cfg, base, token: MemoryStorage(store, base, token, lacks=frozenset({"switch"})))
    assert refused.value.reason == "storage_error" and "posix-rename@openssh.com" in refused.value.message
    assert store.keys == []


def test_a_run_killed_between_the_switch_and_its_record_leaves_the_live_release_active_for_the_next(tmp_path):
    store = {}
    for n in (1, 2):
        publish_files(tmp_path, store, "good%d" % n, {"index.html": b"g%d" % n, "app.css": b"c"}, now=NOW.replace(hour=n))
    seen = []

    def after_the_switch(op, path):
        seen.append(op)
        if op == "write" and "switch" in seen:
            raise Killed("killed before the switch was recorded")
    with pytest.raises(Killed):
        publish_files(tmp_path, store, "good3", {"index.html": b"g3", "app.css": b"c"}, now=NOW.replace(hour=3),
                      cut=after_the_switch)
    switched = live(store)
    assert switched in statuses(store) and statuses(store)[switched] != "active"
    result = publish_files(tmp_path, store, "good4", {"index.html": b"g4", "app.css": b"c"}, now=NOW.replace(hour=4))
    assert result["release"]["from"] == switched and result["release"]["previous"] == switched
    assert switched not in result["release"]["removed"] and statuses(store)[switched] == "superseded"
    assert list(statuses(store).values()).count("active") == 1


def test_a_build_killed_once_its_record_is_written_is_cleared_by_that_record_not_the_one_it_was_built_from(tmp_path):
    store = {}
    publish_files(tmp_path, store, "one", {"index.html": b"one", "app.css": b"c"}, now=NOW.replace(hour=1))
    seen = []

    def before_built(op, path):
        seen.append((op, path))
        if op == "write" and path == ".distributor-releases.json" and ("write", ".distributor.json") in seen:
            raise Killed("killed before the build was recorded")
    with pytest.raises(Killed):
        publish_files(tmp_path, store, "two", {"index.html": b"two", "app.css": b"c"}, now=NOW.replace(hour=2),
                      cut=before_built)
    dead = [i for i, status in statuses(store).items() if status == "staged"]
    result = publish_files(tmp_path, store, "three", {"index.html": b"three", "app.css": b"c"}, now=NOW.replace(hour=3))
    assert result["release"]["failed"] == dead and result["release"]["kept"] == [] and dead[0] in result["release"]["removed"]
    assert dead[0] not in generations(store)


def test_releases_made_within_one_second_or_on_a_clock_behind_sort_as_they_were_made(tmp_path):
    store = {}
    made = []
    for n, now in enumerate((LATER, LATER, NOW)):
        created = "2026-06-01T00:00:0%dZ" % n
        publish(bundle(tmp_path, "b%d" % n, {"index.html": b"v%d" % n}, created), PIPELINE, destination(keep=2), now=now,
                opener=opener(store))
        made.append(live(store))
    assert made == sorted(made) and len(set(made)) == 3
    assert statuses(store) == {made[1]: "superseded", made[2]: "active"}
    back = switch_release("site", destination(), "previous", opener=opener(store))
    assert back["release"] == made[1] and back["rollback"]


def test_check_mode_predicts_the_plan_digest_of_the_run(tmp_path):
    store = {}
    publish_files(tmp_path, store, "one", {"index.html": b"one"})
    files = {"index.html": b"two"}
    checked = publish_files(tmp_path, store, "two", files, now=LATER, check_mode=True)
    assert checked["release"]["id"] is None and len(generations(store)) == 1
    done = publish_files(tmp_path, store, "two", files, now=LATER, expect_plan_digest=checked["plan_digest"])
    assert done["plan_digest"] == checked["plan_digest"] and done["release"]["status"] == "active"


def test_a_staged_release_is_built_but_not_switched_until_activated(tmp_path):
    store = {}
    publish_files(tmp_path, store, "one", {"index.html": b"one"})
    first = live(store)
    staged = publish_files(tmp_path, store, "two", {"index.html": b"two"}, dest=destination(activate=False), now=LATER)
    assert staged["release"]["status"] == "staged" and live(store) == first
    new = staged["release"]["id"]
    checked = switch_release("site", destination(), new, check_mode=True, opener=opener(store))
    assert checked["changed"] and live(store) == first
    done = switch_release("site", destination(), new, opener=opener(store), expect_plan_digest=checked["plan_digest"])
    assert done["changed"] and live(store) == new and done["from"] == first
    again = switch_release("site", destination(), new, opener=opener(store))
    assert again["changed"] is False


def test_rollback_to_previous_skips_releases_rolled_back_from(tmp_path):
    store = {}
    ids = []
    for n in range(3):
        publish_files(tmp_path, store, "b%d" % n, {"index.html": b"v%d" % n}, now=NOW.replace(hour=n))
        ids.append(live(store))
    back = switch_release("site", destination(), "previous", opener=opener(store))
    assert back["rollback"] and live(store) == ids[1] and statuses(store)[ids[2]] == "rolled_back"
    switch_release("site", destination(), "previous", opener=opener(store))
    assert live(store) == ids[0]
    with pytest.raises(DistributorError) as refused:
        switch_release("site", destination(), "previous", opener=opener(store))
    assert refused.value.reason == "no_release"


def test_unmanaged_content_in_the_live_generation_makes_a_release_publish_refuse(tmp_path):
    store = {}
    publish_files(tmp_path, store, "one", {"index.html": b"one"})
    look(store).write_bytes("%s/%s/planted.html" % (HOME, live(store)), b"x")
    with pytest.raises(DistributorError) as refused:
        publish_files(tmp_path, store, "two", {"index.html": b"two"}, now=LATER)
    assert refused.value.reason == "unmanaged" and "planted.html" in str(refused.value)
    assert "force" not in str(refused.value)
    with pytest.raises(DistributorError) as refused:
        publish_files(tmp_path, store, "three", {"index.html": b"two"}, now=LATER, force=True)
    assert refused.value.reason == "unmanaged" and "force" not in str(refused.value)


def test_a_plain_bundle_path_is_converted_only_when_asked(tmp_path):
    store = {}
    publish(bundle(tmp_path, "plain", {"index.html": b"one"}), PIPELINE, {"id": "web", "storage": MEMORY_STORAGE, "path": "site"},
            now=NOW, opener=opener(store))
    with pytest.raises(DistributorError) as refused:
        publish_files(tmp_path, store, "two", {"index.html": b"two"}, now=LATER)
    assert refused.value.reason == "conflict" and "convert" in str(refused.value)
    for release in ("previous", "20260604T115500Z-0123456789ab"):
        with pytest.raises(DistributorError) as refused:
            switch_release("site", destination(), release, opener=opener(store))
        assert refused.value.reason == "no_release" and refused.value.message.endswith(
            "/site is a plain directory, not in release mode: it holds no release to switch to. Publish once with "
            "releases.convert: true to make the directory the first release (docs/config.md, releases)")
    result = publish_files(tmp_path, store, "two", {"index.html": b"two"}, dest=destination(convert=True), now=LATER)
    assert result["release"]["converted"]["id"] in statuses(store)
    assert read(store, "%s/%s/index.html" % (HOME, live(store))) == b"two"


def test_a_planted_link_target_is_refused_and_names_the_link(tmp_path):
    store = {}
    publish_files(tmp_path, store, "one", {"index.html": b"one"})
    look(store).switch("site", "../../etc", HOME + "/.distributor.switch.x")
    with pytest.raises(DistributorError) as refused:
        publish_files(tmp_path, store, "two", {"index.html": b"two"}, now=LATER)
    assert refused.value.reason == "invalid_state" and "site" in str(refused.value)


def shared(pipeline_id, **releases):
    return {"id": "web", "storage": MEMORY_STORAGE, "path": "site", "state": {"mode": "shared_root"},
            "releases": dict({"keep": 3}, **releases)}


def test_in_a_shared_root_each_owner_publish_carries_the_others_outputs_by_link_and_a_rollback_names_whose_tree_changes(tmp_path):
    store = {}
    docs = bundle(tmp_path, "docs", {"docs/index.html": b"docs"}, created="2026-06-04T10:00:00Z")
    publish(docs, {"id": "docs"}, shared("docs"), now=NOW, opener=opener(store))
    first = live(store)
    blog = bundle(tmp_path, "blog", {"blog/index.html": b"blog"}, created="2026-06-04T10:00:00Z")
    result = publish(blog, {"id": "blog"}, shared("blog"), now=LATER, opener=opener(store))
    second = live(store)
    assert result["written"] == ["blog/index.html"]
    carried = store["%s/%s/docs/index.html" % (HOME, second)]
    assert carried is store["%s/%s/docs/index.html" % (HOME, first)] and carried.links(store) == 2
    records = [json.loads(read(store, "%s/%s/.distributor.json" % (HOME, g))) for g in (first, second)]
    docs_records = [[o for o in r["outputs"] if o["pipeline_id"] == "docs"] for r in records]
    assert docs_records[0] == docs_records[1]
    back = switch_release("docs", shared("docs"), "previous", opener=opener(store))
    assert back["owners"] == ["blog/web"] and live(store) == first


def test_a_preview_is_built_verified_and_named_by_its_url(tmp_path):
    store = {}
    publish_files(tmp_path, store, "one", {"index.html": b"one"})
    dest = destination(activate=False, preview_url="https://preview.example.com/{release}/")
    staged = publish_files(tmp_path, store, "two", {"index.html": b"two"}, dest=dest, now=LATER)
    release = staged["release"]["id"]
    assert staged["release"]["preview_url"] == "https://preview.example.com/%s/" % release
    assert statuses(store)[release] == "staged" and read(store, "%s/%s/index.html" % (HOME, release)) == b"two"


def test_a_staged_release_someone_emptied_is_never_switched_to(tmp_path):
    store = {}
    publish_files(tmp_path, store, "one", {"index.html": b"one"})
    staged = publish_files(tmp_path, store, "two", {"index.html": b"two"}, dest=destination(activate=False), now=LATER)
    release = staged["release"]["id"]
    look(store).delete("%s/%s/index.html" % (HOME, release))
    with pytest.raises(DistributorError) as refused:
        switch_release("site", destination(), release, opener=opener(store))
    assert refused.value.reason == "storage_error" and "not whole" in str(refused.value)
    assert live(store) != release


def test_a_storage_that_cannot_switch_atomically_is_refused_before_anything_is_written(tmp_path):
    store = {}

    def lacking(cfg, base, token):
        return MemoryStorage(store, base, token, lacks=frozenset({"switch"}))
    with pytest.raises(DistributorError) as refused:
        publish(bundle(tmp_path, "one", {"index.html": b"one"}), PIPELINE, destination(), now=NOW, opener=lacking)
    assert refused.value.reason == "storage_error" and "posix-rename@openssh.com" in str(refused.value)
    assert store == {}


def test_outputs_a_storage_cannot_link_are_written_again_from_the_bundle(tmp_path):
    store = {}
    publish_files(tmp_path, store, "one", {"index.html": b"one", "app.css": b"css"})
    first = live(store)

    def lacking(cfg, base, token):
        return MemoryStorage(store, base, token, lacks=frozenset({"link"}))
    publish(bundle(tmp_path, "two", {"index.html": b"two", "app.css": b"css"}, created="2026-06-05T11:00:00Z"), PIPELINE,
            destination(), now=LATER, opener=lacking)
    second = live(store)
    assert read(store, "%s/%s/app.css" % (HOME, second)) == b"css"
    assert store["%s/%s/app.css" % (HOME, second)] is not store["%s/%s/app.css" % (HOME, first)]


def test_a_diff_shows_the_old_content_of_a_file_the_generations_share_and_refuses_a_planted_extra_name(tmp_path):
    """The planted file has two names, as many as the two generations gave notes.txt: the count
    matches, but the other generation holds another file there, so it is refused unread, for
    its links (not later, for bytes its record does not name)."""
    store = {}
    publish_files(tmp_path, store, "one", {"index.html": b"one", "notes.txt": b"old\n"}, now=NOW.replace(hour=1))
    publish_files(tmp_path, store, "two", {"index.html": b"two", "notes.txt": b"old\n"}, now=NOW.replace(hour=2))
    checked = publish_files(tmp_path, store, "three", {"index.html": b"two", "notes.txt": b"new\n"},
                            now=NOW.replace(hour=3), check_mode=True, diff_contents=True)
    shown = {e["after_header"].rpartition("/")[2]: e for e in checked["diff"][1:]}
    assert (shown["notes.txt"]["before"], shown["notes.txt"]["after"]) == ("old\n", "new\n")
    store["secret"] = b"secret\n"
    hard_link(store, "secret", "%s/%s/notes.txt" % (HOME, live(store)))
    assert store["secret"].links(store) == 2
    checked = publish_files(tmp_path, store, "three", {"index.html": b"two", "notes.txt": b"new\n"},
                            now=NOW.replace(hour=3), check_mode=True, diff_contents=True)
    shown = {e["after_header"].rpartition("/")[2]: e for e in checked["diff"][1:]}
    assert "old content not shown: the file has 2 links" in shown["notes.txt"]["prepared"], shown["notes.txt"]
    assert "secret" not in json.dumps(checked["diff"])


def test_prune_acts_on_the_live_generation_and_leaves_the_others_whole(tmp_path):
    store = {}
    dest = dict(destination(), retention={"max_outputs": 1})
    publish_files(tmp_path, store, "one", {"a.txt": b"a", "b.txt": b"b"}, dest=dest, now=NOW.replace(hour=1))
    publish_files(tmp_path, store, "two", {"a.txt": b"a", "b.txt": b"b2"}, dest=dest, now=NOW.replace(hour=2))
    first, second = sorted(generations(store))
    pruned = prune("site", dest, now=NOW.replace(hour=3), opener=opener(store))
    [gone] = pruned["deleted"]
    assert live(store) == second and read(store, "%s/%s/%s" % (HOME, second, gone)) is None
    assert read(store, "%s/%s/%s" % (HOME, first, gone)) is not None
    state = json.loads(read(store, "%s/%s/.distributor.json" % (HOME, second)))
    assert [o["path"] for o in state["outputs"]] == pruned["kept"] and gone not in pruned["kept"]


def test_a_build_that_fails_is_marked_failed_and_cleared_at_once_leaving_the_live_release(tmp_path):
    store = {}
    publish_files(tmp_path, store, "one", {"index.html": b"one", "app.css": b"css"})
    first = live(store)
    source = bundle(tmp_path, "two", {"index.html": b"two", "app.css": b"css", "big.bin": b"x" * 10}, "2026-06-05T11:00:00Z")
    with open(tmp_path / "two" / "big.bin", "wb") as handle:
        handle.write(b"y" * 10)
    with pytest.raises(DistributorError) as refused:
        publish(source, PIPELINE, destination(), now=LATER, opener=opener(store))
    assert refused.value.reason == "verification_failed"
    assert live(store) == first and generations(store) == {first} and statuses(store) == {first: "active"}


def test_reading_a_generation_record_reads_no_other_generation_record():
    """The generations that share a file are read from every generation's record on first use,
    and a record itself (the state a publish reads first) is never such a file."""
    class Unread:
        @property
        def index(self):
            raise AssertionError("another generation's record was read")
    shared = SharedLinks(Unread(), "20260604T120000Z-0123456789ab")
    assert shared.get(".distributor.json") is None and shared.get("docs/.distributor.journal.json") is None
    with pytest.raises(AssertionError):
        shared.get("index.html")


def test_release_publishes_on_local_storage_leave_no_descriptor_open(tmp_path):
    """Every view a release opens (the home, each generation) is closed with the run: a process
    that publishes again and again (AWX's callback runner, a test) keeps its descriptors."""
    dest = {"id": "web", "storage": {"type": "local", "root": str(tmp_path / "www")}, "path": "site",
            "releases": {"keep": 2}}
    open_before = None
    for n in range(6):
        files = {"index.html": b"v%d" % n, "app.css": b"css"}
        publish(bundle(tmp_path, "b%d" % n, files, format_rfc3339(NOW.replace(hour=n))), PIPELINE, dest,
                now=NOW.replace(hour=n, minute=1), diff_contents=True, verify="sha256")
        open_before = open_before or len(os.listdir("/proc/self/fd"))
    assert len(os.listdir("/proc/self/fd")) == open_before
