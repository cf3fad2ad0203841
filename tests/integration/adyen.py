"""What the Adyen tests share: the fake Adyen (`idempay-sandbox adyen-fake`), Stoplight Prism validating
against Adyen's published Checkout API document, a merchant whose cards go through both, an
independent HMAC signer (Adyen's documented scheme, written here from its documentation) and
a validator of notifications against the published Webhooks document."""
import base64
import hashlib
import hmac
import json
import pathlib

import jsonschema

from conftest import APP_KEY, APP_TOKEN, SANDBOX, Process, request

ROOT = pathlib.Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data" / "adyen"
CHECKOUT = DATA / "CheckoutService-v71.json"
WEBHOOKS = DATA / "Webhooks-v1.json"
CHECKOUT_SHA256 = "9e426ae2bf007b148c393c5f163bbb0abe54959172b4d85676aedbd178b2b0b0"
WEBHOOKS_SHA256 = "fee070579d18fcb2c4d69c71d13f744a5c121d669d8e15e0e5884bfd4974d9ab"
API_KEY = "AQE-test-api-key-0123456789"
ACCOUNT = "IdempayShopECOM"
HMAC_KEY = "44782DEF547AAA06C910C43932B1EB0C71FC68D9D0C057550C48EC2ACF6BA056"
CARD_METHODS = ["Visa", "Mastercard"]


def start_fake(base_dir, name, *args):
    key = base_dir / f"{name}-adyen-api-key"
    key.write_text(API_KEY + "\n")
    hmac_file = base_dir / f"{name}-adyen-hmac"
    hmac_file.write_text(HMAC_KEY + "\n")
    delay = [] if "--pending-delay-ms" in args else ["--pending-delay-ms", "300"]
    fake = Process(["adyen-fake", "--listen", "127.0.0.1:0", "--api-key-file", str(key), "--hmac-key-file",
                    str(hmac_file), "--merchant-account", ACCOUNT, *delay, *args],
                   base_dir / f"{name}-adyen-fake.log", program=SANDBOX)
    fake.url = f"http://127.0.0.1:{fake.port}"
    return fake


def notify_to(fake, url):
    status, _, _ = request(fake.port, "POST", "/fake/notification-url", {"url": url}, headers={})
    assert status == 200


def ledger(fake):
    status, raw, _ = request(fake.port, "GET", "/fake/ledger", headers={})
    assert status == 200
    return json.loads(raw)


def payments_of(fake, reference):
    return [p for p in ledger(fake)["payments"] if p["reference"] == reference]


def adyen_acquirer(base_url, **extra):
    entry = {"name": "adyen", "kind": "adyen", "methods": CARD_METHODS, "baseUrl": base_url, "apiKey": API_KEY,
             "merchantAccount": ACCOUNT, "returnUrl": "https://shop.example/return", "hmacKey": HMAC_KEY,
             "timeoutMs": 5000}
    entry.update(extra)
    return entry


def adyen_merchant(acquirer, name="shop", key=APP_KEY, token=APP_TOKEN):
    return {"name": name, "appKey": key, "appToken": token, "acquirers": [acquirer]}


def signing_payload(item):
    """Adyen's documented order: pspReference, originalReference, merchantAccountCode,
    merchantReference, value, currency, eventCode, success."""
    amount = item.get("amount", {})
    return ":".join(str(v) for v in [item.get("pspReference", ""), item.get("originalReference", ""),
                                     item.get("merchantAccountCode", ""), item.get("merchantReference", ""),
                                     amount.get("value", ""), amount.get("currency", ""), item.get("eventCode", ""),
                                     item.get("success", "")])


def sign(item, key=HMAC_KEY):
    mac = hmac.new(bytes.fromhex(key), signing_payload(item).encode(), hashlib.sha256).digest()
    return base64.b64encode(mac).decode()


def notification(psp, reference, event="AUTHORISATION", success="true", value=3190, original="", key=HMAC_KEY,
                 account=ACCOUNT):
    item = {"amount": {"currency": "BRL", "value": value}, "eventCode": event, "eventDate": "2026-12-02T12:00:00+00:00",
            "merchantAccountCode": account, "merchantReference": reference, "paymentMethod": "visa",
            "pspReference": psp, "success": success}
    if original:
        item["originalReference"] = original
    item["additionalData"] = {"hmacSignature": sign(item, key)}
    return {"live": "false", "notificationItems": [{"NotificationRequestItem": item}]}


def webhook_validator(event_code, erratum=True):
    """A JSON Schema validator of a standard notification of `event_code`, as the Webhooks
    document defines its request body. One erratum: the events whose body is the generic
    NotificationRequest (OFFER_CLOSED among them) get an additionalData that may not hold an
    hmacSignature, while the document's own example of OFFER_CLOSED carries one, as every
    signed item does; with `erratum` the signature is allowed there (see
    test_the_webhooks_documents_generic_schema_refuses_its_own_example)."""
    doc = json.loads(WEBHOOKS.read_text())
    body = doc["webhooks"]["/" + event_code]["post"]["requestBody"]["content"]["application/json"]["schema"]
    components = doc["components"]
    if erratum:
        generic = components["schemas"]["NotificationAdditionalData"]["properties"]
        generic["hmacSignature"] = {"type": "string"}
    return jsonschema.Draft202012Validator(dict(body, components=components))


def check_notifications(fake):
    """Every notification the fake sent is a NotificationRequest of the Webhooks document, and
    each item's signature is what an independent signer computes."""
    bodies = ledger(fake)["notifications"]["bodies"]
    for raw in bodies:
        body = json.loads(raw)
        event = body["notificationItems"][0]["NotificationRequestItem"]["eventCode"]
        errors = [e.message for e in webhook_validator(event).iter_errors(body)]
        assert not errors, f"against the Webhooks document: {errors} in {raw}"
        for wrapper in body["notificationItems"]:
            item = wrapper["NotificationRequestItem"]
            assert item["additionalData"]["hmacSignature"] == sign(item)
    return bodies
