"""Several merchants on one connector, tried as the second merchant would: another merchant's
payment answers exactly as a payment that does not exist, on every route, and nothing of it
reaches the acquirer; requestIds belong to their payment; credentials rotate, reload on SIGHUP,
and a bad credentials file is refused at start."""
import json
import signal
import subprocess
import time

import pytest

from conftest import BIN, create_body, ledger

ALPHA = {"name": "alpha", "appKey": "alpha-key", "appToken": ["alpha-old-token", "alpha-new-token"]}
BETA = {"name": "beta", "appKey": "beta-key", "appToken": "beta-token-0123"}


def auth(key, token):
    return {"X-VTEX-API-AppKey": key, "X-VTEX-API-AppToken": token, "Content-Type": "application/json"}


AS_ALPHA, AS_ALPHA_NEW = auth("alpha-key", "alpha-old-token"), auth("alpha-key", "alpha-new-token")
AS_BETA = auth("beta-key", "beta-token-0123")


def operation(payment_id, request_id, value=None):
    body = {"paymentId": payment_id, "requestId": request_id, "transactionId": "tx-" + payment_id}
    if value is not None:
        body["value"] = value
    return body


def inspect(connector, payment_id):
    out = subprocess.run([BIN, "inspect", payment_id, "--json", "--data-dir", str(connector.data_dir)],
                         capture_output=True, check=True)
    return json.loads(out.stdout)


def test_another_merchants_payment_answers_as_if_it_did_not_exist(connector_factory, stub_server):
    c = connector_factory(acquirer=stub_server.url, merchants=[ALPHA, BETA])
    body = create_body("alpha-1", value=40)
    status, raw, _ = c.post("/payments", body, AS_ALPHA)
    assert status == 200
    approved = json.loads(raw)
    assert approved["status"] == "approved"
    book = ledger(stub_server)

    # Beta replays alpha's very request: refused, with nothing of alpha's answer in it, and
    # byte for byte what alpha hears for a different payment under its own id.
    status, foreign, _ = c.post("/payments", body, AS_BETA)
    assert status == 400 and json.loads(foreign)["code"] == "payment-conflict"
    for issued in (approved["tid"], approved["authorizationId"], approved["nsu"]):
        assert issued.encode() not in foreign
    assert c.post("/payments", create_body("alpha-1", value=41), AS_ALPHA)[1] == foreign

    # Every other route: exactly the answer of a payment that does not exist.
    routes = [("settlements", 10), ("refunds", 10), ("cancellations", None)]
    for route, value in routes:
        got = c.post(f"/payments/alpha-1/{route}", operation("alpha-1", f"beta-{route}", value), AS_BETA)
        missing = c.post(f"/payments/nobody-1/{route}", operation("nobody-1", f"beta-{route}", value), AS_BETA)
        assert got[0] == missing[0] == 500, route  # the operation's refusal (its documented 500)
        assert got[1] == missing[1].replace(b"nobody-1", b"alpha-1"), route
    for action in ("inbound/capture", "inbound-request/capture"):
        got = c.post(f"/payments/alpha-1/{action}", {"requestId": "x", "paymentId": "alpha-1"}, AS_BETA)
        missing = c.post(f"/payments/nobody-1/{action}", {"requestId": "x", "paymentId": "nobody-1"}, AS_BETA)
        assert got[0] == missing[0] and got[1] == missing[1].replace(b"nobody-1", b"alpha-1"), action
    assert ledger(stub_server) == book, "another merchant's request reached the acquirer"

    # Alpha still does everything, with either of its tokens (rotation).
    assert c.post("/payments/alpha-1/settlements", operation("alpha-1", "s1", 40), AS_ALPHA_NEW)[0] == 200
    assert c.post("/payments/alpha-1/refunds", operation("alpha-1", "r1", 15), AS_ALPHA)[0] == 200
    assert c.post("/payments", body, AS_ALPHA)[1] == raw, "the owner's replay is unchanged"

    report = inspect(c, "alpha-1")
    assert report["merchant"] == "alpha"
    refused = [e for e in report["audit"] if e["kind"] == "access_refused"]
    assert refused and all(e["actor"] == "beta" for e in refused)
    assert len(refused) == 1 + len(routes) + 2
    assert any(e["actor"] == "alpha" and e["kind"] == "operation_processed" for e in report["audit"])
    verify = subprocess.run([BIN, "audit", "verify", "--data-dir", str(c.data_dir)], capture_output=True)
    assert verify.returncode == 0, verify.stdout


def test_request_ids_are_scoped_to_their_payment(connector_factory, stub_server):
    c = connector_factory(acquirer=stub_server.url, merchants=[ALPHA, BETA])
    assert c.post("/payments", create_body("beta-9", value=30), AS_BETA)[0] == 200
    assert c.post("/payments", create_body("alpha-9", value=30), AS_ALPHA)[0] == 200
    # Beta takes the requestId first; alpha's own use of it is still its own operation.
    first = c.post("/payments/beta-9/settlements", operation("beta-9", "shared-request", 10), AS_BETA)
    second = c.post("/payments/alpha-9/settlements", operation("alpha-9", "shared-request", 20), AS_ALPHA)
    assert first[0] == second[0] == 200, second
    assert json.loads(second[1])["value"] == 20
    captures = ledger(stub_server)["captures"]
    assert captures["beta-9/shared-request"]["calls"] == 1 and captures["beta-9/shared-request"]["amount"] == 10
    assert captures["alpha-9/shared-request"]["calls"] == 1 and captures["alpha-9/shared-request"]["amount"] == 20
    # Replays still answer byte for byte, each on its own payment.
    replay = c.post("/payments/alpha-9/settlements", operation("alpha-9", "shared-request", 20), AS_ALPHA)
    assert replay[:2] == second[:2]  # status and body (each answer has its own X-Request-Id)


def test_sighup_reloads_credentials_without_a_restart(connector_factory):
    c = connector_factory(merchants=[ALPHA])
    assert c.post("/payments", create_body("alpha-h"), AS_ALPHA)[0] == 200
    rotated = dict(ALPHA, appToken="alpha-rotated-token")
    c.creds.write_text(json.dumps({"merchants": [rotated]}))
    c.process.proc.send_signal(signal.SIGHUP)
    deadline = time.time() + 10
    while c.post("/payments/alpha-h/settlements", operation("alpha-h", "s-h", 1), AS_ALPHA)[0] != 401:
        assert time.time() < deadline, "the old token still works after SIGHUP"
        time.sleep(0.1)
    as_rotated = auth("alpha-key", "alpha-rotated-token")
    assert c.post("/payments/alpha-h/settlements", operation("alpha-h", "s-h", 1), as_rotated)[0] == 200, \
        "the merchant (by name) still owns its payment"
    # A broken file is not applied: the credentials in force stay.
    c.creds.write_text('{"merchants": [{"name": "alpha", "appKey": "alpha-key", "appToken": ""}]}')
    c.process.proc.send_signal(signal.SIGHUP)
    time.sleep(1)
    assert b"not reloaded" in c.process.log_path.read_bytes()
    assert c.post("/payments/alpha-h/settlements", operation("alpha-h", "s-h", 1), as_rotated)[0] == 200
    assert c.process.proc.poll() is None


BAD_FILES = {
    "empty-token": '{"merchants": [{"name": "a", "appKey": "k", "appToken": ""}]}',
    "missing-token": '{"merchants": [{"name": "a", "appKey": "k"}]}',
    "null-token": '{"merchants": [{"name": "a", "appKey": "k", "appToken": null}]}',
    "object-token": '{"merchants": [{"name": "a", "appKey": "k", "appToken": {"v": "t"}}]}',
    "empty-in-list": '{"merchants": [{"name": "a", "appKey": "k", "appToken": ["t", ""]}]}',
    "both-tokens": '{"merchants": [{"name": "a", "appKey": "k", "appToken": "t", "appTokenSha256": "' + "0" * 64 + '"}]}',
    "duplicate-app-key": '{"merchants": [{"name": "a", "appKey": "k", "appToken": "t"}, {"name": "b", "appKey": "k", "appToken": "u"}]}',
    "duplicate-name": '{"merchants": [{"name": "a", "appKey": "k", "appToken": "t"}, {"name": "a", "appKey": "k2", "appToken": "u"}]}',
    "duplicate-json-key": '{"merchants": [{"name": "a", "appKey": "k", "appToken": "", "appToken": "t"}]}',
    "misspelt-field": '{"merchants": [{"name": "a", "appKey": "k", "apptoken": "t"}]}',
    "no-merchants": '{"merchants": []}',
    "not-json": '{"merchants": [',
}


@pytest.mark.parametrize("case", sorted(BAD_FILES))
def test_a_bad_credentials_file_is_refused_at_start(tmp_path, case):
    path = tmp_path / "credentials.json"
    path.write_text(BAD_FILES[case])
    run = subprocess.run([BIN, "serve", "--listen", "127.0.0.1:0", "--data-dir", str(tmp_path / "data"),
                          "--credentials", str(path)], capture_output=True, timeout=30)
    assert run.returncode == 2, run.stderr
    assert str(path).encode() in run.stderr and b"error" in run.stderr


def test_the_stub_trigger_is_the_payment_owners_alone(connector_factory):
    """The in-process stub's trigger resolves a pending payment; nobody but its merchant may
    pull it: not a stranger with the homologation suite's empty pair, not another merchant."""
    suite = {"name": "homologation", "appKey": "", "appToken": "", "testSuite": "only"}
    c = connector_factory(merchants=[ALPHA, BETA, suite], extra_args=["--stub-pending-delay-ms", "600000"])
    status, raw, _ = c.post("/payments", create_body("owned-1", card="4222222222222224"), AS_ALPHA)
    assert status == 200 and json.loads(raw)["status"] == "undefined", raw
    trigger = {"paymentId": "owned-1", "outcome": "approve"}
    as_suite = {"X-VTEX-API-Is-TestSuite": "true", "Content-Type": "application/json"}
    assert c.post("/stub/trigger", trigger, {"Content-Type": "application/json"})[0] == 401
    for stranger in (as_suite, AS_BETA):
        status, raw, _ = c.post("/stub/trigger", trigger, stranger)
        assert status == 404 and b"triggered" not in raw, (stranger, raw)
        missing = c.post("/stub/trigger", {"paymentId": "nobody-1", "outcome": "approve"}, stranger)
        assert (missing[0], missing[1]) == (status, raw), "as if the payment did not exist"
    assert json.loads(c.post("/payments", create_body("owned-1", card="4222222222222224"), AS_ALPHA)[1])["status"] \
        == "undefined", "still pending: no stranger resolved it"
    # Its owner may; the trail says who asked, and who was refused.
    assert c.post("/stub/trigger", trigger, AS_ALPHA)[0] == 200
    deadline = time.time() + 10
    while json.loads(c.post("/payments", create_body("owned-1", card="4222222222222224"), AS_ALPHA)[1])["status"] \
            != "approved":
        assert time.time() < deadline
        time.sleep(0.1)
    c.process.terminate()
    trail = inspect(c, "owned-1")["audit"]
    assert [e["actor"] for e in trail if e["kind"] == "acquirer_action_requested"] == ["alpha"]
    refused = {e["actor"] for e in trail if e["kind"] == "access_refused"}
    assert refused == {"beta", "homologation"}, trail
