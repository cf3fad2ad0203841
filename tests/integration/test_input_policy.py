"""Input is read one way: a member name given twice is refused everywhere outside bytes arrive
(PPP requests, acquirer webhooks), and fields cannot be shifted across a separator to pass a
different payment off as a replay."""
import json

from conftest import ACQUIRER_SECRET, CALLBACK_ARGS, create_body
from test_webhook_security import current_status, send_webhook


def raw_create(connector, payment_id, duplicate):
    """A Create Payment body with one member written twice (json.dumps cannot write that)."""
    body = json.dumps(create_body(payment_id))
    return connector.post("/payments", body[:-1].encode() + b"," + duplicate + b"}")


def test_duplicate_member_names_are_refused_and_store_nothing(connector):
    for dup in (b'"paymentId":"dup-other"', b'"value":0.01', b'"callbackUrl":"https://evil.example/x"'):
        status, raw, _ = raw_create(connector, "dup-1", dup)
        assert status == 400, dup
        assert b"appears twice" in raw, raw
    card_twice = json.dumps(create_body("dup-1"))
    card_twice = card_twice.replace('"csc": "123"', '"csc": "123", "number": "4444333322221112"')
    assert connector.post("/payments", card_twice.encode())[0] == 400
    op = b'{"paymentId":"dup-1","requestId":"r1","requestId":"r2","value":1}'
    status, raw, _ = connector.post("/payments/dup-1/settlements", op)
    assert status == 500 and b"appears twice" in raw  # the operation's documented refusal
    # Nothing was stored: the paymentId is still free.
    status, raw, _ = connector.post("/payments", create_body("dup-1"))
    assert status == 200 and json.loads(raw)["status"] == "approved"


def test_webhooks_with_a_member_twice_are_refused(connector_factory, stub_server, receiver):
    r = receiver()
    c = connector_factory(acquirer=stub_server.url,
                          extra_args=CALLBACK_ARGS + ["--acquirer-webhook-secret", ACQUIRER_SECRET])
    assert current_status(c, "dup-wh", r.url()) == "undefined"
    # Signed correctly: the signature covers the bytes, the reader must still refuse them.
    body = (b'{"type":"authorization.updated","data":{"paymentId":"dup-wh","status":"denied",'
            b'"status":"approved","tid":"T","nsu":"1","authorizationId":"7","acquirer":"x","code":"0",'
            b'"message":"m","revision":9}}')
    assert send_webhook(c, "evt-dup", body)[0] == 400
    assert current_status(c, "dup-wh", r.url()) == "undefined"


def test_shifted_separators_are_a_different_payment(connector):
    first = create_body("shift-1", orderId="A|B", reference="C")
    status, raw, _ = connector.post("/payments", first)
    assert status == 200 and json.loads(raw)["status"] == "approved"
    shifted = create_body("shift-1", orderId="A", reference="B|C")
    status, raw, _ = connector.post("/payments", shifted)
    assert status == 400 and json.loads(raw)["code"] == "payment-conflict", raw
    assert connector.post("/payments", first)[0] == 200
