"""Metrics (--metrics-listen) scraped as Prometheus would, checked by promtool, with the
counters moving as requests are made; and the event log (--event-log): one line per payment
event in the audit trail's vocabulary, a burst of duplicates held to its rate and counted."""
import json
import re
import subprocess
import time

from conftest import logged_port, AUTH, concurrently, create_body, request

SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(?:[^"}]|"(?:[^"\\]|\\.)*")*\})? (\S+)$')


def scrape(port):
    status, raw, headers = request(port, "GET", "/metrics", headers={})
    assert status == 200 and headers["content-type"].startswith("text/plain")
    checked = subprocess.run(["promtool", "check", "metrics"], input=raw, capture_output=True)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    samples = {}
    for line in raw.decode().splitlines():
        if line and not line.startswith("#"):
            match = SAMPLE.match(line)
            assert match, line
            samples[match.group(1) + (match.group(2) or "")] = float(match.group(3))
    return samples


def metrics_port(c):
    return logged_port(c.process, rb"metrics on port (\d+)")


def test_metrics_move_as_requests_are_made(connector_factory, tmp_path):
    c = connector_factory(extra_args=["--metrics-listen", "127.0.0.1:0", "--event-log", str(tmp_path / "events.log")])
    port = metrics_port(c)
    before = scrape(port)
    assert before.get('idempay_payment_events_total{kind="event_processed"}', 0) == 0

    assert c.post("/payments", create_body("m-1", value=10))[0] == 200
    assert c.post("/payments", create_body("m-1", value=10))[0] == 200   # a retry: reused
    # Counted as it is answered, though the request thread answered it from the repeat cache
    # and its audit entry is written at the next tick.
    key = 'idempay_payment_events_total{kind="event_duplicate_reused"}'
    assert scrape(port).get(key, 0) - before.get(key, 0) == 1
    assert c.post("/payments", create_body("m-1", value=11))[0] == 400   # another payment: conflict
    assert c.post("/payments/m-1/settlements", {"paymentId": "m-1", "requestId": "s-1", "value": 10})[0] == 200
    assert request(c.port, "POST", "/payments", create_body("m-2"), {"X-VTEX-API-AppKey": "nobody",
                                                                     "X-VTEX-API-AppToken": "wrong"})[0] == 401
    assert request(c.port, "POST", "/webhooks/acquirer", b"{}", {"webhook-id": "x", "webhook-timestamp": "1",
                                                                "webhook-signature": "v1,AAAA"})[0] == 401
    after = scrape(port)
    expected = {
        'idempay_http_requests_total{route="/payments",status="200"}': 2,
        'idempay_http_requests_total{route="/payments",status="400"}': 1,
        'idempay_http_requests_total{route="/payments/{paymentId}/settlements",status="200"}': 1,
        'idempay_payment_events_total{kind="event_processed"}': 1,
        'idempay_payment_events_total{kind="event_duplicate_reused"}': 1,
        'idempay_payment_events_total{kind="event_refused"}': 1,
        'idempay_payment_events_total{kind="operation_processed"}': 1,
        'idempay_acquirer_calls_total{operation="authorize",outcome="approved"}': 1,
        'idempay_acquirer_calls_total{operation="settle",outcome="succeeded"}': 1,
        'idempay_auth_failures_total{result="wrong"}': 1,
        'idempay_webhook_verifications_total{result="bad-signature"}': 1,
    }
    for name, value in expected.items():
        assert after.get(name, 0) - before.get(name, 0) == value, (name, after.get(name))
    assert after["idempay_store_commit_group_batches_count"] > before.get("idempay_store_commit_group_batches_count", 0)
    assert after['idempay_http_request_duration_seconds_count{route="/payments"}'] == 4  # the 401 too
    assert after['idempay_acquirer_call_duration_seconds_bucket{operation="authorize",le="+Inf"}'] == 1
    assert "idempay_live_payment_actors" in after and "idempay_outbox_pending" in after

    # The event log: the payment's story in the audit trail's words, nothing secret.
    time.sleep(0.5)  # written in batches every 200 ms
    lines = [json.loads(line) for line in (tmp_path / "events.log").read_text().splitlines()]
    kinds = [e["event"] for e in lines if e.get("paymentId") == "m-1"]
    assert kinds[:3] == ["event_received", "event_processing_started", "event_processed"], kinds
    assert "event_duplicate_reused" in kinds and "operation_processed" in kinds
    assert "4444333322221111" not in (tmp_path / "events.log").read_text()


def test_a_burst_of_duplicates_cannot_flood_the_event_log(connector_factory, tmp_path):
    log = tmp_path / "events.log"
    c = connector_factory(extra_args=["--metrics-listen", "127.0.0.1:0", "--event-log", str(log)])
    port = metrics_port(c)
    assert c.post("/payments", create_body("burst-log"))[0] == 200
    body = create_body("burst-log")
    started = time.time()
    results = concurrently(8, lambda i: [request(c.port, "POST", "/payments", body, AUTH)[0] for _ in range(100)])
    elapsed = time.time() - started
    assert all(s == 200 for r in results for s in r)
    time.sleep(1.2)  # the bucket refills: the next duplicate's line carries the count held back
    assert c.post("/payments", body)[0] == 200
    time.sleep(0.5)
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    duplicates = [e for e in lines if e["event"] == "event_duplicate_reused"]
    summaries = [e for e in lines if e["event"] == "events_suppressed"]
    assert len(duplicates) <= 50 + 50 * (elapsed + 2), len(duplicates)
    suppressed = scrape(port)['idempay_event_log_suppressed_total{kind="event_duplicate_reused"}']
    assert suppressed > 0 and len(duplicates) + suppressed == 801
    assert sum(s["count"] for s in summaries) == suppressed
