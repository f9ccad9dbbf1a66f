# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""S3 checks the bytes end to end, through ansible-playbook against moto's S3 server: every output
is uploaded with the SHA-256 distributor recorded for it, so S3 keeps (and returns, with
ChecksumMode=ENABLED) exactly the digest of the state record.

moto (5.2) stores and returns the checksum but does not verify it against the body, so it cannot
refuse a wrong one; tests/unit/test_s3_checksums.py shows a refusal (AWS's BadDigest, put in moto's
place) reported as verification_failed and cleaned up."""

from __future__ import annotations

import base64

PIPELINE = {"id": "reports", "outputs": [{"match": "**/*.md", "transform": "markdown_to_html"},
                                         {"match": "**/*.png", "transform": "copy"}]}


def test_every_output_is_uploaded_with_the_sha256_its_record_holds(playbook, make_bundle, s3_server):
    bucket = s3_server.create_bucket()
    bundle = make_bundle({"report.md": b"# Report\n", "img/chart.png": b"\x89PNG chart"})
    destination = {"id": "archive", "storage": s3_server.storage(bucket, prefix="site"), "path": "daily"}
    result = playbook.publish(source=bundle, pipeline=PIPELINE, destination=destination, return_records=True)
    assert not result.get("failed"), result
    assert sorted(result["written"]) == ["img/chart.png", "report.html"]
    client = s3_server.client()
    for record in result["state"]["outputs"]:
        head = client.head_object(Bucket=bucket, Key="site/daily/" + record["path"], ChecksumMode="ENABLED")
        expected = base64.b64encode(bytes.fromhex(record["sha256"].split(":", 1)[1])).decode("ascii")
        assert head["ChecksumSHA256"] == expected, record["path"]
