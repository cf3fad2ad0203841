"""The gateway's homologation flows against the real binary; every answer is checked against
the OpenAPI schema, and every repeat must return the very same bytes (G2)."""
import json

from conftest import create_body, request
from schema import validate

CREATE, CANCEL = "/payments", "/payments/{paymentId}/cancellations"
SETTLE, REFUND = "/payments/{paymentId}/settlements", "/payments/{paymentId}/refunds"


def post_twice(connector, path, body):
    first = connector.post(path, body)
    again = connector.post(path, body)
    assert again[0] == first[0]
    assert again[1] == first[1], "a repeated request must get the byte-identical answer"
    return first


def test_manifest_is_public_and_valid(connector):
    status, raw, _ = request(connector.port, "GET", "/manifest", headers={})
    assert status == 200
    doc = validate(raw, "/manifest", "get", 200)
    names = [m["name"] for m in doc["paymentMethods"]]
    assert "Visa" in names and "Mastercard" in names
    status, raw, _ = request(connector.port, "GET", "/payment-methods", headers={})
    assert status == 200 and "Visa" in json.loads(raw)["paymentMethods"]


def test_authorize_settle_refund(connector):
    status, raw, _ = post_twice(connector, "/payments", create_body("auth-1", value=100))
    assert status == 200
    payment = validate(raw, CREATE, "post", 200)
    assert payment["status"] == "approved"
    assert payment["paymentId"] == "auth-1"
    assert payment["authorizationId"] and payment["tid"]

    settle = {"paymentId": "auth-1", "requestId": "settle-1", "value": 100, "transactionId": "tx-auth-1",
              "authorizationId": payment["authorizationId"], "tid": payment["tid"]}
    status, raw, _ = post_twice(connector, "/payments/auth-1/settlements", settle)
    assert status == 200
    settled = validate(raw, SETTLE, "post", 200)
    assert settled["settleId"] and settled["value"] == 100 and settled["requestId"] == "settle-1"

    refund = {"paymentId": "auth-1", "requestId": "refund-1", "value": 100, "settleId": settled["settleId"],
              "tid": payment["tid"], "transactionId": "tx-auth-1"}
    status, raw, _ = post_twice(connector, "/payments/auth-1/refunds", refund)
    assert status == 200
    refunded = validate(raw, REFUND, "post", 200)
    assert refunded["refundId"] and refunded["value"] == 100

    # The Create Payment answer never changes its identifiers once issued.
    assert connector.post("/payments", create_body("auth-1", value=100))[1] == post_twice(
        connector, "/payments", create_body("auth-1", value=100))[1]


def test_denied(connector):
    status, raw, _ = post_twice(connector, "/payments", create_body("denied-1", card="4444333322221112"))
    assert status == 200
    payment = validate(raw, CREATE, "post", 200)
    assert payment["status"] == "denied"
    assert payment["authorizationId"] == ""


def test_cancel(connector):
    status, raw, _ = connector.post("/payments", create_body("cancel-1"))
    payment = validate(raw, CREATE, "post", 200)
    assert payment["status"] == "approved"
    cancel = {"paymentId": "cancel-1", "requestId": "cancel-req-1", "authorizationId": payment["authorizationId"],
              "transactionId": "tx-cancel-1", "tid": payment["tid"], "value": 3190}
    status, raw, _ = post_twice(connector, "/payments/cancel-1/cancellations", cancel)
    assert status == 200
    cancelled = validate(raw, CANCEL, "post", 200)
    assert cancelled["cancellationId"] and cancelled["requestId"] == "cancel-req-1"


def test_async_card_answers_undefined(connector):
    status, raw, _ = post_twice(connector, "/payments", create_body("async-1", card="4222222222222224"))
    assert status == 200
    payment = validate(raw, CREATE, "post", 200)
    assert payment["status"] == "undefined"
    assert payment["tid"]


def test_partial_settlements_and_refunds(connector):
    status, raw, _ = connector.post("/payments", create_body("partial-1", value=100))
    assert json.loads(raw)["status"] == "approved"
    ok = [("settlements", "s1", 60), ("settlements", "s2", 40), ("refunds", "r1", 30), ("refunds", "r2", 70)]
    for route, request_id, value in ok:
        status, raw, _ = connector.post(f"/payments/partial-1/{route}",
                                        {"paymentId": "partial-1", "requestId": request_id, "value": value})
        assert status == 200, raw
        assert json.loads(raw)["value"] == value
    for route, request_id in [("settlements", "s3"), ("refunds", "r3")]:
        status, raw, _ = connector.post(f"/payments/partial-1/{route}",
                                        {"paymentId": "partial-1", "requestId": request_id, "value": 0.01})
        assert status == 500, raw  # the operation's refusal: its documented 500, its own shape
        refused = validate(raw, f"/payments/{{paymentId}}/{route}", "post", 500)
        assert refused["code"] and refused["value"] == 0
