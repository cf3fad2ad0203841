"""Refunds and cancellations as the gateway expects them: a refund
the acquirer has accepted but not completed answers 500 "not yet" in the refund's shape until
the acquirer says it is done, then the stored 200; an operation the acquirer cannot do by API,
or that the merchant's configuration says is done by hand, answers 501 cancel-manually /
refund-manually. Every answer is validated against the route's documented schema, every repeat
is byte-identical, and the stub's ledger shows what moved. Settlements may exceed the amount
up to the maxValue the acquirer granted."""
import json
import time

from conftest import APP_KEY, APP_TOKEN, create_body, ledger
from schema import validate

REFUND, CANCEL = "/payments/{paymentId}/refunds", "/payments/{paymentId}/cancellations"


def approved_and_settled(c, pid, value=50):
    status, raw, _ = c.post("/payments", create_body(pid, value=value))
    assert status == 200 and validate(raw, "/payments", "post", 200)["status"] == "approved"
    status, raw, _ = c.post(f"/payments/{pid}/settlements", {"paymentId": pid, "requestId": pid + "-s", "value": value})
    assert status == 200, raw


def post(c, pid, route, body):
    status, raw, _ = c.post(f"/payments/{pid}/{route}", dict(body, paymentId=pid))
    return status, raw


def test_a_pending_refund_answers_not_yet_until_the_acquirer_completes_it(connector_factory, stubs):
    stub = stubs("--refund-delay-ms", "1500")
    c = connector_factory(acquirer=stub.url)
    approved_and_settled(c, "rf-1")
    refund = {"requestId": "rf-1-r", "value": 20}
    started = time.time()
    status, raw = post(c, "rf-1", "refunds", refund)
    assert status == 500, raw
    pending = validate(raw, REFUND, "post", 500)
    assert pending["code"] == "refund-pending" and pending["refundId"] is None and pending["value"] == 0
    # The gateway keeps retrying: "not yet", the same bytes, while the acquirer holds it.
    again = post(c, "rf-1", "refunds", refund)
    if time.time() - started < 1.2:
        assert again == (status, raw)
    while time.time() - started < 1.6:
        time.sleep(0.1)
    status, done_raw = post(c, "rf-1", "refunds", refund)
    assert status == 200, done_raw
    done = validate(done_raw, REFUND, "post", 200)
    assert done["refundId"] and done["value"] == 20
    assert post(c, "rf-1", "refunds", refund) == (200, done_raw)  # stored: no more acquirer calls
    book = ledger(stub)["refunds"]
    assert len(book) == 1
    (entry,) = book.values()
    assert entry["succeeded"] and not entry["pending"] and entry["amount"] == 20
    calls = entry["calls"]
    assert post(c, "rf-1", "refunds", refund) == (200, done_raw)
    assert next(iter(ledger(stub)["refunds"].values()))["calls"] == calls
    # The refund counts once it is done: what is left can be refunded, no more.
    assert post(c, "rf-1", "refunds", {"requestId": "rf-1-r2", "value": 30})[0] in (200, 500)
    status, raw = post(c, "rf-1", "refunds", {"requestId": "rf-1-r3", "value": 0.01})
    assert status == 500 and validate(raw, REFUND, "post", 500)["refundId"] is None


def test_an_acquirer_that_cannot_void_or_refund_answers_501(connector_factory, stubs):
    stub = stubs("--manual", "cancel", "--manual", "refund")
    c = connector_factory(acquirer=stub.url)
    status, raw, _ = c.post("/payments", create_body("mn-1", value=50))
    assert status == 200
    status, raw = post(c, "mn-1", "cancellations", {"requestId": "mn-1-c"})
    assert status == 501, raw
    manual = validate(raw, CANCEL, "post", 501)
    assert manual["code"] == "cancel-manually" and manual["cancellationId"] is None
    assert post(c, "mn-1", "cancellations", {"requestId": "mn-1-c"}) == (status, raw)
    # Nothing was voided: the payment can still be settled; its refund is manual too.
    assert post(c, "mn-1", "settlements", {"requestId": "mn-1-s", "value": 50})[0] == 200
    status, raw = post(c, "mn-1", "refunds", {"requestId": "mn-1-r", "value": 50})
    assert status == 501 and validate(raw, REFUND, "post", 501)["code"] == "refund-manually"
    assert post(c, "mn-1", "refunds", {"requestId": "mn-1-r", "value": 50}) == (status, raw)
    book = ledger(stub)
    assert book["authorizations"]["mn-1"]["charges"] == 1
    assert all(not e["succeeded"] and e["manual"] for e in list(book["cancellations"].values())
               + list(book["refunds"].values()))


def test_operations_configured_as_manual_never_reach_the_acquirer(connector_factory, stubs):
    stub = stubs()
    merchants = [{"name": "shop", "appKey": APP_KEY, "appToken": APP_TOKEN, "manualOperations": ["refund", "cancel"]}]
    c = connector_factory(acquirer=stub.url, merchants=merchants)
    approved_and_settled(c, "mc-1")
    status, raw = post(c, "mc-1", "refunds", {"requestId": "mc-1-r", "value": 10})
    assert status == 501 and validate(raw, REFUND, "post", 501)["code"] == "refund-manually"
    assert post(c, "mc-1", "refunds", {"requestId": "mc-1-r", "value": 10}) == (status, raw)
    status, raw, _ = c.post("/payments", create_body("mc-2"))
    status, raw = post(c, "mc-2", "cancellations", {"requestId": "mc-2-c"})
    assert status == 501 and validate(raw, CANCEL, "post", 501)["code"] == "cancel-manually"
    # A cancel with nothing to void is still answered as done (a denied payment holds nothing).
    c.post("/payments", create_body("mc-3", card="4444333322221112"))
    status, raw = post(c, "mc-3", "cancellations", {"requestId": "mc-3-c"})
    assert status == 200 and validate(raw, CANCEL, "post", 200)["cancellationId"]
    book = ledger(stub)
    assert book["refunds"] == {} and book["cancellations"] == {}


def test_settlements_may_exceed_the_amount_up_to_the_acquirers_max_value(connector_factory, stubs):
    stub = stubs("--over-capture-percent", "10")
    c = connector_factory(acquirer=stub.url)
    status, raw, _ = c.post("/payments", create_body("mv-1", value=100))
    answer = validate(raw, "/payments", "post", 200)
    assert answer["status"] == "approved" and answer["maxValue"] == 110
    assert c.post("/payments", create_body("mv-1", value=100))[1] == raw  # the same bytes again
    status, raw = post(c, "mv-1", "settlements", {"requestId": "mv-1-s1", "value": 105})
    assert status == 200 and validate(raw, "/payments/{paymentId}/settlements", "post", 200)["value"] == 105
    status, raw = post(c, "mv-1", "settlements", {"requestId": "mv-1-s2", "value": 5.01})
    assert status == 500 and validate(raw, "/payments/{paymentId}/settlements", "post", 500)["settleId"] is None
    assert post(c, "mv-1", "settlements", {"requestId": "mv-1-s3", "value": 5})[0] == 200
    assert sorted(e["amount"] for e in ledger(stub)["captures"].values()) == [5, 105]
    # Only an approval carries a maxValue.
    status, raw, _ = c.post("/payments", create_body("mv-2", value=100, card="4444333322221112"))
    assert json.loads(raw)["status"] == "denied" and "maxValue" not in json.loads(raw)


def test_a_method_may_be_refunded_by_hand(connector_factory, stubs, tmp_path):
    stub = stubs()
    manifest = tmp_path / "manifest.json"
    manifest.write_text(json.dumps({"paymentMethods": [{"name": "Visa"},
                                                       {"name": "Elo", "manualOperations": ["refund"]}]}))
    c = connector_factory(acquirer=stub.url, extra_args=["--manifest", str(manifest)])
    approved_and_settled(c, "mm-visa")
    status, raw, _ = c.post("/payments", create_body("mm-elo", value=50, paymentMethod="Elo"))
    assert status == 200
    assert post(c, "mm-elo", "settlements", {"requestId": "mm-elo-s", "value": 50})[0] == 200
    status, raw = post(c, "mm-elo", "refunds", {"requestId": "mm-elo-r", "value": 10})
    assert status == 501 and validate(raw, REFUND, "post", 501)["code"] == "refund-manually"
    assert post(c, "mm-visa", "refunds", {"requestId": "mm-visa-r", "value": 10})[0] == 200
    assert [e["amount"] for e in ledger(stub)["refunds"].values()] == [10]
