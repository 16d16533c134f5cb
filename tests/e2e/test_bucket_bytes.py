"""What lands in a bucket is what any tool expects, read with a client that is not raycrawl's (boto3 over HTTP to
the S3 test server): every ``warc/*.warc.gz`` is plain gzip members that warcio reads, every page part is JSON
lines, every checkpoint part matches its manifest. And a crawl an older raycrawl wrote -- its ``.warc.gz`` parts
gzip inside gzip, as ``pyarrow.fs``'s default ``compression="detect"`` made them -- resumes, and is put right."""

from __future__ import annotations

import gzip
import hashlib
import io
import json
from collections import Counter
from typing import Any

import pytest
from conftest import local_config
from warcio.archiveiterator import ArchiveIterator

from raycrawl.adapters.storage import is_doubled_gzip, resolve, unwrap_doubled_gzip
from raycrawl.api import Crawl
from raycrawl.config import DEFAULT_TRACKING_PARAMS
from raycrawl.core.urls import canonicalize
from raycrawl.testing import TestWeb, WebSpec
from raycrawl.testing.s3 import REGION, TEST_CREDENTIALS

pytestmark = pytest.mark.usefixtures("ray_local")


def _bucket_objects(s3_server: Any, s3_uri: str) -> dict[str, bytes]:
    """Every object under the crawl's prefix, downloaded as stored (name relative to the prefix -> bytes)."""
    import boto3

    bucket, prefix = resolve(s3_uri).root.split("/", 1)
    client = boto3.client(
        "s3",
        endpoint_url=f"http://{s3_server.endpoint}",
        region_name=REGION,
        aws_access_key_id=TEST_CREDENTIALS["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=TEST_CREDENTIALS["AWS_SECRET_ACCESS_KEY"],
    )
    found: dict[str, bytes] = {}
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix + "/"):
        for item in page.get("Contents", []):
            body = client.get_object(Bucket=bucket, Key=item["Key"])["Body"].read()
            found[item["Key"][len(prefix) + 1 :]] = body
    return found


def _warc_responses(objects: dict[str, bytes]) -> Counter[str]:
    """Page responses per target URL across the committed WARC parts, read by warcio from the raw objects."""
    committed = json.loads(objects["committed.json"])["parts"]
    counts: Counter[str] = Counter()
    for name in committed:
        if not name.startswith("warc/"):
            continue
        raw = objects[name]
        assert raw[:2] == b"\x1f\x8b" and gzip.decompress(raw).startswith(b"WARC/"), f"{name} is not plain gzip"
        for record in ArchiveIterator(io.BytesIO(raw)):  # (warcio refuses gzip inside gzip)
            uri = record.rec_headers.get_header("WARC-Target-URI")
            if record.rec_type == "response" and not uri.endswith("/robots.txt"):
                counts[str(canonicalize(uri, DEFAULT_TRACKING_PARAMS))] += 1
    return counts


def _crawl(web: TestWeb, s3_uri: str, **kw: Any) -> dict[str, Any]:
    cfg = local_config(seeds=tuple(web.graph.seeds()), out=s3_uri, delay=0.01, checkpoint_interval=1.0, **kw)
    summary: dict[str, Any] = Crawl(cfg).start().wait(timeout=300)
    return summary


def test_every_object_in_the_bucket_reads_with_tools_that_are_not_raycrawl(s3_server: Any, s3_uri: str) -> None:
    spec = WebSpec(hosts=3, pages_per_host=20)
    with TestWeb(spec) as web:
        _crawl(web, s3_uri)
    reachable = set(web.graph.reachable([(h, 0) for h in range(spec.hosts)]))
    objects = _bucket_objects(s3_server, s3_uri)

    responses = _warc_responses(objects)
    assert set(responses) == reachable and set(responses.values()) == {1}
    records = [
        json.loads(line)
        for name in json.loads(objects["committed.json"])["parts"]
        if name.startswith("pages/")
        for line in objects[name].decode("utf-8").splitlines()
    ]
    assert {r["url"] for r in records if r["outcome"] == "fetched"} == reachable
    assert json.loads(objects["stats.json"])["outcomes"]["fetched"] == len(reachable)
    manifests = [name for name in objects if name.startswith("checkpoints/") and name.endswith("/manifest.json")]
    assert manifests
    for name in manifests:  # each checkpoint part is stored byte for byte as the manifest describes it
        directory = name.rsplit("/", 1)[0]
        for part, meta in json.loads(objects[name])["parts"].items():
            data = objects[f"{directory}/{part}"]
            assert (len(data), hashlib.sha256(data).hexdigest()) == (meta["size"], meta["sha256"]), part


def test_a_crawl_whose_warc_an_older_raycrawl_gzipped_twice_resumes_and_is_put_right(
    s3_server: Any, s3_uri: str
) -> None:
    spec = WebSpec(hosts=2, pages_per_host=15)
    with TestWeb(spec) as web:
        _crawl(web, s3_uri)
        storage = resolve(s3_uri)
        warc_parts = [n for n in json.loads(storage.read("committed.json") or b"{}")["parts"] if n.startswith("warc/")]
        assert warc_parts
        for name in warc_parts:  # written again as the old code wrote it: pyarrow's default, compression="detect"
            raw = storage.read_raw(name) or b""
            with storage.fs.open_output_stream(storage.path(name)) as out:
                out.write(raw)
        doubled = _bucket_objects(s3_server, s3_uri)
        assert all(is_doubled_gzip(doubled[name][:65536]) for name in warc_parts)  # (the old files, as they were)
        summary = _crawl(web, s3_uri, resume=True)
    reachable = set(web.graph.reachable([(h, 0) for h in range(spec.hosts)]))
    assert summary["events"]["warc_parts_unwrapped"] == len(warc_parts)
    responses = _warc_responses(_bucket_objects(s3_server, s3_uri))  # plain gzip again, every page once
    assert set(responses) == reachable and set(responses.values()) == {1}


def test_unwrapping_takes_off_exactly_one_layer() -> None:
    member = gzip.compress(b"WARC/1.1\r\n\r\n") + gzip.compress(b"WARC/1.1\r\n\r\nsecond")
    assert not is_doubled_gzip(member) and unwrap_doubled_gzip(member) == member
    assert is_doubled_gzip(gzip.compress(member)) and unwrap_doubled_gzip(gzip.compress(member)) == member
    assert unwrap_doubled_gzip(b"plain text") == b"plain text"
    assert unwrap_doubled_gzip(b"\x1f\x8bnot gzip at all") == b"\x1f\x8bnot gzip at all"
    truncated = gzip.compress(member)[:-12]  # a damaged outer layer: left as stored, never an exception
    assert unwrap_doubled_gzip(truncated) == truncated
