"""Liveness and readiness for load balancers and supervisors: /health/live
answers while the process runs; /health/ready only while the instance has started, is not
draining and its store takes a write. On SIGTERM readiness turns false first, requests are
still served through --drain-grace-ms, then the drain."""
import json
import threading
import time

from conftest import create_body, request


def status_of(c, path):
    status, raw, _ = request(c.port, "GET", path, headers={})
    return status, json.loads(raw)


def test_live_and_ready_then_not_ready_before_the_drain(connector_factory):
    c = connector_factory(extra_args=["--drain-grace-ms", "1500"])
    assert status_of(c, "/health/live") == (200, {"status": "live"})
    status, body = status_of(c, "/health/ready")
    assert status == 200 and body["status"] == "ready"
    assert request(c.port, "POST", "/health/ready", b"", headers={})[0] == 405

    ended = threading.Event()
    threading.Thread(target=lambda: (c.process.terminate(), ended.set()), daemon=True).start()
    deadline = time.time() + 5
    while True:  # the signal is handled at once: readiness says no while requests are served
        status, body = status_of(c, "/health/ready")
        if status == 503 or time.time() > deadline:
            break
        time.sleep(0.05)
    assert status == 503 and body["code"] == "draining"
    assert status_of(c, "/health/live")[0] == 200
    status, raw, _ = c.post("/payments", create_body("grace-1"))
    assert status == 200 and json.loads(raw)["status"] == "approved"
    assert ended.wait(20) and c.process.proc.returncode == 0
