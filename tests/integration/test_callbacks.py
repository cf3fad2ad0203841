"""Asynchronous payments and their callbacks: the outcome arrives from the acquirer as a signed
webhook, and the gateway hears it through its callbackUrl, signed, exactly once in effect."""
import json
import subprocess
import time

from conftest import (BIN, CALLBACK_ARGS, CALLBACK_SECRET, create_body,
                      deliveries, ledger)
from receiver import callback_body, verify
from schema import validate


def async_payment(connector, receiver, payment_id, card="4222222222222224"):
    status, raw, _ = connector.post("/payments", create_body(payment_id, card=card, callbackUrl=receiver.url()))
    assert status == 200, raw
    first = validate(raw, "/payments", "post", 200)
    assert first["status"] == "undefined"
    return first


def test_async_approved_callback(connector_factory, receiver):
    r = receiver()
    c = connector_factory(extra_args=CALLBACK_ARGS)
    first = async_payment(c, r, "async-ok")
    started = time.time()
    assert r.wait_for(lambda rv: rv.processed), "no callback within 15 s"
    assert time.time() - started < 15
    request = r.requests[-1]
    body = callback_body(request)
    validate(request["body"], "/payments", "post", 200)
    assert body["status"] == "approved" and body["paymentId"] == "async-ok"
    assert body["tid"] == first["tid"] and body["nsu"] == first["nsu"] and body["authorizationId"]
    assert request["path"] == "/callback?accountName=mystore&X-VTEX-signature=s3cr3t"
    assert request["headers"]["x-vtex-api-appkey"] == "connector-key"
    assert request["headers"]["x-vtex-api-apptoken"] == "connector-token"
    assert verify(CALLBACK_SECRET, request["headers"], request["body"])
    assert not verify(CALLBACK_SECRET, request["headers"], request["body"] + b" ")
    # Later Create Payment repeats answer the final status, byte for byte the callback's body.
    again = c.post("/payments", create_body("async-ok", card="4222222222222224", callbackUrl=r.url()))
    assert again[1] == request["body"]


def test_async_denied_callback(connector_factory, receiver):
    r = receiver()
    c = connector_factory(extra_args=CALLBACK_ARGS)
    async_payment(c, r, "async-no", card="4222222222222225")
    assert r.wait_for(lambda rv: rv.processed)
    body = callback_body(r.requests[-1])
    assert body["status"] == "denied" and body["authorizationId"] == ""
    assert verify(CALLBACK_SECRET, r.requests[-1]["headers"], r.requests[-1]["body"])


def test_unreliable_receiver_sees_each_event_once(connector_factory, receiver):
    r = receiver(script=["500", "drop", "slow", "503", "ok"], slow_seconds=3)
    c = connector_factory(extra_args=CALLBACK_ARGS)
    async_payment(c, r, "flaky")
    assert r.wait_for(lambda rv: len(rv.processed) == 1 and len(rv.requests) >= 5, timeout=30)
    time.sleep(1)  # nothing more may come once acknowledged
    ids = {req["headers"]["webhook-id"] for req in r.requests}
    assert len(ids) == 1, "webhook-id must be stable across retries"
    assert len(r.processed) == 1
    assert len(r.requests) == 5
    assert all(verify(CALLBACK_SECRET, req["headers"], req["body"]) for req in r.requests)


def test_permanent_failures_become_dead_letters_and_replay(connector_factory, receiver):
    r = receiver(script=["410"])
    redirect = receiver(script=["redirect"])
    c = connector_factory(extra_args=CALLBACK_ARGS)
    async_payment(c, r, "gone-1")
    status, _, _ = c.post("/payments", create_body("moved-1", card="4222222222222224", callbackUrl=redirect.url()))
    assert status == 200
    assert r.wait_for(lambda rv: len(rv.requests) >= 1)
    assert redirect.wait_for(lambda rv: len(rv.requests) >= 1)
    time.sleep(1)
    assert len(r.requests) == 1 and not r.processed, "410 must not be retried"
    assert [q["path"] for q in redirect.requests] == [redirect.requests[0]["path"]], "redirects are not followed"
    c.process.terminate()
    dead = {d["paymentId"]: d for d in deliveries(c) if d["state"] == "dead"}
    assert set(dead) == {"gone-1", "moved-1"}
    assert "s3cr3t" not in json.dumps(dead), "the callback URL's signature must not be printed"

    subprocess.run([BIN, "deliveries", "replay", dead["gone-1"]["id"], "--data-dir", str(c.data_dir)], check=True)
    c.start()
    assert r.wait_for(lambda rv: len(rv.processed) == 1)
    assert r.requests[-1]["headers"]["webhook-id"] == r.requests[0]["headers"]["webhook-id"]
    assert verify(CALLBACK_SECRET, r.requests[-1]["headers"], r.requests[-1]["body"])


def test_pending_callbacks_survive_sigkill(connector_factory, receiver):
    r = receiver(default="503")
    c = connector_factory(extra_args=CALLBACK_ARGS)
    for i in range(5):
        async_payment(c, r, f"pending-{i}")
    assert r.wait_for(lambda rv: len({q["headers"]["webhook-id"] for q in rv.requests}) == 5)
    c.process.kill()
    r.default = "ok"
    c.start()
    assert r.wait_for(lambda rv: len(rv.processed) == 5, timeout=30)
    statuses = {callback_body({"body": b})["paymentId"]: callback_body({"body": b})["status"]
                for b in r.processed.values()}
    assert statuses == {f"pending-{i}": "approved" for i in range(5)}


def test_ssrf_guard_refuses_private_destinations(connector_factory, receiver):
    r = receiver()
    args = [a for a in CALLBACK_ARGS if a != "--callback-allow-private"]
    c = connector_factory(extra_args=args + ["--callback-allowed-hosts",
                                             "127.0.0.1,10.1.2.3,169.254.169.254,::1,localhost"])
    # IP literals that are not public are refused at Create Payment, even when allowed...
    literals = {"ssrf-loop": f"https://127.0.0.1:{r.port}/cb", "ssrf-ten": "https://10.1.2.3/cb",
                "ssrf-meta": "https://169.254.169.254/latest/meta-data", "ssrf-v6": f"https://[::1]:{r.port}/cb"}
    for pid, url in literals.items():
        assert c.post("/payments", create_body(pid, card="4222222222222224", callbackUrl=url))[0] == 400, pid
    # ...and an allowed name that resolves to one is refused on connect: a dead letter.
    url = f"https://localhost:{r.port}/cb"
    assert c.post("/payments", create_body("ssrf-name", card="4222222222222224", callbackUrl=url))[0] == 200
    time.sleep(2.5)
    assert r.requests == [], "a private destination was contacted"
    c.process.terminate()
    dead = {d["paymentId"] for d in deliveries(c) if d["state"] == "dead"}
    assert dead == {"ssrf-name"}


def test_out_of_process_stub_reports_through_signed_webhooks(webhook_stub_pair, receiver):
    from conftest import request
    stub, c = webhook_stub_pair
    r = receiver()
    async_payment(c, r, "trig-1")
    time.sleep(0.5)
    assert not r.requests, "nothing happens before the acquirer decides"
    status, _, _ = request(stub.port, "POST", "/trigger", {"paymentId": "trig-1", "outcome": "approve"}, headers={})
    assert status == 200
    assert r.wait_for(lambda rv: rv.processed)
    assert callback_body(r.requests[-1])["status"] == "approved"
    assert ledger(stub)["authorizations"]["trig-1"]["calls"] == 1


def test_in_process_stub_trigger(connector_factory, receiver):
    r = receiver()
    args = [a if a != "300" else "600000" for a in CALLBACK_ARGS]  # the stub never decides alone
    c = connector_factory(extra_args=args)
    async_payment(c, r, "trig-in")
    assert c.post("/stub/trigger", {"paymentId": "trig-in", "outcome": "expire"})[0] == 200
    assert r.wait_for(lambda rv: rv.processed)
    body = callback_body(r.requests[-1])
    assert body["status"] == "denied" and body["code"] == "expired"
    assert c.post("/stub/trigger", {"paymentId": "trig-in", "outcome": "approve"})[0] == 409


def test_a_slow_acquirer_answers_undefined_in_time_and_calls_back(connector_factory, stubs, receiver):
    """The gateway (and its homologation suite) waits 5 s for Create Payment: an acquirer slower
    than --answer-deadline-ms gets the caller an `undefined` in time; its outcome, when it comes,
    goes out by callback and is what every later retry answers. One charge."""
    r = receiver()
    stub = stubs("--latency-ms", "1500")
    c = connector_factory(acquirer=stub.url, extra_args=CALLBACK_ARGS + ["--answer-deadline-ms", "300"])
    body = create_body("slow-acq", callbackUrl=r.url())
    started = time.time()
    status, raw, _ = c.post("/payments", body)
    assert time.time() - started < 1.2
    assert status == 200 and validate(raw, "/payments", "post", 200)["status"] == "undefined"
    status, raw, _ = c.post("/payments", body)  # a retry while the acquirer still thinks: at once
    assert status == 200 and json.loads(raw)["status"] == "undefined"
    assert r.wait_for(lambda rv: rv.processed, timeout=15), "no callback"
    callback = r.requests[-1]
    assert callback_body(callback)["status"] == "approved"
    assert verify(CALLBACK_SECRET, callback["headers"], callback["body"])
    assert c.post("/payments", body)[1] == callback["body"]
    assert ledger(stub)["authorizations"]["slow-acq"]["calls"] == 1
