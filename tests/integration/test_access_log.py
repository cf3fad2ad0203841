"""The access log: one JSON line per answered request, refusals
included, with the request id the caller sent (or one generated) echoed in X-Request-Id, the
route template, the paymentId, the status, the latency, the merchant and the outcome — and
never a body, a query string, a credential or a card field."""
import json
import re
import time

from conftest import APP_TOKEN, AUTH, create_body, request


def test_one_line_per_request_with_the_request_id_and_nothing_secret(connector_factory, tmp_path):
    log = tmp_path / "access.log"
    c = connector_factory(extra_args=["--access-log", str(log)])
    status, _, headers = c.post("/payments", create_body("al-1"), dict(AUTH, **{"X-Request-Id": "gw-req-1"}))
    assert status == 200 and headers["x-request-id"] == "gw-req-1"
    status, _, headers = c.post("/payments/al-1/settlements", {"paymentId": "al-1", "requestId": "s-1", "value": 31.9})
    assert status == 200 and re.fullmatch(r"[0-9a-f]{16}", headers["x-request-id"])
    unsafe = c.post("/payments", create_body("al-2"), dict(AUTH, **{"X-Request-Id": "a b\tc"}))[2]["x-request-id"]
    assert re.fullmatch(r"[0-9a-f]{16}", unsafe)  # an id that cannot be logged as is is replaced
    status, _, headers = c.post("/payments", create_body("al-3"), {"X-VTEX-API-AppKey": "nope",
                                                                   "X-VTEX-API-AppToken": "wrong"})
    assert status == 401 and headers["x-request-id"]
    request(c.port, "POST", "/pos/al-9/terminal?token=secret-link-token", {"serialNumber": "T1"}, {})
    request(c.port, "GET", "/no/such/route", None, {})

    deadline = time.time() + 5  # written by the asynchronous logger
    while len(log.read_text().splitlines()) < 6 and time.time() < deadline:
        time.sleep(0.05)
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    assert len(lines) == 6, lines
    create, settle, _, refused, pos, unknown = lines
    assert create["requestId"] == "gw-req-1" and create["route"] == "/payments" and create["status"] == 200
    assert create["merchant"] == "shop" and create["outcome"] == "done" and create["method"] == "POST"
    assert isinstance(create["latencyMs"], float) and create["time"].endswith("Z")
    assert settle["route"] == "/payments/{paymentId}/settlements" and settle["paymentId"] == "al-1"
    assert settle["operationRequestId"] == "s-1"
    assert refused["status"] == 401 and "merchant" not in refused
    assert pos["route"] == "/pos/{paymentId}/terminal" and pos["paymentId"] == "al-9"
    assert unknown["route"] == "unknown" and unknown["status"] == 404  # no such route: before any credential
    raw = log.read_bytes()
    for secret in [b"4444333322221111", APP_TOKEN.encode(), b"wrong", b"secret-link-token", b"John Doe", b"123\""]:
        assert secret not in raw, secret


def test_the_log_tells_a_first_answer_from_a_reused_one_and_a_conflict(connector_factory, tmp_path):
    log = tmp_path / "access.log"
    c = connector_factory(extra_args=["--access-log", str(log)])
    assert c.post("/payments", create_body("al-r"))[0] == 200
    assert c.post("/payments", create_body("al-r"))[0] == 200                 # the gateway's retry
    assert c.post("/payments", create_body("al-r", value=1))[0] == 400        # another payment, same id
    settle = {"paymentId": "al-r", "requestId": "s-r", "value": 31.9}
    assert c.post("/payments/al-r/settlements", settle)[0] == 200
    assert c.post("/payments/al-r/settlements", settle)[0] == 200
    deadline = time.time() + 5
    while len(log.read_text().splitlines()) < 5 and time.time() < deadline:
        time.sleep(0.05)
    answers = [json.loads(line)["answer"] for line in log.read_text().splitlines()]
    assert answers == ["first", "reused", "conflict", "first", "reused"], answers
