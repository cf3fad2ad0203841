"""Repeats of a resolved payment's Create Payment are answered on the request thread, from the
answer its actor gave: these tests try that shortcut the way a second merchant, a changed body,
a changed setting or a crash would, and check every repeat still reaches the audit trail."""
import json
import signal
import subprocess
import time

from conftest import BIN, create_body

ALPHA = {"name": "alpha", "appKey": "alpha-key", "appToken": "alpha-token-0123"}
BETA = {"name": "beta", "appKey": "beta-key", "appToken": "beta-token-0123"}


def auth(key, token, **extra):
    return {"X-VTEX-API-AppKey": key, "X-VTEX-API-AppToken": token, "Content-Type": "application/json", **extra}


AS_ALPHA = auth("alpha-key", "alpha-token-0123")
AS_BETA = auth("beta-key", "beta-token-0123")


def inspect(connector, payment_id):
    out = subprocess.run([BIN, "inspect", payment_id, "--json", "--data-dir", str(connector.data_dir)],
                         capture_output=True, check=True)
    return json.loads(out.stdout)


def reused(report):
    """How many repeats the trail accounts for, entries and counts together."""
    individual = [a for a in report["audit"] if a["kind"] == "event_duplicate_reused"]
    counted = [c for c in report["countedArrivals"] if c["kind"] == "event_duplicate_reused"]
    return len(individual) + sum(c["count"] for c in counted)


def test_the_same_bytes_from_another_merchant_are_not_its_answer(connector_factory):
    c = connector_factory(merchants=[ALPHA, BETA])
    body = create_body("rep-alpha-1", value=40)
    status, first, _ = c.post("/payments", body, AS_ALPHA)
    assert status == 200 and json.loads(first)["status"] == "approved"
    for _ in range(3):  # answered by the request thread, from the answer the actor gave
        assert c.post("/payments", body, AS_ALPHA)[1] == first
    # Beta sends alpha's very bytes: refused, nothing of alpha's answer in it, and byte for byte
    # what alpha hears for a different payment under its own id.
    status, foreign, _ = c.post("/payments", body, AS_BETA)
    assert status == 400 and json.loads(foreign)["code"] == "payment-conflict", foreign
    for issued in ("tid", "nsu", "authorizationId"):
        assert json.loads(first)[issued].encode() not in foreign
    assert c.post("/payments", create_body("rep-alpha-1", value=41), AS_ALPHA)[1] == foreign
    # The homologation suite's mark is part of the request: the same bytes with it are asked again.
    marked = c.post("/payments", body, auth("alpha-key", "alpha-token-0123", **{"X-VTEX-API-Is-TestSuite": "true"}))
    assert marked[0] == 200 and marked[1] == first
    c.process.terminate()
    trail = inspect(c, "rep-alpha-1")["audit"]
    assert reused({"audit": trail, "countedArrivals": []}) == 4
    refused = [e for e in trail if e["kind"] == "access_refused"]
    assert [e["actor"] for e in refused] == ["beta"]


def test_a_reload_checks_known_repeats_again(connector_factory):
    """A merchant that now requires the Secure Proxy refuses card data, repeats included."""
    c = connector_factory(merchants=[ALPHA])
    body = create_body("rep-proxy-1")
    status, first, _ = c.post("/payments", body, AS_ALPHA)
    assert status == 200
    for _ in range(3):
        assert c.post("/payments", body, AS_ALPHA)[1] == first
    c.creds.write_text(json.dumps({"merchants": [dict(ALPHA, requireSecureProxy=True)]}))
    c.process.proc.send_signal(signal.SIGHUP)
    deadline = time.time() + 10
    while True:
        status, raw, _ = c.post("/payments", body, AS_ALPHA)
        if status == 400:
            break
        assert status == 200 and raw == first
        assert time.time() < deadline, "a known repeat is still answered under the old settings"
        time.sleep(0.1)
    assert json.loads(raw)["code"] == "secure-proxy-required", raw


def test_a_pending_payment_is_never_answered_from_the_shortcut(connector_factory):
    """An undefined answer changes when the outcome is known: its repeats go to the actor."""
    c = connector_factory(merchants=[ALPHA], extra_args=["--stub-pending-delay-ms", "600000"])
    body = create_body("rep-pending-1", card="4222222222222224")
    for _ in range(4):
        status, raw, _ = c.post("/payments", body, AS_ALPHA)
        assert status == 200 and json.loads(raw)["status"] == "undefined", raw
    assert c.post("/stub/trigger", {"paymentId": "rep-pending-1", "outcome": "deny"}, AS_ALPHA)[0] == 200
    deadline = time.time() + 10
    while json.loads(c.post("/payments", body, AS_ALPHA)[1])["status"] != "denied":
        assert time.time() < deadline, "a repeat still hears undefined after the payment was denied"
        time.sleep(0.05)
    denied = c.post("/payments", body, AS_ALPHA)[1]
    assert all(c.post("/payments", body, AS_ALPHA)[1] == denied for _ in range(5))


def test_repeats_reach_the_trail_within_a_tick_even_if_the_process_is_killed(connector_factory):
    """Answered without the actor, a repeat is recorded at the directory's next tick: a SIGKILL
    half a second later finds every one of them in the trail."""
    c = connector_factory(merchants=[ALPHA])
    body = create_body("rep-kill-1")
    status, first, _ = c.post("/payments", body, AS_ALPHA)
    assert status == 200
    repeats = 200
    assert all(c.post("/payments", body, AS_ALPHA)[1] == first for _ in range(repeats))
    time.sleep(0.5)
    c.process.kill()
    assert reused(inspect(c, "rep-kill-1")) == repeats
