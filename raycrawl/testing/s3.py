"""An S3 API server for tests: moto's standalone server on a free loopback port, talked to over HTTP by the same
pyarrow client code a crawl uses (never an in-process fake)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

from raycrawl.testing.process import free_port, stop_process

REGION = "us-east-1"
# Credentials as a user gives them (the standard environment variables); moto accepts any. Without them the AWS
# SDK would ask the instance metadata service, an address tests must never touch: it is turned off too.
TEST_CREDENTIALS = {
    "AWS_ACCESS_KEY_ID": "raycrawl-test-key",
    "AWS_SECRET_ACCESS_KEY": "raycrawl-test-secret",
    "AWS_DEFAULT_REGION": REGION,
    "AWS_EC2_METADATA_DISABLED": "true",
}


class S3Server:
    def __init__(self, workdir: Path) -> None:
        self.port = free_port()
        self.endpoint = f"127.0.0.1:{self.port}"
        self._log = (workdir / "moto.log").open("wb")
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(self.port)],
            stdout=self._log,
            stderr=subprocess.STDOUT,
            env={**os.environ, **TEST_CREDENTIALS},
        )
        deadline = time.monotonic() + 30
        while not self._answers():
            if self._proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"moto server did not start (log: {workdir / 'moto.log'})")
            time.sleep(0.1)

    def _answers(self) -> bool:
        try:
            with urllib.request.urlopen(f"http://{self.endpoint}/moto-api/", timeout=2):
                return True
        except (urllib.error.URLError, OSError):
            return False

    def options(self) -> str:
        return f"endpoint_override={self.endpoint}&scheme=http&region={REGION}"

    def uri(self, bucket: str, prefix: str = "") -> str:
        """The URI a user would pass as --out: ``s3://bucket/prefix?endpoint_override=...&scheme=http``."""
        path = f"{bucket}/{prefix}".rstrip("/")
        return f"s3://{path}?{self.options()}"

    def create_bucket(self, bucket: str) -> None:
        import pyarrow.fs as pafs

        fs, _ = pafs.FileSystem.from_uri(f"s3://{bucket}?{self.options()}&allow_bucket_creation=true")
        fs.create_dir(bucket)

    def stop(self) -> None:
        stop_process(self._proc)
        self._log.close()
