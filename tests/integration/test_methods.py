"""Pix, boleto, redirect and POS: what the shopper needs comes with `undefined`, every check
digit is recomputed here independently, and the final outcome arrives as a callback."""
import base64
import json
import subprocess
import time

from conftest import CALLBACK_ARGS, concurrently, create_body, ledger
from receiver import callback_body, verify
from schema import validate
from conftest import CALLBACK_SECRET


def method_body(payment_id, method, callback_url, value=31.9):
    body = create_body(payment_id, value=value, paymentMethod=method, callbackUrl=callback_url)
    body["card"] = {"holder": None, "number": None, "csc": None, "expiration": {"month": None, "year": None}}
    return body


def crc16_ccitt(data):
    crc = 0xFFFF
    for byte in data:
        crc ^= byte << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x1021) if crc & 0x8000 else crc << 1
            crc &= 0xFFFF
    return crc


def parse_tlv(text):
    fields, i = {}, 0
    while i < len(text):
        tag, length = text[i:i + 2], int(text[i + 2:i + 4])
        fields[tag] = text[i + 4:i + 4 + length]
        i += 4 + length
    return fields


def mod10(digits):
    total = 0
    for i, d in enumerate(reversed(digits)):
        p = int(d) * (2 if i % 2 == 0 else 1)
        total += p // 10 + p % 10
    return (10 - total % 10) % 10


def mod11(digits):
    total = sum(int(d) * (2 + i % 8) for i, d in enumerate(reversed(digits)))
    dv = 11 - total % 11
    return 1 if dv in (0, 10, 11) else dv


def test_pix(connector_factory, receiver, tmp_path):
    r = receiver()
    c = connector_factory(extra_args=CALLBACK_ARGS)
    status, raw, _ = c.post("/payments", method_body("pix-1", "Pix", r.url(), value=4307.23))
    payment = validate(raw, "/payments", "post", 200)
    assert payment["status"] == "undefined"
    assert 900 <= payment["delayToCancel"] <= 3600
    payload = json.loads(payment["paymentAppData"]["payload"])
    code = payload["code"]
    fields = parse_tlv(code)
    assert fields["00"] == "01" and fields["53"] == "986" and fields["54"] == "4307.23" and fields["58"] == "BR"
    assert parse_tlv(fields["26"])["00"] == "br.gov.bcb.pix"
    assert code[-8:-4] == "6304" and int(code[-4:], 16) == crc16_ccitt(code[:-4].encode())
    png = base64.b64decode(payload["qrCodeBase64Image"])
    assert png.startswith(b"\x89PNG\r\n\x1a\n")
    (tmp_path / "qr.png").write_bytes(png)
    decoded = subprocess.run(["zbarimg", "--raw", "-q", str(tmp_path / "qr.png")], capture_output=True, text=True)
    assert decoded.stdout.strip() == code, "the QR image must encode the copy-and-paste code"
    assert r.wait_for(lambda rv: rv.processed)
    assert callback_body(r.requests[-1])["status"] == "approved"


def test_boleto(connector_factory, receiver):
    r = receiver()
    c = connector_factory(extra_args=CALLBACK_ARGS)
    status, raw, _ = c.post("/payments", method_body("boleto-1", "BankInvoice", r.url(), value=123.45))
    p = validate(raw, "/payments", "post", 200)
    assert p["status"] == "undefined"
    assert p["paymentUrl"] and p["bankIssueInvoiceId"] == p["paymentUrl"]
    assert p["barCodeImageType"] == "i25"
    bar, line = p["barCodeImageNumber"], p["identificationNumber"]
    assert len(bar) == 44 and bar.isdigit() and len(line) == 47 and line.isdigit()
    assert int(bar[4]) == mod11(bar[:4] + bar[5:]), "bar code check digit"
    assert bar[9:19] == "0000012345", "value field"
    f1, f2, f3, general, f5 = line[0:10], line[10:21], line[21:32], line[32], line[33:47]
    assert f1[:4] == bar[:4] and f1[4:9] == bar[19:24] and int(f1[9]) == mod10(f1[:9])
    assert f2[:10] == bar[24:34] and int(f2[10]) == mod10(f2[:10])
    assert f3[:10] == bar[34:44] and int(f3[10]) == mod10(f3[:10])
    assert general == bar[4] and f5 == bar[5:19]
    assert p["identificationNumberFormatted"].replace(".", "").replace(" ", "") == line
    factor = int(bar[5:9])
    assert 1000 <= factor <= 9999
    assert 0 < p["delayToCancel"] <= 4 * 86400
    assert r.wait_for(lambda rv: rv.processed)
    assert callback_body(r.requests[-1])["status"] == "approved"


def test_redirect(connector_factory, receiver):
    r = receiver()
    c = connector_factory(extra_args=CALLBACK_ARGS)
    status, raw, _ = c.post("/payments", method_body("redirect-1", "Promissories", r.url()))
    p = validate(raw, "/payments", "post", 200)
    assert p["status"] == "undefined" and p["paymentUrl"].startswith("https://")
    assert p["redirectUrl"] == p["paymentUrl"]
    assert r.wait_for(lambda rv: rv.processed)
    body = callback_body(r.requests[-1])
    assert body["status"] == "approved" and body["tid"] == p["tid"]
    assert verify(CALLBACK_SECRET, r.requests[-1]["headers"], r.requests[-1]["body"])


def test_pos_overlapping_polls_charge_once(connector_factory, receiver, stub_server):
    from conftest import request
    r = receiver()
    c = connector_factory(acquirer=stub_server.url, extra_args=CALLBACK_ARGS)
    body = method_body("pos-1", "Venda Direta Credito", r.url())
    first = validate(c.post("/payments", body)[1], "/payments", "post", 200)
    assert first["paymentAppData"]["appName"] == "vtex.terminal-connector-app"
    submit = json.loads(first["paymentAppData"]["payload"])["submitUrl"]
    assert "/pos/pos-1/terminal?token=" in submit
    # Before the terminal is known, polls change nothing and nothing reaches the acquirer.
    assert {x[1] for x in concurrently(8, lambda i: c.post("/payments", body))} == {c.post("/payments", body)[1]}
    assert "pos-1" not in ledger(stub_server)["authorizations"]
    path = submit[submit.index("/pos/"):]
    assert request(c.port, "POST", path, {"serialNumber": "SN-42"}, headers={})[0] == 200
    assert request(c.port, "POST", path, {"serialNumber": "SN-43"}, headers={})[0] == 409
    # The Sales App and the wait app now poll with overlapping calls.
    answers = concurrently(32, lambda i: c.post("/payments", body))
    waiting = {json.loads(a[1])["paymentAppData"]["appName"] for a in answers}
    assert waiting == {"vtex.challenge-wait-for-confirmation"}
    entry = ledger(stub_server)["authorizations"]["pos-1"]
    assert entry["calls"] == 1
    # The stub server has no webhook URL here: the inbound route makes the connector ask.
    request(stub_server.port, "POST", "/trigger", {"paymentId": "pos-1", "outcome": "approve"}, headers={})
    status, raw, _ = c.post("/payments/pos-1/inbound/hook", {"requestId": "in-1", "paymentId": "pos-1",
                                                             "requestData": {"body": "{}"}})
    assert status == 200 and json.loads(raw)["paymentId"] == "pos-1"
    assert r.wait_for(lambda rv: rv.processed)
    final = callback_body(r.requests[-1])
    assert final["status"] == "approved"
    assert final["cardBrand"] and len(final["firstDigits"]) == 6 and len(final["lastDigits"]) == 4
    time.sleep(0.5)
    assert len(r.processed) == 1 and ledger(stub_server)["authorizations"]["pos-1"]["charges"] == 1
    assert c.post("/payments", body)[1] == r.requests[-1]["body"]
