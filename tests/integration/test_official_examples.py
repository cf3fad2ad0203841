"""The official PPP document's own example requests, sent as they stand: what the gateway
really sends must be accepted on the default configuration. Only the ids, the callback URL
and a masked card number (made whole and valid, same BIN and last four) are changed. Every
answer must be the documented 200 of its route, valid against the document's schema."""
import copy
import json

import conftest
from conftest import ledger, request
from schema import validate

SPEC = json.load(open(conftest.SPEC))
CREATE_EXAMPLES = SPEC["paths"]["/payments"]["post"]["requestBody"]["content"]["application/json"]["examples"]
SCHEMAS = SPEC["components"]["schemas"]
CALLBACK = "https://gateway.example/api/pvt/payment-provider/transactions/T/payments/P/callback"


def luhn_valid(number):
    total = 0
    for i, digit in enumerate(reversed(number)):
        d = int(digit) * (2 if i % 2 else 1)
        total += d - 9 if d > 9 else d
    return total % 10 == 0


def whole_card_number(number):
    """A masked number ("364901****2661") made whole: the first Luhn-valid filling."""
    hidden = number.count("*")
    for k in range(10 ** hidden):
        candidate = number.replace("*" * hidden, str(k).zfill(hidden))
        if luhn_valid(candidate):
            return candidate
    raise AssertionError(number)


def example(name, payment_id):
    body = copy.deepcopy(CREATE_EXAMPLES[name]["value"])
    body["paymentId"] = payment_id
    body["callbackUrl"] = CALLBACK
    card = body.get("card") or {}
    if isinstance(card.get("number"), str) and "*" in card["number"]:
        card["number"] = whole_card_number(card["number"])
    if isinstance(card.get("number"), str) and card["number"].isdigit():
        conftest.TEST_CARDS.append(card["number"])  # never at rest either (the suite's final grep)
    return body


def declared_methods(connector):
    status, raw, _ = request(connector.port, "GET", "/manifest", headers={})
    return {m["name"] for m in validate(raw, "/manifest", "get", 200)["paymentMethods"]}


def test_every_create_payment_example_of_a_declared_method_is_accepted(connector_factory, stubs):
    stub = stubs()
    c = connector_factory(acquirer=stub.url)  # the default manifest: split disabled everywhere
    declared = declared_methods(c)
    sent = 0
    for i, name in enumerate(CREATE_EXAMPLES):
        body = example(name, f"official-{i}")
        if body["paymentMethod"] not in declared:
            # The document's made-up methods (CustomPay, FakePay, RedirectPay) name a provider's
            # own payment apps; this connector declares none of them.
            assert body["paymentMethod"] in {"CustomPay", "FakePay", "RedirectPay"}, name
            continue
        status, raw, _ = c.post("/payments", body)
        assert status == 200, (name, raw)
        answer = validate(raw, "/payments", "post", 200)
        assert answer["status"] in ("approved", "denied", "undefined"), (name, answer)
        if body["paymentMethod"] in ("Visa", "Diners"):
            assert answer["status"] == "approved", (name, answer)  # a valid card at the stub
        assert c.post("/payments", body)[1] == raw, f"{name}: a retry must get the same bytes"
        sent += 1
    assert sent >= 7, "the default manifest declares the document's card, Pix and boleto methods"
    # A marketplace order's recipients are information where the method does not split: the
    # acquirer got no split for the examples that carry one.
    book = ledger(stub)["authorizations"]
    for i, name in enumerate(CREATE_EXAMPLES):
        if CREATE_EXAMPLES[name]["value"].get("recipients") and f"official-{i}" in book:
            assert not book[f"official-{i}"].get("recipients"), name


def operation_example(schema, payment_id, request_id):
    body = copy.deepcopy(SCHEMAS[schema]["example"])
    body["paymentId"], body["requestId"] = payment_id, request_id
    return body


def cancellation_example(payment_id, request_id):
    """The cancellation schema has no whole example, only one per property: assembled from them."""
    props = SCHEMAS["CancelPaymentRequest"]["properties"]
    body = {name: prop["example"] for name, prop in props.items() if "example" in prop}
    body["paymentId"], body["requestId"] = payment_id, request_id
    return body


def test_the_settlement_refund_and_cancellation_examples_are_accepted(connector_factory, stubs):
    stub = stubs()
    c = connector_factory(acquirer=stub.url)
    paid = example("Success Undefined", "official-op-1")  # a Visa payment of 4307.23
    assert json.loads(c.post("/payments", paid)[1])["status"] == "approved"

    settle = operation_example("SettlePayment", "official-op-1", "official-settle-1")
    status, raw, _ = c.post("/payments/official-op-1/settlements", settle)
    assert status == 200, raw
    assert validate(raw, "/payments/{paymentId}/settlements", "post", 200)["settleId"]
    refund = operation_example("RefundPayment", "official-op-1", "official-refund-1")
    status, raw, _ = c.post("/payments/official-op-1/refunds", refund)
    assert status == 200, raw
    assert validate(raw, "/payments/{paymentId}/refunds", "post", 200)["refundId"]

    voided = example("Success Undefined", "official-op-2")
    assert json.loads(c.post("/payments", voided)[1])["status"] == "approved"
    cancel = cancellation_example("official-op-2", "official-cancel-1")
    status, raw, _ = c.post("/payments/official-op-2/cancellations", cancel)
    assert status == 200, raw
    assert validate(raw, "/payments/{paymentId}/cancellations", "post", 200)["cancellationId"]

    # The examples' amounts moved, their recipients did not (no split where the method has none).
    book = ledger(stub)
    capture = book["captures"]["official-op-1/official-settle-1"]
    assert capture["amount"] == 45 and not capture.get("recipients"), capture
    (refunded,) = [r for k, r in book["refunds"].items() if k.startswith("official-op-1/")]
    assert refunded["amount"] == 20 and not refunded.get("recipients"), refunded
