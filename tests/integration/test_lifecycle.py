"""Clean shutdown: SIGTERM drains the requests in flight, then the process exits 0."""
import json
import threading
import time

import re
import subprocess

from conftest import BIN, create_body


def test_sigterm_drains_in_flight_requests(connector_factory):
    connector = connector_factory(extra_args=["--stub-latency-ms", "400"])
    results = []

    def call(i):
        results.append(connector.post("/payments", create_body(f"drain-{i}")))

    threads = [threading.Thread(target=call, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    time.sleep(0.15)  # requests are now waiting on the acquirer
    assert connector.process.terminate() == 0
    for t in threads:
        t.join()
    assert len(results) == 8
    assert all(status == 200 and json.loads(raw)["status"] == "approved" for status, raw, _ in results)
    assert b"stopped cleanly" in connector.process.log_path.read_bytes()

    connector.start()  # and everything answered was durable
    for i in range(8):
        status, raw, _ = connector.post("/payments", create_body(f"drain-{i}"))
        assert json.loads(raw)["status"] == "approved"


def test_version_names_the_release_and_the_commit():
    out = subprocess.run([BIN, "--version"], capture_output=True, text=True, check=True).stdout
    assert re.fullmatch(r"idempay \d+\.\d+\.\d+ \(commit ([0-9a-f]{12}|unknown)\)\n", out), out

