"""Homologation mode: requests marked `X-VTEX-API-Is-TestSuite: true` go to
the deterministic in-process stub whatever acquirer the merchant uses, and so do their
payments' operations and status calls — the merchant's real acquirer (here another stub, out
of process) never hears of them. A merchant may refuse the suite; an entry made for the suite
accepts its mode without credentials, and only from the suite."""
import json

from conftest import APP_KEY, APP_TOKEN, AUTH, CALLBACK_ARGS, create_body, ledger, request
from receiver import callback_body
from schema import validate

SUITE = dict(AUTH, **{"X-VTEX-API-Is-TestSuite": "true"})
CREATE = "/payments"


def post_twice(c, path, body, headers):
    first = c.post(path, body, headers)
    again = c.post(path, body, headers)
    assert again[:2] == first[:2], "a repeated request must get the byte-identical answer"
    return first


def operate(c, pid, route, request_id, value, headers=SUITE):
    body = {"paymentId": pid, "requestId": request_id, "value": value}
    status, raw, _ = post_twice(c, f"/payments/{pid}/{route}", body, headers)
    return status, validate(raw, f"/payments/{{paymentId}}/{route}", "post", status)


def test_homologation_flows_never_reach_the_real_acquirer(connector_factory, stubs, receiver):
    real = stubs("--pending-delay-ms", "300")
    merchants = [{"name": "shop", "appKey": APP_KEY, "appToken": APP_TOKEN, "acquirer": real.url}]
    c = connector_factory(acquirer=real.url, merchants=merchants, extra_args=CALLBACK_ARGS)
    r = receiver()

    def create(pid, headers=SUITE, **kw):
        status, raw, _ = post_twice(c, CREATE, create_body(pid, callbackUrl=r.url(), **kw), headers)
        assert status == 200, raw
        return validate(raw, CREATE, "post", 200)

    # Authorize, then settle and refund.
    assert create("ts-auth", value=100)["status"] == "approved"
    status, settled = operate(c, "ts-auth", "settlements", "ts-auth-s", 100)
    assert status == 200 and settled["settleId"]
    status, refunded = operate(c, "ts-auth", "refunds", "ts-auth-r", 100)
    assert status == 200 and refunded["refundId"]
    # Denied; Cancel.
    assert create("ts-denied", card="4444333322221112")["status"] == "denied"
    assert create("ts-cancel")["status"] == "approved"
    status, cancelled = operate(c, "ts-cancel", "cancellations", "ts-cancel-c", 0)
    assert status == 200 and cancelled["cancellationId"]
    # Async Approved, Async Denied, Redirect: undefined now, the outcome by callback.
    assert create("ts-async-ok", card="4222222222222224")["status"] == "undefined"
    assert create("ts-async-no", card="4222222222222225")["status"] == "undefined"
    redirect = create("ts-redirect", paymentMethod="Promissories")
    assert redirect["status"] == "undefined" and redirect["paymentUrl"] and redirect["redirectUrl"]
    assert r.wait_for(lambda rv: len(rv.processed) >= 3, timeout=30)
    outcomes = {callback_body(q)["paymentId"]: callback_body(q)["status"] for q in r.requests}
    assert outcomes == {"ts-async-ok": "approved", "ts-async-no": "denied", "ts-redirect": "approved"}

    # The real acquirer saw none of it; a request without the header goes to it.
    book = ledger(real)
    assert book["authorizations"] == {} and book["captures"] == {} and book["refunds"] == {}
    assert book["cancellations"] == {}
    assert create("live-1", headers=AUTH)["status"] == "approved"
    assert set(ledger(real)["authorizations"]) == {"live-1"}
    # A test-suite payment keeps the stub for its operations, whoever asks later.
    status, _ = operate(c, "ts-async-ok", "settlements", "ts-late-s", 31.9, headers=AUTH)
    assert status == 200 and ledger(real)["captures"] == {}


def test_a_merchant_may_refuse_the_suite_and_the_suite_may_have_its_own_entry(connector_factory, stubs):
    real = stubs()
    merchants = [{"name": "shop", "appKey": APP_KEY, "appToken": APP_TOKEN, "acquirer": real.url,
                  "testSuite": "refuse"},
                 {"name": "homologation", "appKey": "", "appToken": "", "testSuite": "only"}]
    c = connector_factory(acquirer=real.url, merchants=merchants)
    status, raw, _ = c.post(CREATE, create_body("ts-refused"), SUITE)
    assert status == 400 and validate(raw, CREATE, "post", 400)["code"] == "test-suite-refused"
    assert c.post(CREATE, create_body("live-2"), AUTH)[0] == 200
    status, raw, _ = c.post("/payments/live-2/cancellations", {"paymentId": "live-2", "requestId": "c"}, SUITE)
    assert status == 500 and validate(raw, "/payments/{paymentId}/cancellations", "post", 500)["code"] == \
        "test-suite-refused"

    # The suite's mode without credentials: empty AppKey/AppToken, or none at all.
    bare = {"Content-Type": "application/json", "X-VTEX-API-Is-TestSuite": "true"}
    empty = dict(bare, **{"X-VTEX-API-AppKey": "", "X-VTEX-API-AppToken": ""})
    for i, headers in enumerate([bare, empty]):
        status, raw, _ = c.post(CREATE, create_body(f"ts-bare-{i}"), headers)
        assert status == 200 and json.loads(raw)["status"] == "approved", raw
    # ...and only from the suite: the same request without the header is turned away.
    status, raw, _ = c.post(CREATE, create_body("ts-bare-x"), {"Content-Type": "application/json"})
    assert status == 401, raw
    status, raw, _ = request(c.port, "POST", "/payments/ts-bare-0/settlements",
                             {"paymentId": "ts-bare-0", "requestId": "s", "value": 31.9}, empty)
    assert status == 200, raw
    assert set(ledger(real)["authorizations"]) == {"live-2"} and ledger(real)["captures"] == {}
