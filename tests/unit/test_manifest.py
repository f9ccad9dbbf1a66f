# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The source bundle contract: manifest fields, digest, path rules and verifying reads."""

from __future__ import annotations

import copy
import hashlib
import json
import os
import tracemalloc

import pytest

from ansible_collections.distributor.core.plugins.module_utils._distributor.records import manifest as manifest_module
from ansible_collections.distributor.core.plugins.module_utils._distributor.records import schemas
from ansible_collections.distributor.core.plugins.module_utils._distributor.records.bundle import Bundle
from ansible_collections.distributor.core.plugins.module_utils._distributor.errors import DistributorError, MissingLibrary
from ansible_collections.distributor.core.plugins.module_utils._distributor.records.manifest import (
    Manifest, ManifestFile, compute_digest, parse_manifest)
from ansible_collections.distributor.core.plugins.module_utils._distributor.records.manifest_build import create_manifest

CREATED = "2026-06-04T12:00:00Z"
MIB = 1024 * 1024


def sha(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def manifest_dict(files: dict[str, bytes] | None = None, **overrides) -> dict:
    """A valid manifest for `files` (path -> content), then `overrides` applied as they are."""
    files = {"index.md": b"# Index\n", "img/logo.png": b"\x89PNG"} if files is None else files
    entries = [ManifestFile(p, sha(d), len(d)) for p, d in sorted(files.items())]
    data = Manifest(1, "reports.2026-06-04", compute_digest(entries), CREATED, tuple(entries)).to_dict()
    data.update(overrides)
    return data


def rejected(data: object, reason: str = "invalid_manifest") -> str:
    with pytest.raises(DistributorError) as caught:
        parse_manifest(data, "manifest.json")
    assert caught.value.reason == reason
    return caught.value.message


def with_path(path: str) -> dict:
    """A manifest listing `path` with a digest that matches, so only the path rule can object."""
    entry = ManifestFile(path, sha(b"x"), 1)
    return Manifest(1, "m", compute_digest([entry]), CREATED, (entry,)).to_dict()


def write_bundle(root, files: dict[str, bytes]) -> str:
    for path, data in files.items():
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    create_manifest(str(root), "bundle-1", CREATED)
    return str(root)


def fails_to_load(root) -> DistributorError:
    with pytest.raises(DistributorError) as caught:
        Bundle.load(str(root))
    return caught.value


def drain(bundle: Bundle, path: str) -> DistributorError:
    with pytest.raises(DistributorError) as caught:
        for _chunk in bundle.chunks(path):
            pass
    assert caught.value.reason == "verification_failed"
    return caught.value


# digest


def test_digest_is_sha256_over_sorted_path_sha256_size_lines():
    a, b = "sha256:" + "a" * 64, "sha256:" + "b" * 64
    files = [ManifestFile("b.txt", b, 2), ManifestFile("a/\u00e9.md", a, 10)]
    lines = ("a/\u00e9.md\0" + a + "\0" + "10\n" + "b.txt\0" + b + "\0" + "2\n").encode("utf-8")
    expected = "sha256:" + hashlib.sha256(lines).hexdigest()
    assert compute_digest(files) == expected
    # the same bytes hashed outside Python: printf 'a/\xc3\xa9.md\0sha256:aaa…\00010\n…' | sha256sum
    assert expected == "sha256:7da1a3bfc58f554581525d2cb70b8c7b3a9d525c2a703b569e990f230cae85bc"


def test_digest_sorts_by_utf8_bytes_not_listing_order():
    files = [ManifestFile(p, sha(p.encode()), 1) for p in ("z", "a/b", "a", "\u00e9", "B")]
    assert compute_digest(files) == compute_digest(reversed(files))
    lines = "".join("%s\0%s\0001\n" % (p, sha(p.encode())) for p in sorted(
        (f.path for f in files), key=lambda p: p.encode("utf-8")))
    assert compute_digest(files) == "sha256:" + hashlib.sha256(lines.encode("utf-8")).hexdigest()


def test_digest_of_no_files_is_sha256_of_nothing():
    assert compute_digest([]) == sha(b"")


# parse_manifest: a valid manifest


@pytest.mark.parametrize("field, value", [("size", True), ("size", 1.0), ("schema_version", 1.0), ("schema_version", True)])
def test_a_remembered_manifest_is_not_confused_with_one_equal_only_in_python(field, value):
    """Valid manifests are remembered by digest; the same manifest with 1.0 or true for an
    integer (equal to 1 in Python) is still refused, in the reason its reader gives."""
    valid = manifest_dict({"a.txt": b"x"})
    assert parse_manifest(valid, "manifest.json") == parse_manifest(copy.deepcopy(valid), "state", "invalid_state")
    broken = copy.deepcopy(valid)
    if field == "size":
        broken["files"][0]["size"] = value
    else:
        broken["schema_version"] = value
    assert broken == valid
    with pytest.raises(DistributorError) as caught:
        parse_manifest(broken, "state", "invalid_state")
    assert caught.value.reason == "invalid_state" and caught.value.message.startswith("state: ")


def test_valid_manifest_parses_into_its_fields():
    data = manifest_dict()
    parsed = parse_manifest(data, "manifest.json")
    assert parsed.schema_version == 1
    assert parsed.id == "reports.2026-06-04"
    assert parsed.digest == data["digest"]
    assert parsed.file("index.md") == ManifestFile("index.md", sha(b"# Index\n"), 8)
    assert parsed.created_at.isoformat() == "2026-06-04T12:00:00+00:00"
    assert parsed.to_dict() == data


def test_lookup_of_an_unlisted_path_is_a_key_error():
    with pytest.raises(KeyError):
        parse_manifest(manifest_dict(), "manifest.json").file("other.md")


def test_empty_bundle_is_a_valid_manifest():
    assert parse_manifest(manifest_dict({}), "m").files == ()


# parse_manifest: structure


@pytest.mark.parametrize("change, message", [
    (lambda d: d.update(schema_version=2), "manifest.json: schema_version must be 1, not 2"),
    (lambda d: d.update(schema_version="1"), "schema_version must be an integer, not a string"),
    (lambda d: d.update(id=""), "manifest.json: id must not be empty"),
    (lambda d: d.update(id=7), "id must be a string, not an integer"),
    (lambda d: d.pop("digest"), 'the manifest is missing "digest"'),
    (lambda d: d.update(extra=1), 'the manifest has unknown key "extra"'),
    (lambda d: d.update(files={}), "files must be an array, not an object"),
    (lambda d: d["files"].append("x.md"), "files[2] must be an object, not a string"),
    (lambda d: d["files"][1].pop("size"), 'files[1] is missing "size"'),
    (lambda d: d["files"][1].update(mode="0644"), 'files[1] has unknown key "mode" (allowed: path, sha256, size)'),
    (lambda d: d["files"][0].update(path=""), "files[0].path must not be empty"),
    (lambda d: d["files"][0].update(path=None), "files[0].path must be a string, not null"),
], ids=["schema_version", "schema_version_type", "empty_id", "id_type", "missing_key", "unknown_key",
        "files_type", "file_entry_type", "missing_size", "unknown_file_key", "empty_path", "null_path"])
def test_structure_errors_name_the_field(change, message):
    data = manifest_dict()
    change(data)
    assert message in rejected(data)


@pytest.mark.parametrize("size, shown", [(-1, "must be 0 or more, not -1"), (1.0, "not a number"),
                                         (True, "not a boolean"), ("3", "not a string")])
def test_size_must_be_a_non_negative_integer(size, shown):
    data = manifest_dict()
    data["files"][1]["size"] = size
    message = rejected(data)
    assert message.startswith("manifest.json: files[1].size ")
    assert shown in message


@pytest.mark.parametrize("value", [
    "sha256:" + "A" * 64, "sha256:" + "a" * 63, "a" * 64, "md5:" + "a" * 32, "sha256:" + "g" * 64,
    "sha256:" + "a" * 64 + "\n", "sha256:" + "a" * 65,
])
def test_sha256_must_be_prefixed_64_lowercase_hex(value):
    data = manifest_dict()
    data["files"][0]["sha256"] = value
    message = rejected(data)
    assert message.startswith("manifest.json: files[0].sha256 %s is not sha256: followed by 64 lowercase hex digits"
                              % json.dumps(value))


def test_digest_must_have_the_sha256_format():
    assert "digest \"sha256:abc\" is not sha256:" in rejected(manifest_dict(digest="sha256:abc"))


@pytest.mark.parametrize("created", ["2026-06-04", "2026-06-04 12:00:00Z", "2026-13-01T00:00:00Z", "yesterday"])
def test_created_must_be_rfc3339(created):
    assert rejected(manifest_dict(created=created)) == (
        "manifest.json: created %s is not an RFC3339 timestamp (like 2026-06-04T12:00:00Z)" % json.dumps(created))


def test_a_manifest_that_is_not_an_object_is_refused():
    assert rejected([]) == "manifest.json: the manifest must be an object, not an array"


def test_reason_is_the_callers_for_an_embedded_manifest():
    with pytest.raises(DistributorError) as caught:
        parse_manifest(manifest_dict(id=""), ".distributor.json: owners[0].source.manifest", reason="invalid_state")
    assert caught.value.reason == "invalid_state"
    assert caught.value.message.startswith(".distributor.json: owners[0].source.manifest: id")


def test_missing_jsonschema_is_reported_as_a_missing_library(monkeypatch):
    """A manifest the column checks decline needs jsonschema, to word what is wrong with it."""
    monkeypatch.setattr(manifest_module, "_VALID", {})
    monkeypatch.setattr(schemas, "HAS_JSONSCHEMA", False)
    monkeypatch.setattr(schemas, "JSONSCHEMA_IMPORT_ERROR", "Traceback: no jsonschema")
    schemas._validator.cache_clear()
    try:
        with pytest.raises(MissingLibrary) as caught:
            parse_manifest(manifest_dict(id=""), "manifest.json")
    finally:
        schemas._validator.cache_clear()
    assert caught.value.library == "jsonschema"
    assert caught.value.traceback == "Traceback: no jsonschema"
    assert caught.value.message == "jsonschema is required for validating manifest"


# parse_manifest: path rules


@pytest.mark.parametrize("path, problem", [
    ("../x", "has an empty, '.' or '..' segment"),
    ("a/../b", "has an empty, '.' or '..' segment"),
    ("a/..", "has an empty, '.' or '..' segment"),
    ("./a", "has an empty, '.' or '..' segment"),
    ("a//b", "has an empty, '.' or '..' segment"),
    ("a/", "has an empty, '.' or '..' segment"),
    ("/etc/passwd", "is absolute"),
    ("a\\b", "contains a backslash"),
    ("..\\x", "contains a backslash"),
    ("a\x00b", "contains a control character"),
    ("a\nb", "contains a control character"),
    ("a\x1fb", "contains a control character"),
    ("a\x7fb", "contains a control character"),
])
def test_unclean_paths_are_refused(path, problem):
    assert rejected(with_path(path)) == "manifest.json: files[0].path %s %s" % (json.dumps(path), problem)


def test_a_path_that_is_not_valid_unicode_is_refused():
    entry = ManifestFile("a\udc80b", sha(b"x"), 1)
    data = Manifest(1, "m", "sha256:" + "0" * 64, CREATED, (entry,)).to_dict()
    assert rejected(data) == 'manifest.json: files[0].path "a\\udc80b" is not valid UTF-8'


@pytest.mark.parametrize("path", [".distributor.json", ".distributor.lock", ".distributor", ".distributorx",
                                  "sub/.distributor.json", "a/b/.distributor-cache/c.txt"])
def test_reserved_names_may_not_be_produced_at_any_depth(path):
    message = rejected(with_path(path))
    assert message.startswith("manifest.json: files[0].path %s uses the reserved prefix \".distributor\"" % json.dumps(path))


@pytest.mark.parametrize("path", ["a.distributor", "distributor.json", "x/my.distributor.json", "caf\u00e9/\u65e5\u672c.md"])
def test_names_that_only_contain_distributor_or_are_non_ascii_are_fine(path):
    assert parse_manifest(with_path(path), "m").files[0].path == path


def test_duplicate_paths_are_refused():
    entry = ManifestFile("a.md", sha(b"x"), 1)
    data = Manifest(1, "m", compute_digest([entry, entry]), CREATED, (entry, entry)).to_dict()
    assert rejected(data) == 'manifest.json: files[1].path "a.md" is listed twice (also files[0])'


def test_a_path_inside_another_listed_file_is_refused():
    entries = [ManifestFile("a", sha(b"x"), 1), ManifestFile("a/b/c.md", sha(b"x"), 1)]
    data = Manifest(1, "m", compute_digest(entries), CREATED, tuple(entries)).to_dict()
    assert rejected(data) == 'manifest.json: files[1].path "a/b/c.md" is inside files[0].path "a", which is a file'


def test_digest_mismatch_is_refused_with_both_digests():
    data = manifest_dict()
    real = data["digest"]
    data["files"][0]["size"] += 1
    assert rejected(data) == ("manifest.json: digest %s… does not match its files (computed %s…); regenerate the manifest"
                              % (real[:19], compute_digest(parse_manifest_files(data))[:19]))


def parse_manifest_files(data: dict) -> list[ManifestFile]:
    return [ManifestFile(f["path"], f["sha256"], f["size"]) for f in data["files"]]


# Bundle.load


def test_load_reads_the_manifest_and_its_files(tmp_path):
    write_bundle(tmp_path, {"index.md": b"# Hi\n", "img/a.png": b"png"})
    bundle = Bundle.load(str(tmp_path))
    assert bundle.root == str(tmp_path)
    assert [f.path for f in bundle.manifest.files] == ["img/a.png", "index.md"]
    assert bundle.read("img/a.png") == b"png"


def test_missing_manifest_is_refused(tmp_path):
    error = fails_to_load(tmp_path)
    assert error.reason == "invalid_manifest"
    assert error.message.startswith("%s does not exist" % (tmp_path / "manifest.json"))


def test_a_missing_bundle_directory_is_named_as_the_directory(tmp_path):
    """A mistyped bundle path: the directory is missing, not a file in it."""
    error = fails_to_load(tmp_path / "bundel")
    assert error.reason == "invalid_manifest"
    assert error.message.startswith("the bundle directory %s does not exist (nothing at that path, or not a directory); "
                                    "check the bundle path" % (tmp_path / "bundel"))


def test_broken_json_names_line_and_column(tmp_path):
    (tmp_path / "manifest.json").write_text('{\n  "id": "x",\n  "files": [}\n')
    error = fails_to_load(tmp_path)
    assert error.reason == "invalid_manifest"
    assert error.message.startswith("%s is not valid JSON: " % (tmp_path / "manifest.json"))
    assert error.message.endswith("at line 3, column 13")


def test_duplicate_json_keys_are_refused(tmp_path):
    (tmp_path / "manifest.json").write_text('{"id": "a", "id": "b"}')
    error = fails_to_load(tmp_path)
    assert error.message == '%s is not a manifest: key "id" appears twice in one object' % (tmp_path / "manifest.json")


def test_manifest_that_is_not_utf8_is_refused(tmp_path):
    (tmp_path / "manifest.json").write_bytes(b'{"id": "\xff"}')
    assert "is not UTF-8 (byte 8)" in fails_to_load(tmp_path).message


def test_manifest_errors_name_the_manifest_file(tmp_path):
    (tmp_path / "manifest.json").write_text(json.dumps(manifest_dict(schema_version=9)))
    assert fails_to_load(tmp_path).message == "%s: schema_version must be 1, not 9" % (tmp_path / "manifest.json")


def test_a_listed_file_that_is_missing_is_refused(tmp_path):
    write_bundle(tmp_path, {"a.md": b"a", "b.md": b"b"})
    (tmp_path / "b.md").unlink()
    error = fails_to_load(tmp_path)
    assert error.reason == "invalid_manifest"
    assert error.message == '%s: "b.md" is listed but does not exist' % (tmp_path / "manifest.json")


def test_a_listed_directory_is_refused(tmp_path):
    write_bundle(tmp_path, {"a.md": b"a"})
    (tmp_path / "a.md").unlink()
    (tmp_path / "a.md").mkdir()
    assert fails_to_load(tmp_path).message.endswith('"a.md" is listed but is a directory, not a regular file')


def test_a_file_whose_size_changed_before_load_fails_verification(tmp_path):
    write_bundle(tmp_path, {"a.md": b"abc"})
    (tmp_path / "a.md").write_bytes(b"abcd")
    error = fails_to_load(tmp_path)
    assert error.reason == "verification_failed"
    assert error.message == ("a.md: size mismatch (manifest 3 bytes, file 4 bytes); "
                             "the bundle changed after its manifest was written: when the change is meant, write the manifest "
                             "again (distributor_manifest, or the role's distributor_build_manifests: true); when the "
                             "producer is still writing, publish once it has finished")


def test_a_symlink_pointing_outside_the_bundle_is_refused(tmp_path):
    outside = tmp_path / "secret.txt"
    outside.write_bytes(b"secret")
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    (bundle / "leak.txt").symlink_to(outside)
    entry = ManifestFile("leak.txt", sha(b"secret"), 6)
    (bundle / "manifest.json").write_text(json.dumps(Manifest(1, "m", compute_digest([entry]), CREATED, (entry,)).to_dict()))
    error = fails_to_load(bundle)
    assert error.reason == "invalid_manifest"
    assert error.message == '%s: "leak.txt" resolves to %s, outside the bundle; replace the symbolic link with the file itself' % (
        bundle / "manifest.json", outside)


def test_a_symlinked_directory_pointing_outside_the_bundle_is_refused(tmp_path):
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "x.md").write_bytes(b"x")
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    (bundle / "docs").symlink_to(tmp_path / "elsewhere")
    entry = ManifestFile("docs/x.md", sha(b"x"), 1)
    (bundle / "manifest.json").write_text(json.dumps(Manifest(1, "m", compute_digest([entry]), CREATED, (entry,)).to_dict()))
    assert "outside the bundle" in fails_to_load(bundle).message


def test_a_symlink_inside_the_bundle_is_accepted(tmp_path):
    (tmp_path / "real").mkdir()
    (tmp_path / "real" / "a.md").write_bytes(b"same")
    os.symlink("real/a.md", tmp_path / "alias.md")
    create_manifest(str(tmp_path), "m", CREATED)
    bundle = Bundle.load(str(tmp_path))
    assert bundle.read("alias.md") == b"same"
    assert bundle.manifest.file("alias.md") == ManifestFile("alias.md", sha(b"same"), 4)


def test_every_file_of_a_directory_is_checked_not_only_the_first(tmp_path):
    """Load resolves a directory once, at its first file; a later file of that directory that is
    missing, a directory, a link out of the bundle or of another size is refused all the same,
    and one linked inside the bundle is read where it points."""
    def loaded(change):
        root = tmp_path / str(len(list(tmp_path.iterdir())))
        write_bundle(root, {"d/a.md": b"a", "d/b.md": b"b", "d/c.md": b"c", "real.md": b"b"})
        change(root / "d" / "b.md", root)
        try:
            return Bundle.load(str(root))
        except DistributorError as error:
            return error.message.replace(str(root), "<root>")

    def swap(make):
        return lambda path, root: (path.unlink(), make(path, root))
    assert loaded(lambda path, root: path.unlink()) == '<root>/manifest.json: "d/b.md" is listed but does not exist'
    assert loaded(swap(lambda path, root: path.mkdir())).endswith('"d/b.md" is listed but is a directory, not a regular file')
    assert "outside the bundle" in loaded(swap(lambda path, root: path.symlink_to(tmp_path / "x")))
    assert loaded(lambda path, root: path.write_bytes(b"bb")).startswith("d/b.md: size mismatch (manifest 1 bytes, file 2 bytes)")
    assert loaded(swap(lambda path, root: path.symlink_to(root / "real.md"))).read("d/b.md") == b"b"


# Bundle.chunks: verification in the same pass


def test_chunks_stream_in_pieces_of_at_most_one_mib(tmp_path):
    data = os.urandom(MIB) * 2 + b"tail"
    write_bundle(tmp_path, {"big.bin": data})
    chunks = list(Bundle.load(str(tmp_path)).chunks("big.bin"))
    assert [len(c) for c in chunks] == [MIB, MIB, 4]
    assert b"".join(chunks) == data


def test_memory_does_not_grow_with_file_size(tmp_path):
    write_bundle(tmp_path, {"big.bin": b"\0" * (24 * MIB)})
    bundle = Bundle.load(str(tmp_path))
    tracemalloc.start()
    try:
        for _chunk in bundle.chunks("big.bin"):
            pass
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 3 * MIB


def test_same_size_tampering_is_a_sha256_mismatch(tmp_path):
    write_bundle(tmp_path, {"report.md": b"original"})
    bundle = Bundle.load(str(tmp_path))
    (tmp_path / "report.md").write_bytes(b"tampered")
    error = drain(bundle, "report.md")
    said = "report.md: sha256 mismatch (manifest %s…, file %s…); the bundle changed after its manifest was written: " % (
        sha(b"original")[:19], sha(b"tampered")[:19])
    assert error.message.startswith(said + "when the change is meant, write the manifest again (distributor_manifest")


def test_a_file_that_grew_fails_before_the_extra_bytes_are_handed_out(tmp_path):
    write_bundle(tmp_path, {"big.bin": b"x" * MIB})
    bundle = Bundle.load(str(tmp_path))
    (tmp_path / "big.bin").write_bytes(b"x" * (MIB + 1))
    received = []
    with pytest.raises(DistributorError) as caught:
        for chunk in bundle.chunks("big.bin"):
            received.append(chunk)
    assert caught.value.reason == "verification_failed"
    assert caught.value.message.startswith("big.bin: size mismatch (manifest 1048576 bytes, file more than 1048576 bytes); "
                                           "the bundle changed after its manifest was written: ")
    assert sum(map(len, received)) == MIB


def test_a_file_that_shrank_is_a_size_mismatch(tmp_path):
    write_bundle(tmp_path, {"a.txt": b"abcdef"})
    bundle = Bundle.load(str(tmp_path))
    (tmp_path / "a.txt").write_bytes(b"abc")
    assert drain(bundle, "a.txt").message.startswith("a.txt: size mismatch (manifest 6 bytes, file 3 bytes)")


def test_a_file_removed_after_load_fails_verification(tmp_path):
    write_bundle(tmp_path, {"a.txt": b"abc"})
    bundle = Bundle.load(str(tmp_path))
    (tmp_path / "a.txt").unlink()
    assert "cannot read %s" % (tmp_path / "a.txt") in drain(bundle, "a.txt").message


def test_read_returns_the_verified_content_or_fails(tmp_path):
    write_bundle(tmp_path, {"a.txt": b"abc"})
    bundle = Bundle.load(str(tmp_path))
    assert bundle.read("a.txt") == b"abc"
    (tmp_path / "a.txt").write_bytes(b"abd")
    with pytest.raises(DistributorError) as caught:
        bundle.read("a.txt")
    assert caught.value.reason == "verification_failed"


# create_manifest


def test_create_manifest_round_trips_through_load(tmp_path):
    files = {"index.md": b"# Index\n", "docs/guide.md": b"guide", "docs/img/\u00e9.png": b"\x00\x01", "empty": b""}
    write_bundle(tmp_path, files)
    bundle = Bundle.load(str(tmp_path))
    assert bundle.manifest.id == "bundle-1"
    assert bundle.manifest.created == CREATED
    assert {f.path: (f.sha256, f.size) for f in bundle.manifest.files} == {
        p: (sha(d), len(d)) for p, d in files.items()}
    assert all(bundle.read(p) == d for p, d in files.items())


def test_create_manifest_writes_sorted_files_with_two_space_indent(tmp_path):
    (tmp_path / "b.md").write_bytes(b"b")
    (tmp_path / "a.md").write_bytes(b"a")
    returned = create_manifest(str(tmp_path), "m", CREATED)
    text = (tmp_path / "manifest.json").read_text(encoding="utf-8")
    assert json.loads(text) == returned
    assert text == json.dumps(returned, indent=2) + "\n"
    assert [f["path"] for f in returned["files"]] == ["a.md", "b.md"]
    assert returned["digest"] == compute_digest(parse_manifest_files(returned))


def test_create_manifest_skips_its_own_manifest_when_run_again(tmp_path):
    (tmp_path / "a.md").write_bytes(b"a")
    first = create_manifest(str(tmp_path), "m", CREATED)
    assert create_manifest(str(tmp_path), "m", CREATED) == first
    assert [f["path"] for f in first["files"]] == ["a.md"]


def test_create_manifest_lists_only_the_given_paths(tmp_path):
    write_bundle(tmp_path, {"a.md": b"a", "notes/draft.md": b"d"})
    returned = create_manifest(str(tmp_path), "m", CREATED, paths=["a.md"])
    assert [f["path"] for f in returned["files"]] == ["a.md"]
    assert [f.path for f in Bundle.load(str(tmp_path)).manifest.files] == ["a.md"]


def test_create_manifest_refuses_a_reserved_file(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / ".distributor.json").write_text("{}")
    with pytest.raises(DistributorError) as caught:
        create_manifest(str(tmp_path), "m", CREATED)
    assert caught.value.reason == "invalid_manifest"
    assert caught.value.message.startswith(
        '%s: cannot list "sub/.distributor.json" in a manifest: it uses the reserved prefix' % tmp_path)
    assert not (tmp_path / "manifest.json").exists()


def test_create_manifest_refuses_a_backslash_in_a_file_name(tmp_path):
    (tmp_path / "a\\b.md").write_bytes(b"x")
    with pytest.raises(DistributorError) as caught:
        create_manifest(str(tmp_path), "m", CREATED)
    assert caught.value.message == '%s: cannot list "a\\\\b.md" in a manifest: it contains a backslash' % tmp_path


def test_create_manifest_refuses_a_symlink_out_of_the_bundle(tmp_path):
    (tmp_path / "outside.txt").write_bytes(b"x")
    (tmp_path / "bundle").mkdir()
    (tmp_path / "bundle" / "link.txt").symlink_to(tmp_path / "outside.txt")
    with pytest.raises(DistributorError) as caught:
        create_manifest(str(tmp_path / "bundle"), "m", CREATED)
    assert "outside the bundle" in caught.value.message


@pytest.mark.parametrize("manifest_id, created, message", [
    ("", CREATED, "id must not be empty"),
    ("m", "now", 'created "now" is not an RFC3339 timestamp'),
])
def test_create_manifest_validates_what_it_writes(tmp_path, manifest_id, created, message):
    (tmp_path / "a.md").write_bytes(b"a")
    with pytest.raises(DistributorError) as caught:
        create_manifest(str(tmp_path), manifest_id, created)
    assert caught.value.message.startswith("%s: %s" % (tmp_path / "manifest.json", message))
    assert not (tmp_path / "manifest.json").exists()


def test_create_manifest_cannot_list_the_manifest_itself(tmp_path):
    (tmp_path / "manifest.json").write_text("{}")
    with pytest.raises(DistributorError) as caught:
        create_manifest(str(tmp_path), "m", CREATED, paths=["manifest.json"])
    assert caught.value.message == '%s: cannot list "manifest.json" in a manifest: it is the manifest itself, ' \
        'which cannot list its own hash' % tmp_path


def test_create_manifest_in_a_missing_directory_fails_instead_of_listing_nothing(tmp_path):
    with pytest.raises(DistributorError) as caught:
        create_manifest(str(tmp_path / "nope"), "m", CREATED)
    assert caught.value.reason == "invalid_manifest"
    assert caught.value.message.startswith("cannot list %s: " % (tmp_path / "nope"))


def test_create_manifest_refuses_a_missing_listed_path(tmp_path):
    with pytest.raises(DistributorError) as caught:
        create_manifest(str(tmp_path), "m", CREATED, paths=["nope.md"])
    assert caught.value.message == '%s: "nope.md" is listed but does not exist' % tmp_path


def test_to_dict_is_a_fresh_copy_that_leaves_the_input_alone():
    data = manifest_dict()
    original = copy.deepcopy(data)
    parsed = parse_manifest(data, "m")
    parsed.to_dict()["files"].clear()
    assert data == original
    assert parsed.to_dict() == original


def test_a_manifest_seen_again_is_not_validated_again(monkeypatch):
    data = manifest_dict()
    first = parse_manifest(data, "manifest.json")
    monkeypatch.setattr(schemas, "validate", lambda *args: pytest.fail("validated twice"))
    monkeypatch.setattr(manifest_module, "validate", lambda *args: pytest.fail("validated twice"))
    assert parse_manifest(json.loads(json.dumps(data)), ".distributor.json: source.manifest", "invalid_state") == first
