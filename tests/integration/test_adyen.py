"""Cards through Adyen's Checkout API, end to end: the gateway's Create Payment becomes one
payment at the (fake) Adyen under an Idempotency-Key, settlements and refunds become captures
and refunds answered "received" and reported by signed notifications, a pending payment is
decided by its AUTHORISATION notification. Every request the connector sends goes through
Stoplight Prism, validating it and the fake's answer against Adyen's published Checkout
document; every notification the fake sends is checked against the published Webhooks
document and signed as an independent signer (adyen.py) computes it. Crashes, overlaps and
hostile notifications must not change what the fake's ledger shows: one authorisation per
paymentId, one modification per requestId."""
import hashlib
import json
import subprocess

import pytest

from adyen import (ACCOUNT, CHECKOUT, CHECKOUT_SHA256, DATA, WEBHOOKS, WEBHOOKS_SHA256, adyen_acquirer, adyen_merchant,
                   check_notifications, ledger, notification, notify_to, payments_of, sign, start_fake,
                   webhook_validator)
from conftest import (BIN, CALLBACK_ARGS, audit_trail, concurrently, create_body, logged_port, request,
                      sent_before_a_kill)
from pix import Prism, wait_for
from receiver import callback_body
from schema import validate
from secure_proxy import FakeSecureProxy


class AdyenPrism(Prism):
    """Prism in front of the fake, on Adyen's Checkout document as published (no erratum)."""

    def __init__(self, base_dir, name, upstream):
        assert hashlib.sha256(CHECKOUT.read_bytes()).hexdigest() == CHECKOUT_SHA256
        super().__init__(base_dir, name, upstream, spec=CHECKOUT)


def webhook_url(c, merchant="shop", acquirer="adyen"):
    return f"http://127.0.0.1:{c.port}/webhooks/adyen/{merchant}/{acquirer}"


@pytest.fixture
def adyen_world(base_dir, tmp_path, request, connector_factory):
    """The fake Adyen behind Prism, a connector whose merchant's cards go through Prism to it,
    the fake's notifications sent to the connector. Yields (fake, connector, start): `start`
    makes another such connector-and-fake pair with extra fake arguments (and the merchants
    file's merchants made for Prism's URL by `merchants_for`)."""
    made = []

    def start(*fake_args, merchants_for=None, acquirer_extra=None, extra_args=()):
        name = f"{request.node.name}-{len(made)}"
        fake = start_fake(base_dir, name, *fake_args)
        prism = AdyenPrism(tmp_path, name, fake.url)
        acquirer = adyen_acquirer(prism.url, **(acquirer_extra or {}))
        merchants = merchants_for(prism.url) if merchants_for else [adyen_merchant(acquirer)]
        c = connector_factory(merchants=merchants,
                              extra_args=[*CALLBACK_ARGS, *extra_args])
        notify_to(fake, webhook_url(c))
        made.append((fake, prism))
        return fake, c

    fake, c = start()
    yield fake, c, start
    for fake, prism in made:
        violations = prism.violations()
        prism.stop()
        check_notifications(fake)
        fake.terminate()
        assert not violations, "requests or answers against Adyen's Checkout document:\n" + "\n".join(violations)


def create(c, body):
    status, raw, _ = c.post("/payments", body)
    assert status == 200, raw
    return json.loads(raw), raw


def post_notification(c, body, merchant="shop", acquirer="adyen", headers=None):
    status, raw, _ = request(c.port, "POST", f"/webhooks/adyen/{merchant}/{acquirer}", body,
                             headers=headers if headers is not None else {"content-type": "application/json"})
    return status, raw.decode(errors="replace")


def test_the_documents_are_the_published_ones():
    assert hashlib.sha256(CHECKOUT.read_bytes()).hexdigest() == CHECKOUT_SHA256
    assert hashlib.sha256(WEBHOOKS.read_bytes()).hexdigest() == WEBHOOKS_SHA256
    provenance = (DATA / "PROVENANCE.md").read_text()
    assert CHECKOUT_SHA256 in provenance and WEBHOOKS_SHA256 in provenance
    assert "MIT" in (DATA / "LICENSE").read_text()


def test_the_webhooks_documents_generic_schema_refuses_its_own_example():
    """The erratum adyen.webhook_validator makes, shown: the published OFFER_CLOSED example,
    signed as every item is, fails the schema the document gives its body, its hmacSignature
    among the reasons; with the signature allowed in additionalData, a signed item passes and
    nothing else is loosened (the example's paymentMethodVariant still fails)."""
    examples = json.loads(WEBHOOKS.read_text())["components"]["examples"]
    example = examples["post-OFFER_CLOSED-offer_closed"]["value"]
    as_published = [e.message for e in webhook_validator("OFFER_CLOSED", erratum=False).iter_errors(example)]
    assert len(as_published) == 1 and "'hmacSignature'" in as_published[0], as_published
    with_erratum = [e.message for e in webhook_validator("OFFER_CLOSED").iter_errors(example)]
    assert len(with_erratum) == 1 and "'hmacSignature'" not in with_erratum[0], with_erratum
    signed_only = json.loads(json.dumps(example))
    del signed_only["notificationItems"][0]["NotificationRequestItem"]["additionalData"]["paymentMethodVariant"]
    assert not list(webhook_validator("OFFER_CLOSED").iter_errors(signed_only))


def test_a_card_payment_from_create_payment_to_settlement_and_a_partial_refund(adyen_world):
    fake, c, _ = adyen_world
    body = create_body("ady-1", value=31.9)
    first, raw = create(c, body)
    assert first["status"] == "approved", raw
    [payment] = payments_of(fake, "ady-1")
    assert payment["amount"] == 3190 and payment["currency"] == "BRL" and payment["merchantAccount"] == ACCOUNT
    assert first["tid"] == payment["pspReference"]
    assert create(c, body)[1] == raw, "a repeated Create Payment: the same answer, byte for byte"

    settle_body = {"paymentId": "ady-1", "requestId": "s-1", "value": 31.9, "transactionId": "tx-ady-1"}
    settled = c.post("/payments/ady-1/settlements", settle_body)
    assert settled[0] == 200, settled[1]
    assert json.loads(settled[1])["settleId"], settled[1]
    assert c.post("/payments/ady-1/settlements", settle_body)[1] == settled[1]
    refund_body = {"paymentId": "ady-1", "requestId": "r-1", "value": 10, "transactionId": "tx-ady-1"}
    refunded = c.post("/payments/ady-1/refunds", refund_body)
    assert refunded[0] == 200, refunded[1]
    assert json.loads(refunded[1])["value"] == 10
    assert c.post("/payments/ady-1/refunds", refund_body)[1] == refunded[1]

    wait_for(lambda: ledger(fake)["notifications"]["accepted"] >= 3, what="three notifications accepted")
    [payment] = payments_of(fake, "ady-1")
    assert payment["authorisations"] == 1 and payment["captured"] == 3190 and payment["refunded"] == 1000
    kinds = [m["kind"] for m in ledger(fake)["modifications"]]
    assert kinds == ["capture", "refund"], "one modification per requestId"
    reports = [a for a in audit_trail(c, "ady-1") if a["kind"] == "acquirer_reported"]
    assert any("CAPTURE" in a["detail"] for a in reports) and any("REFUND" in a["detail"] for a in reports)


# Named by outcome: a test's name is in its paths, and no card number may be in a file.
@pytest.mark.parametrize("card,outcome", [("4222222222222224", "approved"), ("4222222222222225", "denied")],
                         ids=["approved", "denied"])
def test_a_pending_payment_is_decided_by_its_notification(adyen_world, receiver, card, outcome):
    fake, c, _ = adyen_world
    r = receiver()
    pid = "ady-pending-" + outcome
    first, _ = create(c, create_body(pid, card=card, callbackUrl=r.url()))
    assert first["status"] == "undefined"
    assert r.wait_for(lambda rv: rv.processed, timeout=20), "no callback after the AUTHORISATION notification"
    decided = callback_body(r.requests[-1])
    assert decided["status"] == outcome
    assert create(c, create_body(pid, card=card, callbackUrl=r.url()))[1] == r.requests[-1]["body"]
    [payment] = payments_of(fake, pid)
    if outcome == "approved":  # from the notification's reason, authCode:last4:expiry
        assert decided["authorizationId"] == payment["authCode"] and payment["authCode"]


def test_a_redirect_hands_the_shopper_adyens_page_then_the_notification_decides(adyen_world):
    fake, c, _ = adyen_world
    first, _ = create(c, create_body("ady-3ds", card="4000000000003220"))
    assert first["status"] == "undefined"
    assert first["paymentUrl"].startswith("https://checkoutshopper-test.adyen.com/")
    wait_for(lambda: create(c, create_body("ady-3ds", card="4000000000003220"))[0]["status"] == "approved",
             what="the redirected payment approved by its notification")


def test_a_refused_card_is_denied_with_adyens_reason(adyen_world):
    fake, c, _ = adyen_world
    first, _ = create(c, create_body("ady-refused", card="4444333322221112"))
    assert first["status"] == "denied" and first["code"] == "2"


def test_overlapping_creates_make_one_payment(adyen_world):
    fake, c, _ = adyen_world
    body = create_body("ady-overlap", value=12)
    answers = concurrently(12, lambda i: c.post("/payments", body))
    assert len({a[1] for a in answers}) == 1 and answers[0][0] == 200
    [payment] = payments_of(fake, "ady-overlap")
    assert payment["authorisations"] == 1


def test_an_authorisation_notification_that_overtakes_the_answer(adyen_world):
    _, _, start = adyen_world
    fake, c = start("--notify-before-answer", "--latency-ms", "300")
    first, raw = create(c, create_body("ady-early"))
    assert first["status"] == "approved"
    wait_for(lambda: ledger(fake)["notifications"]["accepted"] >= 1, what="the notification accepted")
    assert create(c, create_body("ady-early"))[1] == raw
    assert payments_of(fake, "ady-early")[0]["authorisations"] == 1


def test_hostile_notifications_change_nothing(adyen_world):
    fake, c, _ = adyen_world
    _, approved = create(c, create_body("ady-h"))
    psp = payments_of(fake, "ady-h")[0]["pspReference"]
    forged = notification(psp, "ady-h", success="false", key="00" * 32)
    assert post_notification(c, forged)[0] == 401, "a wrong HMAC key"
    unsigned = notification(psp, "ady-h", success="false")
    del unsigned["notificationItems"][0]["NotificationRequestItem"]["additionalData"]
    assert post_notification(c, unsigned)[0] == 401, "no signature"
    tampered = notification(psp, "ady-h", success="true")
    tampered["notificationItems"][0]["NotificationRequestItem"]["success"] = "false"
    assert post_notification(c, tampered)[0] == 401, "a signed item altered"
    backwards = notification(psp, "ady-h", success="false")
    assert post_notification(c, backwards) == (200, "[accepted]")
    assert post_notification(c, backwards) == (200, "[accepted]"), "a replay"
    other = notification("X" * 16, "ady-h", success="false", account="SomeoneElseECOM")
    assert post_notification(c, other) == (200, "[accepted]"), "another merchant account's: accepted, ignored"
    unknown = notification("U" * 16, "no-such-payment")
    assert post_notification(c, unknown) == (200, "[accepted]")
    assert post_notification(c, notification(psp, "ady-h"), merchant="nobody")[0] == 404
    assert post_notification(c, {"live": "false", "notificationItems": "x"})[0] == 400
    huge = notification(psp, "ady-h")
    huge["notificationItems"][0]["NotificationRequestItem"]["reason"] = "x" * 70_000
    assert post_notification(c, huge)[0] == 413
    assert create(c, create_body("ady-h"))[1] == approved, "a notification never moves a payment backwards"
    kinds = [a["kind"] for a in audit_trail(c, "ady-h")]
    assert "webhook_ignored" in kinds and "webhook_duplicate" in kinds and "webhook_applied" not in kinds


def test_notifications_with_basic_authentication(adyen_world):
    _, _, start = adyen_world
    fake, c = start("--notification-username", "adyen", acquirer_extra={"notificationUsername": "adyen",
                                                                         "notificationPassword": "wrong-for-the-fake"})
    create(c, create_body("ady-basic"))
    psp = payments_of(fake, "ady-basic")[0]["pspReference"]
    assert post_notification(c, notification(psp, "ady-basic"))[0] == 401, "no credentials"
    import base64
    good = {"content-type": "application/json",
            "authorization": "Basic " + base64.b64encode(b"adyen:wrong-for-the-fake").decode()}
    assert post_notification(c, notification(psp, "ady-basic"), headers=good) == (200, "[accepted]")
    assert ledger(fake)["notifications"]["accepted"] == 0, "the fake's, without the password, are refused"


def test_a_capture_that_fails_after_the_gateway_heard_success_is_shown_to_operators(adyen_world, tmp_path):
    _, _, start = adyen_world
    events = tmp_path / "events.log"
    fake, c = start(extra_args=["--metrics-listen", "127.0.0.1:0", "--event-log", str(events)])
    create(c, create_body("ady-fail", value=20))
    psp = payments_of(fake, "ady-fail")[0]["pspReference"]
    assert request(fake.port, "POST", f"/fake/fail-next/{psp}", b"{}", headers={})[0] == 200
    settled = c.post("/payments/ady-fail/settlements", {"paymentId": "ady-fail", "requestId": "s-fail", "value": 20})
    assert settled[0] == 200, "Adyen received it: the gateway hears success"
    port = logged_port(c.process, rb"metrics on port (\d+)")
    wait_for(lambda: b'kind="acquirer_failure_reported"} 1' in request(port, "GET", "/metrics", headers={})[1],
             what="the failure in the metrics")
    wait_for(lambda: events.exists() and "acquirer_failure_reported" in events.read_text(), what="the event log line")
    failures = [a for a in audit_trail(c, "ady-fail") if a["kind"] == "acquirer_failure_reported"]
    assert len(failures) == 1 and "CAPTURE_FAILED" in failures[0]["detail"]


def test_sigkill_during_payments_makes_one_payment_decided_by_its_notification(adyen_world, receiver):
    _, _, start = adyen_world
    fake, c = start("--latency-ms", "1500")
    r = receiver()
    body = create_body("ady-kill", callbackUrl=r.url())
    t = sent_before_a_kill(lambda: c.post("/payments", body))
    wait_for(lambda: payments_of(fake, "ady-kill"), what="the payment at the fake")
    c.process.kill()
    t.join()
    c.start()
    notify_to(fake, webhook_url(c))
    # The notification is retried until the restarted connector accepts it; the gateway's
    # retry meanwhile hears undefined or the outcome, never a second payment.
    assert create(c, body)[0]["status"] in ("undefined", "approved")
    wait_for(lambda: create(c, body)[0]["status"] == "approved", timeout=30, what="approved by the notification")
    [payment] = payments_of(fake, "ady-kill")
    assert payment["authorisations"] == 1


@pytest.mark.parametrize("operation", ["settlements", "refunds"])
def test_sigkill_during_a_modification_makes_one(adyen_world, operation):
    _, _, start = adyen_world
    fake, c = start("--latency-ms", "1000")
    pid = "ady-kill-" + operation
    create(c, create_body(pid, value=20))
    if operation == "refunds":
        assert c.post(f"/payments/{pid}/settlements", {"paymentId": pid, "requestId": "s-k", "value": 20})[0] == 200
    op_body = {"paymentId": pid, "requestId": "op-k", "value": 20 if operation == "settlements" else 5}
    kind = "capture" if operation == "settlements" else "refund"
    count = lambda: sum(m["kind"] == kind for m in ledger(fake)["modifications"])  # noqa: E731
    before = count()
    t = sent_before_a_kill(lambda: c.post(f"/payments/{pid}/{operation}", op_body))
    wait_for(lambda: count() > before, what="the modification at the fake")
    c.process.kill()
    t.join()
    c.start()
    notify_to(fake, webhook_url(c))
    answer = wait_for(lambda: (a := c.post(f"/payments/{pid}/{operation}", op_body))[0] == 200 and a, timeout=30,
                      what="the gateway's retry answered")
    assert json.loads(answer[1])["value"] == op_body["value"]
    assert count() == before + 1, "one modification per requestId"


def test_the_webhooks_documents_own_examples_are_accepted(adyen_world):
    """Every example standard notification of the published Webhooks document, as it stands but
    for the merchant account, the merchantReference (one of the connector's payments) and a
    signature under the merchant's key: accepted, and none moves the approved payment. The few
    examples of another shape (ACH notices of change, not standard notifications) are refused."""
    fake, c, _ = adyen_world
    _, approved = create(c, create_body("ady-examples"))
    examples = json.loads(WEBHOOKS.read_text())["components"]["examples"]
    assert len(examples) > 30
    for name, example in examples.items():
        body = json.loads(json.dumps(example["value"]))
        if "notificationItems" not in body:
            assert post_notification(c, body)[0] == 400, name
            continue
        for wrapper in body["notificationItems"]:
            item = wrapper["NotificationRequestItem"]
            item["merchantAccountCode"] = ACCOUNT
            item["merchantReference"] = "ady-examples"
            item.setdefault("additionalData", {})["hmacSignature"] = sign(item)
        assert post_notification(c, body) == (200, "[accepted]"), name
    assert create(c, create_body("ady-examples"))[1] == approved
    kinds = [a["kind"] for a in audit_trail(c, "ady-examples")]
    assert kinds.count("acquirer_reported") + kinds.count("acquirer_failure_reported") >= 30


def test_card_tokens_go_through_the_secure_proxy_to_adyen(adyen_world):
    _, _, start = adyen_world
    fake, c = start(extra_args=["--secure-proxy-allowed-hosts", "127.0.0.1"])
    proxy = FakeSecureProxy(["http://127.0.0.1:"])
    try:
        body = create_body("ady-proxied", secureProxyUrl=proxy.url())
        body["card"] = proxy.tokenize({"number": "4444333322221112", "holder": "John Doe", "csc": "123"})
        first, _ = create(c, body)
        assert first["status"] == "denied" and first["code"] == "2", "Adyen decided on the real number"
        [sent] = proxy.received
        assert sent["headers"]["x-provider-forward-to"].endswith("/payments")
        assert sent["headers"]["x-provider-forward-idempotency-key"].startswith("idempay-")
        assert b"#vtex#token#" in sent["body"] and b"4444333322221112" not in sent["body"]
        assert len(payments_of(fake, "ady-proxied")) == 1
        c.process.terminate()
        for path in c.dir.rglob("*"):
            if path.is_file():
                assert b"#vtex#token#" not in path.read_bytes(), f"a Secure Proxy token kept in {path}"
    finally:
        proxy.close()


def test_sigkill_while_notifications_arrive_loses_none(adyen_world):
    """Pending payments decided by notifications that arrive while the connector is killed and
    restarted: each is decided once, by its own notification, retried until accepted."""
    _, _, start = adyen_world
    fake, c = start("--pending-delay-ms", "700")
    ids = [f"ady-storm-{i}" for i in range(6)]
    for i, pid in enumerate(ids):
        card = "4222222222222224" if i % 2 == 0 else "4222222222222225"
        assert create(c, create_body(pid, card=card))[0]["status"] == "undefined"
    wait_for(lambda: ledger(fake)["notifications"]["attempts"] >= 1, what="the first notification")
    c.process.kill()
    c.start()
    notify_to(fake, webhook_url(c))
    for i, pid in enumerate(ids):
        card = "4222222222222224" if i % 2 == 0 else "4222222222222225"
        wanted = "approved" if i % 2 == 0 else "denied"
        wait_for(lambda: create(c, create_body(pid, card=card))[0]["status"] == wanted, timeout=40,
                 what=f"{pid} {wanted}")
        assert len(payments_of(fake, pid)) == 1
    kinds = [a["kind"] for a in audit_trail(c, ids[0])]  # stops the connector, then audit verify
    assert kinds.count("webhook_applied") == 1, "decided once, by its notification"


RIVAL_KEY, RIVAL_TOKEN = "rival-key", "rival-token-0123456789"
RIVAL_AUTH = {"X-VTEX-API-AppKey": RIVAL_KEY, "X-VTEX-API-AppToken": RIVAL_TOKEN, "Content-Type": "application/json"}
SHOP_HMAC_KEY = "11" * 32


def test_a_merchant_sharing_the_merchant_account_cannot_decide_or_shadow_anothers_payment(adyen_world):
    """Two merchants whose adyen entries name one merchant account, each with its own path and
    HMAC key. The first, with everything it legitimately holds, signs items naming the second's
    pending payment (a refusal) and its own payment under the second's pspReference (to take
    the event's inbox id first): nothing of the second's changes, and Adyen's real
    notification, sent to the second's path, still decides the second's payment."""
    _, _, start = adyen_world
    shop = adyen_merchant(adyen_acquirer("(set below)", hmacKey=SHOP_HMAC_KEY))
    rival = adyen_merchant(adyen_acquirer("(set below)"), name="rival", key=RIVAL_KEY, token=RIVAL_TOKEN)

    def both(prism_url):
        for m in (shop, rival):
            m["acquirers"][0]["baseUrl"] = prism_url
        return [shop, rival]

    fake, c = start("--pending-delay-ms", "2500", merchants_for=both)
    notify_to(fake, webhook_url(c, merchant="rival"))  # the fake signs with the rival's key
    status, raw, _ = c.post("/payments", create_body("rival-1", card="4222222222222224"), headers=RIVAL_AUTH)
    assert status == 200 and json.loads(raw)["status"] == "undefined", raw
    own, _ = create(c, create_body("shop-1"))
    assert own["status"] == "approved"
    psp = payments_of(fake, "rival-1")[0]["pspReference"]

    deny_theirs = notification(psp, "rival-1", success="false", key=SHOP_HMAC_KEY)
    assert post_notification(c, deny_theirs) == (200, "[accepted]"), "accepted and ignored, as an unknown payment"
    shadow = notification(psp, "shop-1", key=SHOP_HMAC_KEY)
    assert post_notification(c, shadow) == (200, "[accepted]")
    assert post_notification(c, deny_theirs, merchant="rival")[0] == 401, "the shop's key is not the rival's"
    status, raw, _ = c.post("/payments", create_body("rival-1", card="4222222222222224"), headers=RIVAL_AUTH)
    assert json.loads(raw)["status"] == "undefined", "the shop's items changed nothing of the rival's payment"

    wait_for(lambda: json.loads(c.post("/payments", create_body("rival-1", card="4222222222222224"),
                                       headers=RIVAL_AUTH)[1])["status"] == "approved",
             timeout=30, what="the rival's payment approved by Adyen's notification to its own path")
    assert ledger(fake)["notifications"]["accepted"] >= 1
    kinds = [(a["kind"], a.get("actor", "")) for a in audit_trail(c, "rival-1")]
    assert [k for k, _ in kinds].count("webhook_applied") == 1
    assert ("access_refused", "shop") in kinds, "the attempt is in the rival's trail, with who made it"


def test_a_psps_fields_are_data_in_every_log_and_on_the_terminal(adyen_world, tmp_path):
    """A signed item whose reason holds a line break, an ESC sequence, a C1 CSI (U+009B) and a
    bidirectional override: the connector's log gets one line for it, with each escaped; the
    event log one JSON line that reads back the same text; `idempay inspect`, text or JSON,
    prints no raw control."""
    _, _, start = adyen_world
    events = tmp_path / "events.log"
    fake, c = start(extra_args=["--event-log", str(events)])
    create(c, create_body("ady-inject", value=20))
    psp = payments_of(fake, "ady-inject")[0]["pspReference"]
    hostile = "Failed\n2026-12-04T00:00:00.000000Z info forged line \x1b[2J\u009b2J \u202eevil"
    item = notification("M" * 16, "ady-inject", event="CAPTURE_FAILED", value=2000, original=psp)
    inner = item["notificationItems"][0]["NotificationRequestItem"]
    inner["reason"] = hostile  # not among the signed fields: still an authentic item
    assert post_notification(c, item) == (200, "[accepted]")
    wait_for(lambda: events.exists() and "acquirer_failure_reported" in events.read_text(), what="the event log line")
    c.process.terminate()
    log = c.process.log_path.read_bytes()
    for raw in (log, events.read_bytes()):
        assert b"\x1b" not in raw and b"\xc2\x9b" not in raw and b"\xe2\x80\xae" not in raw, raw[-2000:]
    lines = [line for line in log.split(b"\n") if b"CAPTURE_FAILED" in line]
    assert len(lines) == 1 and b"forged line" in lines[0], lines
    assert b"Failed\\n2026" in lines[0] and b"\\x1b[2J\\u009b2J \\u202eevil" in lines[0], lines[0]
    assert not any(line.startswith(b"2026-12-04T00:00:00.000000Z") for line in log.split(b"\n")), "no forged line"
    [event] = [json.loads(line) for line in events.read_text().splitlines() if "acquirer_failure_reported" in line]
    assert hostile in event["detail"], "the event log's JSON reads back the same text"
    for args in (["inspect", "ady-inject"], ["inspect", "ady-inject", "--json"]):
        out = subprocess.run([BIN, *args, "--data-dir", str(c.data_dir)], capture_output=True, timeout=60)
        assert out.returncode == 0, out.stderr
        assert b"\x1b" not in out.stdout and b"\xc2\x9b" not in out.stdout and b"\xe2\x80\xae" not in out.stdout
        assert b"forged line" in out.stdout


# -- boleto ---------------------------------------------------------------------------------

BOLETO_ADDRESS = {"country": "BRA", "street": "Avenida Paulista", "number": "1578", "neighborhood": "Bela Vista",
                  "postalCode": "01310-200", "city": "São Paulo", "state": "SP"}


def boleto_body(payment_id, value=123.45, **extra):
    body = create_body(payment_id, value=value, paymentMethod="BankInvoice", card=None, **extra)
    body.pop("card")
    body["miniCart"]["buyer"] = {"firstName": "Ana", "lastName": "Silva", "document": "12345678909",
                                 "documentType": "CPF", "email": "ana@example.com", "phone": "+5511999999999"}
    body["miniCart"]["billingAddress"] = dict(BOLETO_ADDRESS)
    return body


def boleto_merchants(prism_url):
    return [adyen_merchant(adyen_acquirer(prism_url, methods=["Visa", "Mastercard", "BankInvoice"]))]


def fake_boleto(fake, psp, action):
    status, raw, _ = request(fake.port, "POST", f"/fake/{action}/{psp}", b"{}", headers={})
    return status, raw


def test_a_boleto_is_issued_paid_settled_and_its_refund_is_the_merchants_to_do(adyen_world, receiver):
    """The gateway's boleto becomes POST /payments with boletobancario (the buyer's name, CPF and
    billing address), Adyen's voucher the bank invoice answer (its page, typeable line and bar
    code, the delay to cancel its expiry), checked against the PPP document; the shopper pays,
    Adyen's AUTHORISATION approves it by callback; the settlement is a record (a paid boleto is
    captured) and a refund is refund-manually, as the PPP documents it."""
    _, _, start = adyen_world
    fake, c = start(merchants_for=boleto_merchants)
    r = receiver()
    body = boleto_body("boleto-paid", callbackUrl=r.url())
    first, raw = create(c, body)
    validate(raw, "/payments", "post", 200)
    [issued] = payments_of(fake, "boleto-paid")
    assert first["status"] == "undefined" and first["tid"] == issued["pspReference"]
    assert first["paymentUrl"] == first["bankIssueInvoiceId"] and first["paymentUrl"].startswith("https://test.adyen.com/")
    line, code = first["identificationNumber"], first["barCodeImageNumber"]
    assert len(line) == 47 and line.isdigit() and len(code) == 44 and code.isdigit()
    assert first["identificationNumberFormatted"].replace(".", "").replace(" ", "") == line
    assert first["barCodeImageType"] == "i25"
    assert code[:4] == line[:4] and code[4] == line[32] and code[5:19] == line[33:47], "the bar code of the same line"
    assert code[9:19] == "0000012345", "the amount the bar code carries"
    # The default delay to cancel is 6 hours: the boleto is due a day after it was asked for.
    assert 86_000 <= first["delayToCancel"] <= 86_400 + 60, first["delayToCancel"]
    assert issued["amount"] == 12345 and issued["method"] == "boletobancario" and issued["status"] == "PresentToShopper"
    assert create(c, body)[1] == raw, "a repeated Create Payment: the same answer, byte for byte"

    assert fake_boleto(fake, issued["pspReference"], "pay")[0] == 200
    assert r.wait_for(lambda rv: rv.processed, timeout=20), "no callback after the AUTHORISATION notification"
    approved = callback_body(r.requests[-1])
    assert approved["status"] == "approved" and approved["paymentId"] == "boleto-paid"
    assert create(c, body)[1] == r.requests[-1]["body"], "the final answer is the callback's"

    settle = {"paymentId": "boleto-paid", "requestId": "s-1", "value": 123.45}
    settled = c.post("/payments/boleto-paid/settlements", settle)
    assert settled[0] == 200 and json.loads(settled[1])["value"] == 123.45, settled[1]
    refund = {"paymentId": "boleto-paid", "requestId": "r-1", "value": 10}
    refused = c.post("/payments/boleto-paid/refunds", refund)
    assert refused[0] == 501 and json.loads(refused[1])["code"] == "refund-manually", refused[1]
    assert c.post("/payments/boleto-paid/refunds", refund)[1] == refused[1]
    assert ledger(fake)["modifications"] == [], "nothing is sent to Adyen for a boleto's settlement or refund"
    [paid] = payments_of(fake, "boleto-paid")
    assert paid["authorisations"] == 1 and paid["captured"] == 12345


def test_a_boleto_that_expires_unpaid_is_denied_and_one_cancelled_is_withdrawn(adyen_world, receiver):
    _, _, start = adyen_world
    fake, c = start(merchants_for=boleto_merchants)
    r = receiver()
    create(c, boleto_body("boleto-expired", callbackUrl=r.url()))
    psp = payments_of(fake, "boleto-expired")[0]["pspReference"]
    assert fake_boleto(fake, psp, "expire")[0] == 200
    assert r.wait_for(lambda rv: rv.processed, timeout=20), "no callback after OFFER_CLOSED"
    assert callback_body(r.requests[-1])["status"] == "denied"

    create(c, boleto_body("boleto-cancelled"))
    cancel = c.post("/payments/boleto-cancelled/cancellations", {"paymentId": "boleto-cancelled", "requestId": "c-1"})
    assert cancel[0] == 200 and json.loads(cancel[1])["cancellationId"], cancel[1]
    [withdrawn] = payments_of(fake, "boleto-cancelled")
    assert withdrawn["status"] == "Cancelled"
    assert fake_boleto(fake, withdrawn["pspReference"], "pay")[0] == 409, "a withdrawn boleto can no longer be paid"
    assert json.loads(c.post("/payments", boleto_body("boleto-cancelled"))[1])["status"] == "denied"
    wait_for(lambda: ledger(fake)["notifications"]["accepted"] >= 2, what="OFFER_CLOSED and CANCELLATION accepted")


def test_a_boleto_paid_after_it_was_cancelled_is_shown_to_operators(adyen_world, tmp_path):
    """The gateway cancelled a boleto at its expiry; the bank's clearing reports it paid later:
    the payment stays cancelled (never moved back), and the trail, the metrics and the event
    log say that the shopper's money must be returned by hand."""
    _, _, start = adyen_world
    events = tmp_path / "events.log"
    fake, c = start(merchants_for=boleto_merchants, extra_args=["--event-log", str(events)])
    create(c, boleto_body("boleto-late"))
    psp = payments_of(fake, "boleto-late")[0]["pspReference"]
    late = notification(psp, "boleto-late", value=12345)
    assert c.post("/payments/boleto-late/cancellations", {"paymentId": "boleto-late", "requestId": "c-1"})[0] == 200
    assert post_notification(c, late) == (200, "[accepted]")
    wait_for(lambda: events.exists() and "acquirer_failure_reported" in events.read_text(), what="the event log line")
    failures = [a for a in audit_trail(c, "boleto-late") if a["kind"] == "acquirer_failure_reported"]
    assert len(failures) == 1 and "return the money" in failures[0]["detail"]


def test_a_boleto_without_the_buyers_data_is_denied_before_adyen(adyen_world):
    _, _, start = adyen_world
    fake, c = start(merchants_for=boleto_merchants)
    body = boleto_body("boleto-nodoc")
    del body["miniCart"]["buyer"]["document"]
    first, _ = create(c, body)
    assert first["status"] == "denied" and first["code"] == "boleto-data" and "CPF" in first["message"]
    assert payments_of(fake, "boleto-nodoc") == []


def test_sigkill_during_a_boletos_payments_call_issues_one_boleto(adyen_world):
    """Killed while Adyen issues the boleto: the gateway's retry sends the same request under
    the same Idempotency-Key, and gets the boleto issued the first time."""
    _, _, start = adyen_world
    fake, c = start("--latency-ms", "4000", merchants_for=boleto_merchants)
    body = boleto_body("boleto-kill")
    t = sent_before_a_kill(lambda: c.post("/payments", body))
    wait_for(lambda: payments_of(fake, "boleto-kill"), what="the boleto at the fake")
    c.process.kill()
    t.join()
    c.start()
    notify_to(fake, webhook_url(c))
    [issued] = payments_of(fake, "boleto-kill")
    # While recovery looks at it, a retry hears "undefined, being confirmed"; the gateway asks
    # again, as it does, until it has the boleto.
    first, raw = wait_for(lambda: (got := create(c, body))[0]["tid"] and got, timeout=30, what="the boleto")
    assert first["status"] == "undefined" and first["tid"] == issued["pspReference"], raw
    assert len(first["identificationNumber"]) == 47
    assert create(c, body)[1] == raw
    assert fake_boleto(fake, issued["pspReference"], "pay")[0] == 200
    wait_for(lambda: create(c, body)[0]["status"] == "approved", timeout=30, what="approved by its notification")
    assert len(payments_of(fake, "boleto-kill")) == 1
    requests = ledger(fake)["requests"]["POST /payments"]
    assert requests == 2, "the retry was the same request, answered from Adyen's Idempotency-Key"


def test_sigkill_while_boleto_notifications_arrive_loses_none(adyen_world):
    """Boletos paid and expired while the connector is killed: Adyen's notifications are sent
    again until the restarted connector accepts them, and each boleto is decided once."""
    _, _, start = adyen_world
    fake, c = start(merchants_for=boleto_merchants)
    ids = [f"boleto-storm-{i}" for i in range(4)]
    for pid in ids:
        create(c, boleto_body(pid))
    for i, pid in enumerate(ids):
        assert fake_boleto(fake, payments_of(fake, pid)[0]["pspReference"], "pay" if i % 2 == 0 else "expire")[0] == 200
    c.process.kill()
    c.start()
    notify_to(fake, webhook_url(c))
    for i, pid in enumerate(ids):
        wanted = "approved" if i % 2 == 0 else "denied"
        wait_for(lambda: create(c, boleto_body(pid))[0]["status"] == wanted, timeout=40, what=f"{pid} {wanted}")
        assert len(payments_of(fake, pid)) == 1
    kinds = [a["kind"] for a in audit_trail(c, ids[1])]
    assert kinds.count("webhook_applied") == 1, "decided once, by its notification"
