"""Secure Proxy: card payments whose card data the connector never sees.
The authorization goes through a local stand-in for the gateway's proxy, which substitutes
the tokens and forwards to the out-of-process stub; operations go to the stub directly; the
proxy's failures leave the payment undefined and reconciled under the same key, never charged
twice; the connector's data, logs and answers hold neither card numbers nor tokens."""
import json
import time

import pytest

from conftest import APP_KEY, APP_TOKEN, create_body, ledger
from schema import validate
from secure_proxy import FakeSecureProxy

ACQUIRER_KEY = "proxy-test-acquirer-key"


@pytest.fixture
def proxied(connector_factory, stubs):
    """(connector, stub, proxy): the merchant's acquirer is the stub, reached for
    authorizations only through the proxy; the merchant must use the proxy."""
    stub = stubs("--pending-delay-ms", "600000", "--api-key", ACQUIRER_KEY)
    proxy = FakeSecureProxy([stub.url + "/"])
    merchants = [{"name": "shop", "appKey": APP_KEY, "appToken": APP_TOKEN, "acquirer": stub.url,
                  "acquirerApiKey": ACQUIRER_KEY, "requireSecureProxy": True}]
    c = connector_factory(acquirer=stub.url, merchants=merchants,
                          extra_args=["--callback-allow-private", "--secure-proxy-allowed-hosts", "127.0.0.1",
                                      "--acquirer-timeout-ms", "1000"])
    yield c, stub, proxy
    proxy.close()


def proxied_body(proxy, payment_id, number="4444333322221111", **extra):
    body = create_body(payment_id, secureProxyUrl=proxy.url(), **extra)
    body["card"] = proxy.tokenize({"number": number, "holder": "John Doe", "csc": "123"})
    return body


def create(c, body):
    status, raw, _ = c.post("/payments", body)
    assert status == 200, raw
    return validate(raw, "/payments", "post", status), raw


def test_authorization_goes_through_the_proxy_with_tokens_and_operations_go_direct(proxied):
    c, stub, proxy = proxied
    approved, raw = create(c, proxied_body(proxy, "sp-ok"))
    denied, _ = create(c, proxied_body(proxy, "sp-no", number="4444333322221112"))
    # The stub decided on the real numbers: a token left in place would be "invalid card number".
    assert approved["status"] == "approved"
    assert denied["status"] == "denied" and denied["code"] != "14"
    assert len(proxy.received) == 2 and len(proxy.forwarded) == 2
    for sent in proxy.received:
        assert sent["headers"]["x-provider-forward-to"] == stub.url + "/authorize"
        assert sent["headers"]["x-provider-forward-authorization"] == "Bearer " + ACQUIRER_KEY
        assert "authorization" not in sent["headers"]  # the acquirer's key only as a forwarded header
        assert b"#vtex#token#" in sent["body"] and b"4444333322221" not in sent["body"]
    assert all(f["headers"]["authorization"] == "Bearer " + ACQUIRER_KEY for f in proxy.forwarded)

    # A replay is the same answer, and nothing more goes to the proxy or the acquirer.
    again_raw = c.post("/payments", proxied_body(proxy, "sp-ok"))[1]
    assert again_raw == raw and len(proxy.received) == 2

    # Operations carry no card data: straight to the acquirer (the proxy sees nothing more).
    settle = {"paymentId": "sp-ok", "requestId": "sp-ok-settle", "value": 31.9}
    status, body, _ = c.post("/payments/sp-ok/settlements", settle)
    assert status == 200 and json.loads(body)["settleId"], body
    refund = {"paymentId": "sp-ok", "requestId": "sp-ok-refund", "value": 31.9}
    assert c.post("/payments/sp-ok/refunds", refund)[0] == 200
    assert len(proxy.received) == 2
    book = ledger(stub)
    assert book["authorizations"]["sp-ok"]["charges"] == 1 and book["authorizations"]["sp-ok"]["calls"] == 1
    assert book["authorizations"]["sp-no"]["charges"] == 0

    # Neither the card number nor any token is kept or logged by the connector.
    c.process.terminate()
    secrets = [b"4444333322221111", b"4444333322221112", b"#vtex#token#"]
    for path in c.dir.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            assert not [s for s in secrets if s in data], path


def test_merchant_that_requires_the_proxy_refuses_raw_card_numbers(proxied):
    c, stub, proxy = proxied
    status, raw, _ = c.post("/payments", create_body("sp-raw"))
    assert status == 400 and validate(raw, "/payments", "post", 400)["code"] == "secure-proxy-required", raw
    # Tokens without a proxy to resolve them, or with a proxy the allowlist does not name.
    body = proxied_body(proxy, "sp-noproxy")
    del body["secureProxyUrl"]
    assert c.post("/payments", body)[0] == 400
    body = proxied_body(proxy, "sp-elsewhere")
    body["secureProxyUrl"] = "http://proxy.attacker.example/p"
    assert c.post("/payments", body)[0] == 400
    assert proxy.received == [] and ledger(stub)["authorizations"] == {}


@pytest.mark.parametrize("failure", ["403", "500", "hang", "forward-then-500"])
def test_proxy_failures_leave_the_payment_undefined_and_charge_once(proxied, failure):
    c, stub, proxy = proxied
    pid = "sp-fail-" + failure
    proxy.mode = failure
    first, _ = create(c, proxied_body(proxy, pid))
    assert first["status"] == "undefined"
    proxy.mode = "forward"
    # The gateway retries; the connector settles what happened under the same key first.
    deadline = time.time() + 30
    while True:
        answer, _ = create(c, proxied_body(proxy, pid))
        if answer["status"] != "undefined" or time.time() > deadline:
            break
        time.sleep(0.3)
    assert answer["status"] == "approved", answer
    entry = ledger(stub)["authorizations"][pid]
    assert entry["charges"] == 1 and entry["calls"] == 1, entry
