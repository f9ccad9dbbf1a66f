# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 40 item 7, shared paths (releases.shared): kept once in the release home, linked into
every release by a relative link, so what a web server writes there (certbot --webroot's
challenges, uploads) survives every publish, rollback and clearing, and is never read, carried
or cleared. On the memory double, then on the real local filesystem and the real sshd, where a
file there has an access time older than its modification time (planted.py): a read would move it."""

from __future__ import annotations

import os

import pytest

from ansible_collections.distributor.core.plugins.module_utils._distributor.errors import DistributorError
from ansible_collections.distributor.core.plugins.module_utils._distributor.operations.publish import publish
from ansible_collections.distributor.core.plugins.module_utils._distributor.operations.reconcile import reconcile_state
from ansible_collections.distributor.core.plugins.module_utils._distributor.operations.switch import switch_release
from ansible_collections.distributor.core.plugins.module_utils._distributor.records.config import parse_destination

import builders
from builders import LATER, MEMORY_STORAGE, NOW, write_bundle
from memory_storage import MemoryStorage, Symlink
from planted import MODIFIED, OLD, fingerprint
from test_release_publish import HOME, PIPELINE, destination, generations, live, look, opener, publish_files, statuses

SHARED = [".well-known/acme-challenge", "uploads"]
UPLOAD = HOME + "/shared/uploads/photo.jpg"


def sharing(**releases) -> dict:
    return destination(shared=SHARED, keep=2, **releases)


def test_every_release_links_each_shared_path_by_a_relative_link_to_the_release_home(tmp_path):
    store = {}
    publish_files(tmp_path, store, "one", {"index.html": b"one", ".well-known/security.txt": b"sec"}, sharing())
    release = live(store)
    assert look(store).entry("%s/%s/uploads" % (HOME, release)) == ("link", "../shared/uploads")
    assert look(store).entry("%s/%s/.well-known/acme-challenge" % (HOME, release)) == (
        "link", "../../shared/.well-known/acme-challenge")
    assert look(store).read_bytes("%s/%s/.well-known/security.txt" % (HOME, release), 10) == b"sec"


def test_what_is_written_into_a_shared_path_survives_publishes_a_rollback_and_clearing_and_is_never_read(tmp_path):
    """Three publishes after the upload (keep 2: the first release is cleared), then a rollback."""
    touched = []
    store = {}

    def watch(cfg, base, token):
        return MemoryStorage(store, base, token, lambda op, path: touched.append((op, os.path.join(base, path))))
    publish(write_bundle(tmp_path / "v0", {"index.html": b"v0"}, id="site.example"), PIPELINE, sharing(), now=NOW,
            opener=watch)
    first = live(store)
    store[UPLOAD] = b"a visitor's photo"
    for n in range(1, 4):
        publish(write_bundle(tmp_path / ("v%d" % n), {"index.html": b"v%d" % n}, id="site.example",
                             created="2026-06-04T12:0%d:00Z" % n), PIPELINE, sharing(), now=LATER.replace(minute=n), opener=watch)
    switch_release("site", sharing(), "previous", now=LATER.replace(minute=9), opener=watch)
    assert generations(store) == set(statuses(store)) | {"shared"} and first not in generations(store)
    assert sorted(statuses(store).values()) == ["active", "rolled_back"]
    assert store[UPLOAD] == b"a visitor's photo"
    assert not [(op, path) for op, path in touched if "shared/" in path and op != "mkdir" and op != "entry"], touched
    assert isinstance(store["%s/%s/uploads" % (HOME, live(store))], Symlink)


def test_a_link_like_a_shared_one_at_a_path_that_is_not_shared_is_never_removed_and_keeps_its_release(tmp_path):
    """Only the links link_shared makes, at the paths releases.shared names, go with a release:
    one planted elsewhere with the same form of target is nobody's to delete."""
    store = {}
    publish_files(tmp_path, store, "one", {"index.html": b"one"}, sharing())
    first = live(store)
    publish_files(tmp_path, store, "v2", {"index.html": b"v2"}, sharing(), now=LATER.replace(minute=2))
    planted = "%s/%s/other/x" % (HOME, first)
    store[planted] = Symlink("../../shared/other/x")
    for n in range(3, 6):
        publish_files(tmp_path, store, "v%d" % n, {"index.html": b"v%d" % n}, sharing(), now=LATER.replace(minute=n))
    assert isinstance(store.get(planted), Symlink) and first in generations(store)


def test_reconcile_state_does_not_report_the_live_release_s_shared_links_as_unmanaged(tmp_path):
    store = {}
    publish_files(tmp_path, store, "one", {"index.html": b"one"}, sharing())
    store[UPLOAD] = b"a visitor's photo"
    result = reconcile_state("site", sharing(), opener=opener(store))
    assert result["unmanaged"] == [] and result["changed"] is False


@pytest.mark.parametrize("path", ["uploads", "uploads/2026/photo.jpg", ".well-known/acme-challenge/token"])
def test_a_bundle_holding_a_shared_path_is_refused_naming_it_before_anything_is_written(tmp_path, path):
    store = {}
    publish_files(tmp_path, store, "one", {"index.html": b"one"}, sharing())
    before = dict(store)
    for check_mode in (True, False):
        with pytest.raises(DistributorError) as refused:
            publish_files(tmp_path, store, "two-%s" % check_mode, {"index.html": b"two", path: b"x"}, sharing(),
                          now=LATER, check_mode=check_mode)
        assert refused.value.reason == "invalid_config"
        assert "the bundle holds %s" % path in refused.value.message and "releases.shared" in refused.value.message
    assert store.keys() == before.keys()


@pytest.mark.parametrize("entry, why", [
    ("../up", "has an empty, '.' or '..' segment"), ("/srv/up", "is absolute"), (".distributor.json", "records"),
    ("uploads", "is given twice"), ("uploads/2026", "overlaps the shared path 'uploads'"),
])
def test_a_shared_path_that_is_not_one_is_invalid_config_naming_the_entry(entry, why):
    with pytest.raises(DistributorError) as refused:
        parse_destination({"id": "web", "storage": MEMORY_STORAGE, "path": "site", "releases": {"shared": ["uploads", entry]}})
    assert refused.value.reason == "invalid_config"
    assert "releases.shared entry %r" % entry in refused.value.message and why in refused.value.message


# -- real local filesystem and real sshd ---------------------------------------------------------------------------------------

@pytest.fixture(params=["local", "sftp"])
def place(request, tmp_path):
    return builders.Place(request.param, tmp_path, request)


def released(place, **releases) -> dict:
    return dict(place.destination, releases=dict({"keep": 2, "shared": SHARED}, **releases))


def publish_site(place, tmp_path, n: int, **releases) -> dict:
    bundle = write_bundle(tmp_path / ("v%d" % n), {"index.html": b"v%d" % n}, created="2026-06-04T12:%02d:00Z" % n)
    return publish(bundle, PIPELINE, released(place, **releases), now=NOW.replace(minute=n))


def test_on_real_storage_what_a_web_server_writes_survives_three_publishes_a_rollback_and_clearing_unread(place, tmp_path):
    (place.root / "site").rmdir()
    publish_site(place, tmp_path, 0)
    site = place.root / "site"
    challenge = site / ".well-known" / "acme-challenge" / "token"
    challenge.write_bytes(b"certbot's answer")  # through the links, as certbot --webroot -w site writes it
    secret = site / "uploads" / "private.jpg"
    secret.write_bytes(b"root only")
    os.chmod(secret, 0o600)
    os.utime(secret, ns=(OLD, MODIFIED))
    before = fingerprint(secret)
    first = os.readlink(site).rpartition("/")[2]
    for n in range(1, 4):
        publish_site(place, tmp_path, n)
    switch_release("site", released(place), "previous", now=LATER)
    home = place.root / HOME
    assert not (home / first).exists(), "keep 2 cleared the first release"
    assert fingerprint(secret) == before and fingerprint(home / "shared" / "uploads" / "private.jpg") == before
    assert challenge.read_bytes() == b"certbot's answer" and (site / "index.html").read_bytes() == b"v2"
    link = home / os.readlink(site).rpartition("/")[2] / "uploads"
    assert os.readlink(link) == "../shared/uploads" and os.path.realpath(link) == str(home / "shared" / "uploads")


def test_a_conversion_moves_a_trusted_shared_directory_into_the_shared_place(place, tmp_path):
    publish(write_bundle(tmp_path / "plain", {"index.html": b"plain"}), PIPELINE, place.destination, now=NOW)
    site = place.root / "site"
    (site / "uploads" / "2026").mkdir(parents=True)
    (site / "uploads" / "2026" / "photo.jpg").write_bytes(b"photo")
    result = publish_site(place, tmp_path, 1, convert=True)
    assert result["release"]["converted"] is not None and os.path.islink(site)
    assert (place.root / HOME / "shared" / "uploads" / "2026" / "photo.jpg").read_bytes() == b"photo"
    assert (site / "uploads" / "2026" / "photo.jpg").read_bytes() == b"photo"
    assert os.path.isdir(place.root / HOME / "shared" / ".well-known" / "acme-challenge")


def test_a_conversion_refuses_a_shared_directory_of_another_account_naming_it_and_moves_nothing(place, tmp_path):
    publish(write_bundle(tmp_path / "plain", {"index.html": b"plain"}), PIPELINE, place.destination, now=NOW)
    site = place.root / "site"
    (site / "uploads").mkdir()
    (site / "uploads" / "photo.jpg").write_bytes(b"photo")
    os.chown(site / "uploads", 1000, 1000)
    with pytest.raises(DistributorError) as refused:
        publish_site(place, tmp_path, 1, convert=True)
    assert refused.value.reason == "unmanaged" and "(uploads is owned by uid 1000" in refused.value.message
    assert "nothing was moved" in refused.value.message
    assert not os.path.islink(site) and (site / "uploads" / "photo.jpg").read_bytes() == b"photo"
    assert not (place.root / HOME / "shared").exists()


@pytest.mark.parametrize("planted", ["a directory of another account at the shared path", "a link at the shared place"])
def test_a_conversion_to_a_taken_shared_place_is_refused_before_anything_moves_and_the_site_stays(place, tmp_path, planted):
    """Refused after the directory moved into the release home, the bundle path was gone."""
    publish(write_bundle(tmp_path / "plain", {"index.html": b"plain"}), PIPELINE, place.destination, now=NOW)
    site = place.root / "site"
    (site / "uploads").mkdir()
    (site / "uploads" / "photo.jpg").write_bytes(b"photo")
    home = place.root / HOME
    victim = tmp_path / "victim"
    victim.mkdir()
    if planted.startswith("a directory"):
        (home / "shared" / "uploads").mkdir(parents=True)
        os.chown(home / "shared" / "uploads", 1000, 1000)
    else:
        home.mkdir(parents=True)
        os.symlink(str(victim), str(home / "shared"))
    for check_mode in (True, False):
        with pytest.raises(DistributorError) as refused:
            bundle = write_bundle(tmp_path / ("v%s" % check_mode), {"index.html": b"v1"}, created="2026-06-04T12:01:00Z")
            publish(bundle, PIPELINE, released(place, convert=True), now=LATER, check_mode=check_mode)
        assert refused.value.reason == "storage_error" and "shared" in refused.value.message
    assert not os.path.islink(site) and (site / "uploads" / "photo.jpg").read_bytes() == b"photo"
    assert (site / "index.html").read_bytes() == b"plain" and os.listdir(victim) == []
    assert sorted(os.listdir(home)) in (["shared"], [".distributor-releases.json", "shared"])
