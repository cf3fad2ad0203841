"""The public POS route as an attacker would use it: without the payment's own link token,
a terminal cannot be bound, and the refusal is the same whether or not the payment exists."""
import json

from conftest import CALLBACK_ARGS, create_body, request


def pos_payment(connector, payment_id):
    body = create_body(payment_id, paymentMethod="Venda Direta Credito")
    body["card"] = {"holder": None, "number": None, "csc": None, "expiration": {"month": None, "year": None}}
    status, raw, _ = connector.post("/payments", body)
    assert status == 200, raw
    submit = json.loads(json.loads(raw)["paymentAppData"]["payload"])["submitUrl"]
    return submit[submit.index("/pos/"):]


def submit(connector, path, serial="SN-1"):
    status, raw, _ = request(connector.port, "POST", path, {"serialNumber": serial}, headers={})
    return status, raw


def test_terminal_submission_needs_the_payments_own_link(connector_factory):
    c = connector_factory(extra_args=CALLBACK_ARGS)
    link = pos_payment(c, "pos-link-1")
    other = pos_payment(c, "pos-link-2")
    token = link.split("token=")[1]
    assert len(token) == 32
    attempts = {
        "no token": "/pos/pos-link-1/terminal",
        "empty token": "/pos/pos-link-1/terminal?token=",
        "wrong token": "/pos/pos-link-1/terminal?token=" + "0" * 32,
        "truncated token": "/pos/pos-link-1/terminal?token=" + token[:-1],
        "another payment's token": "/pos/pos-link-1/terminal?" + other.split("?")[1],
    }
    never_existed = submit(c, "/pos/pos-link-9/terminal?token=" + token)
    assert never_existed[0] == 404
    for name, path in attempts.items():
        status, raw = submit(c, path)
        assert status == 404, name
        assert raw == never_existed[1].replace(b"pos-link-9", b"pos-link-1"), name
    # An ordinary card payment answers exactly like a payment that does not exist, too.
    assert c.post("/payments", create_body("card-1"))[0] == 200
    assert submit(c, "/pos/card-1/terminal?token=" + "0" * 32) == \
        (404, never_existed[1].replace(b"pos-link-9", b"card-1"))
    # The payment's own link binds the terminal, once.
    assert submit(c, link)[0] == 200
    assert submit(c, link, "SN-2")[0] == 409
