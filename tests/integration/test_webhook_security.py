"""Inbound acquirer webhooks: verified over the raw bytes before parsing; forged, stale,
conflicting and oversized ones are refused and change nothing; a duplicate changes nothing."""
import json
import time

from conftest import ACQUIRER_SECRET, CALLBACK_ARGS, create_body, request
from receiver import sign


def send_webhook(connector, msg_id, body, secret=ACQUIRER_SECRET, timestamp=None, signature=None):
    ts = str(int(time.time()) if timestamp is None else timestamp)
    headers = {"Content-Type": "application/json", "webhook-id": msg_id, "webhook-timestamp": ts,
               "webhook-signature": signature or sign(secret, msg_id, ts, body)}
    return request(connector.port, "POST", "/webhooks/acquirer", body, headers=headers)


def event(payment_id, status, revision, tid="T-any"):
    return json.dumps({"type": "authorization.updated", "data": {
        "paymentId": payment_id, "status": status, "tid": tid, "nsu": "1", "authorizationId": "777",
        "acquirer": "idempay-stub", "code": "0000", "message": status, "revision": revision}}).encode()


def current_status(connector, payment_id, callback_url):
    _, raw, _ = connector.post("/payments", create_body(payment_id, card="4222222222222224", callbackUrl=callback_url))
    return json.loads(raw)["status"]


def test_webhook_verification_and_inbox(connector_factory, stub_server, receiver):
    r = receiver()
    c = connector_factory(acquirer=stub_server.url,
                          extra_args=CALLBACK_ARGS + ["--acquirer-webhook-secret", ACQUIRER_SECRET])
    pid = "wh-1"
    assert current_status(c, pid, r.url()) == "undefined"
    good = event(pid, "approved", 2)
    other_secret = "whsec_" + __import__("base64").b64encode(b"z" * 32).decode()

    assert send_webhook(c, "evt-forged", good, secret=other_secret)[0] == 401
    assert send_webhook(c, "evt-stale", good, timestamp=int(time.time()) - 600)[0] == 401
    assert send_webhook(c, "evt-future", good, timestamp=int(time.time()) + 600)[0] == 401
    assert send_webhook(c, "evt-nosig", good, signature="v1,AAAA")[0] == 401
    assert request(c.port, "POST", "/webhooks/acquirer", good, headers={"Content-Type": "application/json"})[0] == 401
    huge = good[:-2] + b', "pad": "' + b"x" * (70 * 1024) + b'"}}'
    assert send_webhook(c, "evt-huge", huge)[0] == 413
    time.sleep(0.3)
    assert current_status(c, pid, r.url()) == "undefined", "a refused webhook changed the payment"
    assert not r.requests

    assert send_webhook(c, "evt-1", good)[0] == 200
    assert current_status(c, pid, r.url()) == "approved"
    assert r.wait_for(lambda rv: len(rv.processed) == 1)

    duplicate = send_webhook(c, "evt-1", good)
    assert duplicate[0] == 200 and json.loads(duplicate[1])["duplicate"] is True
    assert send_webhook(c, "evt-1", event(pid, "denied", 3))[0] == 409
    # A stale revision under a new id is acknowledged and ignored: it never moves a payment back.
    assert send_webhook(c, "evt-2", event(pid, "denied", 2))[0] == 200
    assert current_status(c, pid, r.url()) == "approved"
    time.sleep(0.5)
    assert len(r.requests) == 1, "a duplicate or stale event caused another callback"

    assert send_webhook(c, "evt-3", event("nobody", "approved", 2))[0] == 404
