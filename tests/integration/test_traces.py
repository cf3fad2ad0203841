"""Traces: W3C Trace Context in and out, and spans exported over OTLP/HTTP to a collector whose
decoder is OpenTelemetry's own (tests/tools/otlp-receiver.cjs decodes each export with the
protobuf definitions of @opentelemetry/otlp-transformer, generated from the published .proto
files): one trace from the gateway's request through the acquirer call to the callback, the
same trace id at the fake PSP, the fake Adyen and the callback receiver, nothing secret in the
exported bytes, malformed headers ignored, and a slow or absent collector costing no payment."""
import base64
import json
import pathlib
import re
import socket
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from adyen import adyen_acquirer, adyen_merchant, ledger as adyen_ledger, notify_to, start_fake
from conftest import APP_TOKEN, AUTH, BIN, CALLBACK_ARGS, CALLBACK_SECRET, create_body, logged_port
from conftest import request as http_request
from pix import CLIENT_SECRET, Pki, pix_acquirer, pix_body, pix_merchant, psp_ledger, start_psp, tls_args, wait_for
from receiver import callback_body

TOOLS = pathlib.Path(__file__).resolve().parents[1] / "tools"
TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT = "00f067aa0ba902b7"
TRACEPARENT = f"00-{TRACE}-{PARENT}-01"
SERVER, CLIENT, INTERNAL = 2, 3, 1  # OTLP's SpanKind


class Collector:
    """The OTLP receiver (Node.js), on a free port of 127.0.0.1."""

    def __init__(self, log_path):
        self.log = open(log_path, "wb")
        self.process = subprocess.Popen(["node", str(TOOLS / "otlp-receiver.cjs")], cwd=TOOLS,
                                        stdout=subprocess.PIPE, stderr=self.log)
        line = self.process.stdout.readline().decode()
        assert line.startswith("port "), line
        self.port = int(line.split()[1])
        self.url = f"http://127.0.0.1:{self.port}"

    def spans(self):
        status, raw, _ = http_request(self.port, "GET", "/spans", headers={})
        assert status == 200
        return json.loads(raw)["spans"]

    def raw(self):
        status, raw, _ = http_request(self.port, "GET", "/raw", headers={})
        return b"".join(base64.b64decode(line) for line in raw.split(b"\n") if line)

    def mode(self, mode, seconds=0):
        assert http_request(self.port, "POST", "/mode", {"mode": mode, "seconds": seconds}, headers={})[0] == 200

    def close(self):
        self.process.terminate()
        self.process.wait(10)
        self.log.close()


@pytest.fixture
def collector(base_dir, request):
    c = Collector(base_dir / f"{request.node.name}-collector.log")
    yield c
    c.close()


def tracing(collector, ratio=1):
    return ["--otlp-endpoint", collector.url, "--trace-sample-ratio", str(ratio)]


def traced(extra=None):
    return dict(AUTH, traceparent=TRACEPARENT, **(extra or {}))


def of_trace(collector, trace, names, timeout=20):
    """The trace's spans once every name in `names` has been exported."""
    found = []

    def complete():
        found[:] = [s for s in collector.spans() if s["traceId"] == trace]
        return set(names) <= {s["name"] for s in found}

    wait_for(complete, timeout=timeout, what=f"spans {names} of trace {trace}")
    return found


def one(spans, name):
    matching = [s for s in spans if s["name"] == name]
    assert matching, f"no span {name}"
    return matching[0]


def log_lines(path):
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_one_trace_from_the_gateways_request_through_the_acquirer_to_the_callback(connector_factory, receiver,
                                                                                 collector, tmp_path):
    r = receiver()
    access, events = tmp_path / "access.log", tmp_path / "events.log"
    c = connector_factory(extra_args=CALLBACK_ARGS + tracing(collector) +
                          ["--access-log", str(access), "--event-log", str(events)])
    body = create_body("traced-1", card="4222222222222224", callbackUrl=r.url())  # pending, then approved
    status, raw, _ = http_request(c.port, "POST", "/payments", body, traced({"tracestate": "vendor=abc, other@sys=1"}))
    assert status == 200, raw
    assert r.wait_for(lambda rv: rv.processed), "no callback"
    callback = r.requests[-1]
    assert callback_body(callback)["status"] == "approved"
    # The callback continues the gateway's trace, with its tracestate (stored with the payment).
    sent = callback["headers"]["traceparent"]
    assert re.fullmatch(rf"00-{TRACE}-[0-9a-f]{{16}}-01", sent), sent
    assert callback["headers"]["tracestate"] == "vendor=abc,other@sys=1"

    spans = of_trace(collector, TRACE, ["POST /payments", "payment create", "acquirer authorize",
                                        "callback delivery", "POST"])
    by_id = {s["spanId"]: s for s in spans}
    server = one(spans, "POST /payments")
    assert server["kind"] == SERVER and server["parentSpanId"] == PARENT
    assert server["traceState"] == "vendor=abc,other@sys=1"
    attributes = server["attributes"]
    assert attributes["http.request.method"] == "POST" and attributes["url.path"] == "/payments"
    assert attributes["http.route"] == "/payments" and attributes["http.response.status_code"] == 200
    assert attributes["url.scheme"] == "http" and attributes["idempay.merchant"] == "shop"
    decision = one(spans, "payment create")
    assert decision["kind"] == INTERNAL and decision["parentSpanId"] == server["spanId"]
    assert decision["attributes"]["idempay.payment_id"] == "traced-1"
    authorize = one(spans, "acquirer authorize")
    assert authorize["parentSpanId"] == decision["spanId"]
    assert authorize["attributes"]["idempay.acquirer.operation"] == "authorize"
    # The callback: a span of the payment's trace, under the create's decision; its HTTP call a
    # client span under it, whose id is the one the receiver saw.
    delivery = one(spans, "callback delivery")
    assert delivery["parentSpanId"] == decision["spanId"]
    assert delivery["attributes"]["idempay.delivery_id"] and delivery["attributes"]["idempay.callback.attempt"] >= 1
    post = by_id[sent.split("-")[2]]
    assert post["kind"] == CLIENT and post["parentSpanId"] == delivery["spanId"]
    assert post["attributes"]["http.request.method"] == "POST"
    assert post["attributes"]["server.address"] == "127.0.0.1" and post["attributes"]["http.response.status_code"] == 200
    assert post["attributes"]["url.full"] == f"{r.url().split('?')[0]}"
    for s in spans:
        assert s["resource"]["service.name"] == "idempay" and s["scope"] == "idempay"
        assert int(s["end"]) >= int(s["start"]) > 0
    # The commit groups that carried the request's writes link to it.
    everything = collector.spans()
    ours = {s["spanId"] for s in spans}
    groups = [s for s in everything if s["name"] == "store commit group"]
    assert any(link["traceId"] == TRACE and link["spanId"] in ours for g in groups for link in g["links"])

    # The logs and `idempay inspect` name the trace.
    wait_for(lambda: any(line.get("traceId") == TRACE for line in log_lines(access)), what="access log line")
    assert [line for line in log_lines(events) if line["paymentId"] == "traced-1" and line.get("traceId") == TRACE]
    c.process.terminate()
    out = subprocess.run([BIN, "inspect", "traced-1", "--json", "--data-dir", str(c.data_dir)],
                         capture_output=True, check=True)
    assert json.loads(out.stdout)["traceId"] == TRACE

    # Nothing secret in what went to the collector: no card, credential, signature or secret.
    exported = collector.raw()
    assert exported
    for secret in ["4222222222222224", APP_TOKEN, "connector-token", CALLBACK_SECRET, "s3cr3t", "123",
                   "X-VTEX-signature"]:
        if secret == "123":  # the test card's CVV: only as a field name would it be recognisable
            assert b'"cardSecurityCode"' not in exported
            continue
        assert secret.encode() not in exported, secret


MALFORMED = [
    TRACEPARENT.upper(),                                  # upper case
    "ff" + TRACEPARENT[2:],                               # version ff
    f"00-{'0' * 32}-{PARENT}-01",                         # all-zero trace id
    f"00-{TRACE}-{'0' * 16}-01",                          # all-zero span id
    TRACEPARENT + "-extra",                               # version 00 with more after the flags
    f"00-{TRACE}-{PARENT}-0",                             # short flags
    f"00_{TRACE}_{PARENT}_01",                            # wrong separators
    "00-" + TRACE + "-" + PARENT + "-01\u00e9",           # a byte beyond ASCII
]


def test_a_malformed_traceparent_is_ignored_never_refused(connector_factory, collector, tmp_path):
    access = tmp_path / "access.log"
    c = connector_factory(extra_args=tracing(collector) + ["--access-log", str(access)])
    for i, header in enumerate(MALFORMED):
        status, raw, _ = http_request(c.port, "POST", "/payments", create_body(f"bad-trace-{i}"),
                                      dict(AUTH, traceparent=header))
        assert status == 200, (header, raw)
    wait_for(lambda: len(log_lines(access)) == len(MALFORMED), what="access log lines")
    traces = [line["traceId"] for line in log_lines(access)]
    assert len(set(traces)) == len(MALFORMED), "a new trace for each"
    for trace in traces:
        assert re.fullmatch(r"[0-9a-f]{32}", trace) and trace != TRACE and trace != "0" * 32
    servers = []
    wait_for(lambda: len(servers_of(collector, traces, servers)) == len(MALFORMED), what="the requests' spans")
    assert all(s["parentSpanId"] == "" for s in servers), "each a new trace's root"


def servers_of(collector, traces, into):
    into[:] = [s for s in collector.spans() if s["name"] == "POST /payments" and s["traceId"] in traces]
    return into


def test_raw_bytes_in_a_path_reach_the_collector_as_valid_utf8(connector_factory, collector):
    """A request line's path is whatever bytes a client sends (Beast takes any beyond ASCII); a
    span's url.path is a protobuf string, which must be UTF-8: one bad byte could make a strict
    collector refuse the whole batch, everyone's spans with it."""
    c = connector_factory(extra_args=tracing(collector))
    with socket.create_connection(("127.0.0.1", c.port), timeout=10) as s:
        s.sendall(b"GET /payments/\xff\xfe HTTP/1.1\r\nHost: x\r\ntraceparent: " + TRACEPARENT.encode() + b"\r\n\r\n")
        assert s.recv(100).startswith(b"HTTP/1.1 404")
    server = one(of_trace(collector, TRACE, ["GET unknown"]), "GET unknown")
    assert server["attributes"]["url.path"] == "/payments/\\xff\\xfe"  # not U+FFFD: made visible before it left


def test_a_later_version_is_read_and_an_invalid_tracestate_dropped(connector_factory, collector, receiver):
    r = receiver()
    c = connector_factory(extra_args=CALLBACK_ARGS + tracing(collector))
    later = f"cc-{TRACE}-{PARENT}-01-what-comes-next"
    body = create_body("later-version", card="4222222222222224", callbackUrl=r.url())
    headers = dict(AUTH, traceparent=later, tracestate="Invalid Key=1")
    assert http_request(c.port, "POST", "/payments", body, headers)[0] == 200
    assert r.wait_for(lambda rv: rv.processed), "no callback"
    sent = r.requests[-1]["headers"]
    assert sent["traceparent"].startswith(f"00-{TRACE}-") and "tracestate" not in sent


def test_the_psp_adyen_and_the_http_acquirer_see_the_gateways_trace(base_dir, tmp_path, request, connector_factory,
                                                                     collector, stub_server):
    # idempay's own acquirer protocol (the stub as a server), with tracing off: the context
    # still goes out.
    c = connector_factory(acquirer=stub_server.url)
    assert http_request(c.port, "POST", "/payments", create_body("http-traced"), traced())[0] == 200
    status, raw, _ = http_request(stub_server.port, "GET", "/traceparents", headers={})
    assert status == 200
    assert [t for t in json.loads(raw) if t["route"] == "POST /authorize" and t["traceparent"].startswith(f"00-{TRACE}-")]
    # Adyen, with tracing off too.
    fake = start_fake(base_dir, f"{request.node.name}-adyen")
    try:
        c = connector_factory(merchants=[adyen_merchant(adyen_acquirer(fake.url))], extra_args=CALLBACK_ARGS)
        status, raw, _ = http_request(c.port, "POST", "/payments", create_body("ady-traced"), traced())
        assert status == 200, raw
        seen = adyen_ledger(fake)["traceparents"]
        assert [t for t in seen if t["route"].endswith("/payments") and t["traceparent"].startswith(f"00-{TRACE}-")], seen
    finally:
        fake.terminate()
    # The API Pix PSP, with tracing on: the token and the charge are both the request's.
    pki = Pki(tmp_path)
    psp = start_psp(base_dir, f"{request.node.name}-psp", pki)
    try:
        acquirer = pix_acquirer(psp.url, psp.url + "/oauth/token", pki)
        c = connector_factory(merchants=pix_merchant(acquirer), extra_args=CALLBACK_ARGS + tls_args(pki) + tracing(collector))
        status, raw, _ = http_request(c.port, "POST", "/payments", pix_body("pix-traced"), traced())
        assert status == 200, raw
        seen = psp_ledger(psp)["traceparents"]
        routes = {t["route"] for t in seen if t["traceparent"].startswith(f"00-{TRACE}-")}
        assert "POST /oauth/token" in routes and any(r.startswith("PUT /cob") for r in routes), seen
        spans = of_trace(collector, TRACE, ["POST /payments", "acquirer authorize", "PUT", "POST"])
        clients = [s for s in spans if s["kind"] == CLIENT]
        assert {s["attributes"]["http.request.method"] for s in clients} >= {"POST", "PUT"}
        exported = collector.raw()
        assert CLIENT_SECRET.encode() not in exported and b"12345678909" not in exported  # the buyer's CPF
    finally:
        psp.terminate()


def test_an_acquirers_notification_is_one_trace_with_the_decision_it_causes(base_dir, request, connector_factory,
                                                                            collector):
    """Adyen's notification names the payment by its reference, found in the store on a reader
    thread: the decision it causes is still a child of the notification's request (named by
    its route's template), linked to the payment's own trace (the gateway's)."""
    fake = start_fake(base_dir, f"{request.node.name}-adyen")
    try:
        c = connector_factory(merchants=[adyen_merchant(adyen_acquirer(fake.url))],
                              extra_args=CALLBACK_ARGS + tracing(collector))
        notify_to(fake, f"http://127.0.0.1:{c.port}/webhooks/adyen/shop/adyen")
        status, raw, _ = http_request(c.port, "POST", "/payments", create_body("ady-event"), traced())
        assert status == 200, raw

        def event_in_its_notifications_trace():
            spans = collector.spans()
            hooks = {s["spanId"]: s for s in spans
                     if s["kind"] == SERVER and s["attributes"].get("url.path", "").startswith("/webhooks/adyen/")}
            events = [s for s in spans if s["name"] == "payment event" and s["parentSpanId"] in hooks]
            return events and (events[0], hooks[events[0]["parentSpanId"]])

        event, hook = wait_for(event_in_its_notifications_trace, what="the notification's decision under its request")
        assert hook["name"] == "POST /webhooks/{kind}/{merchant}/{acquirer}", hook["name"]
        assert hook["attributes"]["http.route"] == "/webhooks/{kind}/{merchant}/{acquirer}"
        assert event["traceId"] == hook["traceId"] != TRACE  # the fake sends no traceparent: a trace of its own
        assert event["attributes"]["idempay.payment_id"] == "ady-event"
        assert TRACE in {link["traceId"] for link in event["links"]}, event["links"]
    finally:
        fake.terminate()


def metric(c, name):
    status, raw, _ = http_request(c.metrics_port, "GET", "/metrics", headers={})
    assert status == 200
    found = re.search(rb"^" + name.encode() + rb" ([0-9.e+]+)$", raw, re.M)
    return float(found.group(1)) if found else 0.0


def test_a_collector_down_or_slow_costs_no_payment(connector_factory, collector):
    c = connector_factory(extra_args=tracing(collector) + ["--metrics-listen", "127.0.0.1:0",
                                                           "--trace-queue-spans", "1000"])
    c.metrics_port = logged_port(c.process, rb"metrics on port (\d+)")
    collector.mode("down")

    def creates(prefix, n):
        started = time.time()
        with ThreadPoolExecutor(8) as pool:  # eight gateways at once
            answers = list(pool.map(lambda i: http_request(c.port, "POST", "/payments", create_body(f"{prefix}-{i}"),
                                                      traced())[0], range(n)))
        assert answers == [200] * n
        return time.time() - started

    creates("down", 200)
    wait_for(lambda: metric(c, "idempay_trace_spans_dropped") > 0, what="spans dropped while the collector is down")
    # Slow: the exporter waits out its timeout on one batch while the queue fills and spills.
    collector.mode("slow", seconds=30)
    dropped = metric(c, "idempay_trace_spans_dropped")
    took = creates("slow", 1000)
    assert metric(c, "idempay_trace_spans_dropped") > dropped
    assert took < 60, f"1,000 creates took {took:.0f} s with the collector slow"
    # Back up: spans flow again.
    collector.mode("ok")
    creates("back", 5)
    wait_for(lambda: metric(c, "idempay_trace_spans_exported") > 0, timeout=30, what="spans exported again")
    # Silent again, a batch in flight and more spans queued behind it: a stop waits one export
    # timeout (5 s) at most, counted from the signal, not what is left of the batch's and then
    # the next one's (about 9 s).
    collector.mode("slow", seconds=30)
    creates("stop", 5)
    time.sleep(1.5)  # the exporter's next batch (posted within a second) waits for its answer
    creates("queued", 5)
    started = time.time()
    assert c.process.terminate() == 0
    took = time.time() - started
    assert took < 7.5, f"stopping took {took:.1f} s with the collector silent"


def test_recovery_after_sigkill_is_a_trace_linked_to_the_payments(connector_factory, stub_server, collector):
    """Killed after the intent was stored, before the acquirer was asked: the restart's recovery
    is a trace of its own, its reconciliation of the payment a span under it, linked to the
    trace of the gateway's request, and the acquirer call under that."""
    c = connector_factory(acquirer=stub_server.url, extra_args=tracing(collector))
    c.process.terminate()
    c.start(env={"IDEMPAY_CRASH_AT": "after-intent"})
    try:
        http_request(c.port, "POST", "/payments", create_body("recovered-1"), traced())
    except OSError:
        pass
    c.process.proc.wait(timeout=30)
    assert c.process.proc.returncode == -9
    c.start()
    found = []

    def recovered():
        spans = collector.spans()
        rounds = [s for s in spans if s["name"] == "recovery"]
        found[:] = [s for s in spans if rounds and s["traceId"] == rounds[0]["traceId"]]
        return {"recovery", "payment reconcile", "acquirer status"} <= {s["name"] for s in found}

    wait_for(recovered, timeout=30, what="the recovery's spans")
    recovery = one(found, "recovery")
    assert recovery["parentSpanId"] == "" and recovery["attributes"]["idempay.recovery.payments"] >= 1
    reconcile = one(found, "payment reconcile")
    assert reconcile["parentSpanId"] == recovery["spanId"]
    assert reconcile["attributes"]["idempay.payment_id"] == "recovered-1"
    assert [link for link in reconcile["links"] if link["traceId"] == TRACE], "linked to the payment's own trace"
    assert one(found, "acquirer status")["parentSpanId"] == reconcile["spanId"]
