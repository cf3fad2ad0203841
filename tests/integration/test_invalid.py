"""Bad input and illegal operations: a clear PPP error, and nothing changes (G3)."""
import json

from conftest import APP_KEY, APP_TOKEN, AUTH, create_body, ledger, request
from schema import validate


def error_of(result, status=400):
    code, raw, _ = result
    assert code == status, raw
    doc = validate(raw, "/payments", "post", 400)
    assert doc["status"] == "error" and doc["code"] and doc["message"]
    return doc


def refused_operation(result, route):
    """A refused cancel, settle or refund: the operation's own answer with its id null and a
    500, the statuses the protocol documents for these routes being 200, 500 and 501."""
    code, raw, _ = result
    assert code == 500, raw
    doc = validate(raw, f"/payments/{{paymentId}}/{route}", "post", 500)
    id_field = {"settlements": "settleId", "refunds": "refundId", "cancellations": "cancellationId"}[route]
    assert doc[id_field] is None and doc["code"] and doc["message"]
    return doc


def test_illegal_operations_change_nothing(connector_factory, stub_server):
    c = connector_factory(acquirer=stub_server.url)
    denied = c.post("/payments", create_body("inv-denied", card="4444333322221112"))
    approved = c.post("/payments", create_body("inv-ok", value=20))
    cancelled = c.post("/payments", create_body("inv-cancel"))
    assert c.post("/payments/inv-cancel/cancellations", {"paymentId": "inv-cancel", "requestId": "c1"})[0] == 200
    assert c.post("/payments/inv-ok/settlements", {"paymentId": "inv-ok", "requestId": "s1", "value": 10})[0] == 200
    before = ledger(stub_server)

    refused_operation(c.post("/payments/inv-denied/settlements",
                             {"paymentId": "inv-denied", "requestId": "x1", "value": 1}), "settlements")
    refused_operation(c.post("/payments/inv-cancel/settlements",
                             {"paymentId": "inv-cancel", "requestId": "x2", "value": 1}), "settlements")
    refused_operation(c.post("/payments/inv-ok/refunds", {"paymentId": "inv-ok", "requestId": "x3", "value": 10.01}),
                      "refunds")
    refused_operation(c.post("/payments/inv-ok/settlements",
                             {"paymentId": "inv-ok", "requestId": "x4", "value": 10.01}), "settlements")
    # A settled payment is refunded, not cancelled: the Cancel answer's 500, nothing at the acquirer.
    refused = refused_operation(c.post("/payments/inv-ok/cancellations", {"paymentId": "inv-ok", "requestId": "x5"}),
                                "cancellations")
    assert refused["code"] == "already-settled"
    refused_operation(c.post("/payments/nobody/settlements", {"paymentId": "nobody", "requestId": "x6", "value": 1}),
                      "settlements")
    conflict = error_of(c.post("/payments", create_body("inv-ok", value=21)))
    assert "inv-ok" in conflict["message"]
    assert refused_operation(c.post("/payments/inv-ok/settlements", {"paymentId": "inv-ok", "requestId": "s1", "value": 9}),
                             "settlements")["code"] == "request-conflict"

    assert ledger(stub_server) == before, "a refused request reached the acquirer"
    assert c.post("/payments", create_body("inv-denied", card="4444333322221112"))[1] == denied[1]
    assert c.post("/payments", create_body("inv-ok", value=20))[1] == approved[1]
    assert c.post("/payments", create_body("inv-cancel"))[1] == cancelled[1]
    # What the refused requests asked for is still possible afterwards: they left nothing behind.
    assert c.post("/payments/inv-ok/refunds", {"paymentId": "inv-ok", "requestId": "x3", "value": 10})[0] == 200


def test_malformed_requests_leave_nothing_behind(connector):
    bad_bodies = [b"", b"{", b"[]", b'{"paymentId": "bad-1"', b"not json",
                  json.dumps(create_body("bad-1", currency="brl")).encode(),
                  json.dumps(create_body("bad-1", value="lots")).encode(),
                  json.dumps(create_body("bad-1", value=1.001)).encode(),
                  json.dumps(create_body("bad-1", paymentMethod="Bitcoin")).encode(),
                  json.dumps(create_body("bad-1", card={"number": 4444333322221111})).encode()]
    for body in bad_bodies:
        error_of(request(connector.port, "POST", "/payments", body))
    missing = create_body("bad-1")
    del missing["callbackUrl"]
    assert "callbackUrl" in error_of(connector.post("/payments", missing))["message"]
    # The id was never taken: a valid request for it succeeds now.
    status, raw, _ = connector.post("/payments", create_body("bad-1"))
    assert status == 200 and json.loads(raw)["status"] == "approved"


def test_credentials(connector):
    body = create_body("auth-check")
    assert request(connector.port, "POST", "/payments", body, headers={})[0] == 401
    wrong = dict(AUTH, **{"X-VTEX-API-AppToken": "wrong"})
    assert request(connector.port, "POST", "/payments", body, headers=wrong)[0] == 401
    provider = {"x-provider-api-appkey": APP_KEY, "X-PROVIDER-API-APPTOKEN": APP_TOKEN}
    assert request(connector.port, "POST", "/payments", body, headers=provider)[0] == 200


def test_http_errors(connector):
    status, raw, headers = request(connector.port, "GET", "/nowhere")
    assert status == 404 and headers["content-type"] == "application/problem+json"
    status, _, headers = request(connector.port, "GET", "/payments")
    assert status == 405 and headers["allow"] == "POST"
    huge = json.dumps(create_body("huge", filler="x" * (300 * 1024))).encode()
    assert request(connector.port, "POST", "/payments", huge)[0] == 413
