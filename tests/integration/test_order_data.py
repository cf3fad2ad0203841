"""Order data, split payments, the manifest from configuration and card 3-D Secure: what the
gateway sends about the order reaches the acquirer (the stub's ledger shows the terms and items
it received) and is kept nowhere by the connector; recipients split a payment where the
method's split mode says so (their amounts checked, passed to the acquirer, stored with the
operation) and are information elsewhere; GET /manifest says what the deployment's file says,
and Create Payment answers carry its timers; a challenged card answers undefined with the
challenge page and completes by the acquirer's webhook."""
import json

import pytest

from conftest import ACQUIRER_SECRET, CALLBACK_ARGS, create_body, free_port, ledger, request
from receiver import callback_body
from schema import validate

BUYER = {"id": "b-1", "firstName": "Ana", "lastName": "Silva", "document": "52998224725", "documentType": "CPF",
         "email": "ana.silva.order-test@example.com", "phone": "+5521999990000", "isCorporate": False}
ADDRESS = {"country": "BRA", "street": "Rua Um", "number": "10", "complement": None, "neighborhood": "Centro",
           "postalCode": "20000000", "city": "Rio de Janeiro", "state": "RJ"}


def order_body(pid, value=100, **extra):
    order = dict(installments=3, installmentsInterestRate=1.99, installmentsValue=34.66, ipAddress="203.0.113.7",
                 deviceFingerprint="fp-123", merchantSettings=[{"name": "softDescriptor", "value": "SHOP"}],
                 miniCart={"shippingValue": 10, "taxValue": 0, "buyer": BUYER, "shippingAddress": ADDRESS,
                           "billingAddress": ADDRESS,
                           "items": [{"id": "sku-1", "name": "Shirt", "price": 45, "quantity": 2, "discount": 0},
                                     {"id": "sku-2", "name": "Cap", "price": 0, "quantity": 1, "discount": 0}]})
    order.update(extra)
    return create_body(pid, value=value, **order)


def test_order_data_reaches_the_acquirer_and_is_kept_nowhere(connector_factory, stubs):
    stub = stubs()
    c = connector_factory(acquirer=stub.url)
    status, raw, _ = c.post("/payments", order_body("od-1"))
    assert status == 200 and validate(raw, "/payments", "post", 200)["status"] == "approved", raw
    entry = ledger(stub)["authorizations"]["od-1"]
    assert entry["installments"] == 3 and entry["interestRate"] == "1.99" and entry["items"] == 2

    # Refused with the field named, nothing stored, nothing sent.
    for field, bad in [("ipAddress", "203.0.113.7\r\nX: y"), ("installmentsInterestRate", -1)]:
        status, raw, _ = c.post("/payments", order_body("od-bad", **{field: bad}))
        assert status == 400 and field in json.loads(raw)["message"], raw
    cart = order_body("od-bad")["miniCart"]
    for broken in ({**cart, "items": [{"id": "x", "name": "n", "price": 1, "quantity": 0, "discount": 0}]},
                   {**cart, "shippingAddress": {**ADDRESS, "country": "BR"}},
                   {**cart, "buyer": {**BUYER, "email": "x" * 300}}):
        status, raw, _ = c.post("/payments", order_body("od-bad", miniCart=broken))
        assert status == 400 and "miniCart" in json.loads(raw)["message"], raw
    assert "od-bad" not in ledger(stub)["authorizations"]

    c.process.terminate()
    personal = [BUYER["email"].encode(), BUYER["document"].encode(), b"Rua Um", b"203.0.113.7"]
    for path in c.dir.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            assert not [p for p in personal if p in data], path


@pytest.fixture
def split_connector(connector_factory, stubs, tmp_path):
    manifest = {
        "paymentMethods": [
            {"name": "Visa", "allowsSplit": "onAuthorize", "delayToAutoSettle": 3600,
             "delayToAutoSettleAfterAntifraud": 600, "delayToCancel": 7200},
            {"name": "Mastercard", "allowsSplit": "onCapture"},
            {"name": "Elo"},
        ],
        "customFields": [{"name": "Merchant ID", "type": "text"}, {"name": "Secret", "type": "password"},
                         {"name": "Mode", "type": "select", "options": [{"text": "Live", "value": "live"}]}],
        "autoSettleDelay": {"minimum": "0", "maximum": "720"},
    }
    path = tmp_path / "manifest.json"
    path.write_text(json.dumps(manifest))
    stub = stubs()
    return connector_factory(acquirer=stub.url, extra_args=["--manifest", str(path)]), stub


def recipients(*amounts):
    roles = ["marketplace"] + ["seller"] * (len(amounts) - 1)
    return [{"id": f"r{i}", "name": f"R{i}", "documentType": "CNPJ", "document": "1", "role": role,
             "amount": a, "chargeProcessingFee": i == 0, "chargebackLiable": i == 0}
            for i, (role, a) in enumerate(zip(roles, amounts))]


def test_the_manifest_and_the_answers_follow_the_configuration(split_connector):
    c, _ = split_connector
    status, raw, _ = request(c.port, "GET", "/manifest", headers={})
    doc = validate(raw, "/manifest", "get", 200)
    assert [(m["name"], m["allowsSplit"]) for m in doc["paymentMethods"]] == [
        ("Visa", "onAuthorize"), ("Mastercard", "onCapture"), ("Elo", "disabled")]
    assert [f["type"] for f in doc["customFields"]] == ["text", "password", "select"]
    assert doc["autoSettleDelay"] == {"minimum": "0", "maximum": "720"}
    status, raw, _ = c.post("/payments", create_body("mf-1"))
    answer = validate(raw, "/payments", "post", 200)
    assert (answer["delayToAutoSettle"], answer["delayToAutoSettleAfterAntifraud"], answer["delayToCancel"]) == \
        (3600, 600, 7200)
    answer = json.loads(c.post("/payments", create_body("mf-2", paymentMethod="Elo"))[1])
    assert (answer["delayToAutoSettle"], answer["delayToCancel"]) == (21600, 21600)
    status, raw, _ = c.post("/payments", create_body("mf-3", paymentMethod="Diners"))  # not offered here
    assert status == 400 and json.loads(raw)["code"] == "unsupported-payment-method"


def test_manifest_files_that_break_the_rules_stop_the_start(connector_factory, tmp_path):
    for bad in [{"paymentMethods": [{"name": "NoSuchMethod"}]},
                {"paymentMethods": [{"name": "Visa", "allowsSplit": "sometimes"}]},
                {"paymentMethods": [{"name": "Visa", "delayToAutoSettle": 604801}]},
                {"paymentMethods": [{"name": "Pix", "delayToCancel": 300}]},
                {"paymentMethods": [{"name": "Visa"}, {"name": "Visa"}]},
                {"paymentMethods": [{"name": "Visa"}], "customFields": [{"name": "M", "type": "select"}]},
                {"paymentMethods": [{"name": "Visa"}], "autoSettleDelay": {"minimum": "10", "maximum": "2"}}]:
        path = tmp_path / "bad-manifest.json"
        path.write_text(json.dumps(bad))
        with pytest.raises(RuntimeError, match="manifest"):
            connector_factory(extra_args=["--manifest", str(path)])


def test_split_payments_follow_the_methods_split_mode(split_connector):
    c, stub = split_connector
    # On authorization (Visa): amounts must add up to the value; they reach the acquirer.
    status, raw, _ = c.post("/payments", create_body("sp-a", value=100, recipients=recipients(10, 90)))
    assert status == 200 and json.loads(raw)["status"] == "approved", raw
    assert [r["amount"] for r in ledger(stub)["authorizations"]["sp-a"]["recipients"]] == [10, 90]
    status, raw, _ = c.post("/payments", create_body("sp-b", value=100, recipients=recipients(10, 80)))
    assert status == 400 and "recipients" in validate(raw, "/payments", "post", 400)["message"]
    # A method not split on authorization takes a marketplace order's recipients as information:
    # accepted, and no split reaches the acquirer (even amounts that do not add up).
    status, raw, _ = c.post("/payments", create_body("sp-c", paymentMethod="Mastercard", value=100,
                                                     recipients=recipients(100)))
    assert status == 200 and json.loads(raw)["status"] == "approved", raw
    assert ledger(stub)["authorizations"]["sp-c"]["recipients"] == []
    status, raw, _ = c.post("/payments", create_body("sp-e", paymentMethod="Elo", value=100,
                                                     recipients=recipients(10, 20)))
    assert status == 200 and ledger(stub)["authorizations"]["sp-e"]["recipients"] == [], raw
    # On capture (Mastercard): with the settlement, stored with it; a repeat is the same answer.
    assert c.post("/payments", create_body("sp-d", paymentMethod="Mastercard", value=100))[0] == 200
    settle = {"paymentId": "sp-d", "requestId": "sp-d-s", "value": 100, "recipients": recipients(30, 70)}
    first = c.post("/payments/sp-d/settlements", settle)
    assert first[0] == 200 and c.post("/payments/sp-d/settlements", settle)[:2] == first[:2]
    (capture,) = ledger(stub)["captures"].values()
    assert [r["amount"] for r in capture["recipients"]] == [30, 70]
    # The same requestId with another split is another operation: refused, nothing moves.
    other = dict(settle, recipients=recipients(50, 50))
    status, raw, _ = c.post("/payments/sp-d/settlements", other)
    assert status == 500 and validate(raw, "/payments/{paymentId}/settlements", "post", 500)["code"] == \
        "request-conflict"
    refund = {"paymentId": "sp-d", "requestId": "sp-d-r", "value": 20, "recipients": recipients(5, 15)}
    assert c.post("/payments/sp-d/refunds", refund)[0] == 200
    # A split that does not add up is refused where the method splits.
    bad = {"paymentId": "sp-d", "requestId": "sp-d-r2", "value": 20, "recipients": recipients(5, 5)}
    status, raw, _ = c.post("/payments/sp-d/refunds", bad)
    assert status == 500 and validate(raw, "/payments/{paymentId}/refunds", "post", 500)["refundId"] is None
    # A settlement of a method split on authorization: its recipients are information only, and
    # a retry without them is the same settlement.
    visa = {"paymentId": "sp-a", "requestId": "sp-a-s", "value": 100, "recipients": recipients(50, 50)}
    first = c.post("/payments/sp-a/settlements", visa)
    assert first[0] == 200, first
    assert c.post("/payments/sp-a/settlements", dict(visa, recipients=[]))[:2] == first[:2]
    assert ledger(stub)["captures"]["sp-a/sp-a-s"]["recipients"] == []
    assert len(ledger(stub)["captures"]) == 2 and len(ledger(stub)["refunds"]) == 1


def test_a_challenged_card_answers_undefined_with_the_challenge_and_completes_by_webhook(connector_factory, stubs,
                                                                                      receiver):
    port = free_port()  # the connector's, where the stub reports the challenges' outcomes
    stub = stubs("--pending-delay-ms", "300", "--webhook-url", f"http://127.0.0.1:{port}/webhooks/acquirer",
                 "--webhook-secret", ACQUIRER_SECRET)
    c = connector_factory(acquirer=stub.url, listen=f"127.0.0.1:{port}",
                          extra_args=CALLBACK_ARGS + ["--acquirer-webhook-secret", ACQUIRER_SECRET])
    r = receiver()
    for pid, card in [("3ds-ok", "4000000000003220"), ("3ds-no", "4000000000003238")]:
        status, raw, _ = c.post("/payments", create_body(pid, card=card, callbackUrl=r.url()))
        answer = validate(raw, "/payments", "post", 200)
        assert answer["status"] == "undefined"
        assert "/3ds/" in answer["paymentUrl"] and answer["redirectUrl"] == answer["paymentUrl"]
    assert r.wait_for(lambda rv: len(rv.processed) >= 2, timeout=30)
    outcomes = {callback_body(q)["paymentId"]: callback_body(q)["status"] for q in r.requests}
    assert outcomes == {"3ds-ok": "approved", "3ds-no": "denied"}
    status, raw, _ = c.post("/payments", create_body("3ds-ok", card="4000000000003220", callbackUrl=r.url()))
    final = validate(raw, "/payments", "post", 200)
    assert final["status"] == "approved" and "paymentUrl" not in final
    book = ledger(stub)["authorizations"]
    assert book["3ds-ok"]["charges"] == 1 and book["3ds-no"]["charges"] == 0
    assert book["3ds-ok"]["calls"] == 1 and book["3ds-no"]["calls"] == 1
