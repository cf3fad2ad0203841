"""The operator API (/admin/v1/): its own bearer credentials, roles and merchant scopes, manual
operations through the payment actors, replays and reconciliations with the connector running,
and the Idempotency-Key guard in front of every mutating route — attacked with concurrent
identical requests, changed bodies, restarts and a failing acquirer."""
import json
import threading
import time

import pytest

from conftest import APP_KEY, APP_TOKEN, AUTH, CALLBACK_ARGS, concurrently, create_body, ledger, request
from tcp_proxy import CuttableProxy
from test_instances import SHARED_ARGS
from test_postgres import BASE_URI, pg_uri  # noqa: F401 (a fixture)

OTHER_KEY, OTHER_TOKEN = "other-key", "other-token-0123456789"
MERCHANTS = [{"name": "shop", "appKey": APP_KEY, "appToken": APP_TOKEN},
             {"name": "other", "appKey": OTHER_KEY, "appToken": OTHER_TOKEN}]
OTHER_AUTH = {"X-VTEX-API-AppKey": OTHER_KEY, "X-VTEX-API-AppToken": OTHER_TOKEN, "Content-Type": "application/json"}
ROOT, READER, LIMITED = "root-operator-token-0001", "reader-operator-token-02", "limited-operator-token-3"
OPERATORS = [{"name": "alice", "token": ROOT, "role": "act", "merchants": ["*"]},
             {"name": "bob", "token": READER, "role": "read", "merchants": ["*"]},
             {"name": "carol", "token": LIMITED, "role": "act", "merchants": ["other"]}]


def bearer(token, key=None):
    h = {"Authorization": "Bearer " + token, "Content-Type": "application/json"}
    if key is not None:
        h["Idempotency-Key"] = key
    return h


def admin(c, method, path, token=ROOT, body=None, key=None, headers=None):
    status, raw, h = request(c.port, method, "/admin/v1/" + path, body,
                             headers if headers is not None else bearer(token, key))
    return status, raw, h


def approved(c, pid, auth=AUTH, value=10):
    status, raw, _ = request(c.port, "POST", "/payments", create_body(pid, value=value), auth)
    assert status == 200 and json.loads(raw)["status"] == "approved", raw
    return json.loads(raw)


def connector(connector_factory, stub, *extra):
    return connector_factory(acquirer=stub.url, merchants=MERCHANTS, operators=OPERATORS, extra_args=list(extra))


def test_operators_and_merchants_never_open_each_others_routes(connector_factory, stubs):
    c = connector(connector_factory, stubs())
    approved(c, "auth-1")
    assert admin(c, "GET", "me")[0] == 200
    assert json.loads(admin(c, "GET", "me")[1]) == {"name": "alice", "role": "act", "merchants": ["*"]}
    # A merchant's AppKey/AppToken does not open the operator API...
    assert admin(c, "GET", "payments", headers=AUTH)[0] == 401
    # ...nor does an operator token open the PPP routes, in any header.
    assert request(c.port, "POST", "/payments", create_body("auth-2"), bearer(ROOT))[0] == 401
    assert request(c.port, "POST", "/payments", create_body("auth-2"),
                   {"X-VTEX-API-AppKey": "alice", "X-VTEX-API-AppToken": ROOT})[0] == 401
    for headers in ({}, {"Authorization": "Bearer "}, {"Authorization": "Bearer wrong-token-xxxxxxxx"},
                    {"Authorization": "Basic " + ROOT}, {"Authorization": ROOT}):
        assert admin(c, "GET", "payments", headers=headers)[0] == 401, headers
    # The console's files need no credentials and fetch nothing from elsewhere.
    status, page, h = request(c.port, "GET", "/admin/", headers={})
    assert status == 200 and h["content-type"].startswith("text/html")
    assert "default-src 'none'" in h["content-security-policy"]
    assert b"http://" not in page and b"https://" not in page


def test_wrong_operator_tokens_are_throttled(connector_factory, stubs):
    c = connector(connector_factory, stubs())
    statuses = [admin(c, "GET", "me", token=f"guess-{i:020d}")[0] for i in range(24)]
    assert statuses[:20] == [401] * 20 and statuses[-1] == 429, statuses
    # A valid token is never refused by the throttle (no lockout by a stranger's guesses)...
    assert admin(c, "GET", "me")[0] == 200
    # ...while more guesses from the source still are.
    assert admin(c, "GET", "me", token="guess-x" * 4)[0] == 429
    log = c.process.log_path.read_text()
    assert "wrong credentials from 127.0.0.1 (bearer token on /admin/v1/me)" in log
    assert "guess-" not in log  # no part of a token is logged


def test_roles_and_merchant_scopes(connector_factory, stubs):
    stub = stubs()
    c = connector(connector_factory, stub)
    approved(c, "scope-shop")
    approved(c, "scope-other", auth=OTHER_AUTH)
    seen = lambda token, q="": {p["paymentId"] for p in json.loads(admin(c, "GET", "payments" + q, token=token)[1])["payments"]}
    assert seen(ROOT) == {"scope-shop", "scope-other"}
    assert seen(READER) == {"scope-shop", "scope-other"}
    assert seen(LIMITED) == {"scope-other"}
    assert seen(ROOT, "?merchant=other") == {"scope-other"}
    assert admin(c, "GET", "payments?merchant=shop", token=LIMITED)[0] == 403
    # Another merchant's payment is not there for an operator limited to one.
    assert admin(c, "GET", "payments/scope-shop", token=LIMITED)[0] == 404
    assert admin(c, "GET", "payments/scope-other", token=LIMITED)[0] == 200
    assert admin(c, "POST", "payments/scope-shop/refunds", token=LIMITED, body={"value": 1, "reason": "x"},
                 key="k-limited")[0] == 404
    # A read-only operator cannot act, whatever the route.
    for route, body in (("payments/scope-shop/settlements", {"value": 10, "reason": "r"}),
                        ("payments/scope-shop/cancellations", {"reason": "r"}),
                        ("payments/scope-shop/reconcile", {}), ("deliveries/dlv_scope-shop_1/replay", {})):
        assert admin(c, "POST", route, token=READER, body=body, key="k-read")[0] == 403, route
    assert "scope-shop" not in json.dumps(ledger(stub).get("refunds", {}))


def test_search_is_paginated_and_bounded(connector_factory, stubs):
    c = connector(connector_factory, stubs())
    for i in range(7):
        approved(c, f"page-{i}")
    pages, cursor = [], None
    while True:
        status, raw, _ = admin(c, "GET", "payments?limit=3" + (f"&cursor={cursor}" if cursor else ""))
        assert status == 200
        page = json.loads(raw)
        pages.append([p["paymentId"] for p in page["payments"]])
        cursor = page["nextCursor"]
        if not cursor:
            break
    assert sum(pages, []) == sorted(f"page-{i}" for i in range(7))
    assert all(len(p) <= 3 for p in pages)
    for bad in ("limit=0", "limit=201", "limit=x", "cursor=zz", "state=%zz"):
        assert admin(c, "GET", "payments?" + bad)[0] in (400,), bad
    assert json.loads(admin(c, "GET", "payments?state=approved")[1])["payments"]
    assert json.loads(admin(c, "GET", "payments?state=settled")[1])["payments"] == []


def test_manual_operations_go_through_the_payment_and_its_audit_trail(connector_factory, stubs):
    stub = stubs()
    c = connector(connector_factory, stub)
    approved(c, "manual-1", value=10)
    status, raw, _ = admin(c, "POST", "payments/manual-1/settlements", body={"value": 10, "reason": "phone order"},
                           key="settle-1")
    assert status == 200, raw
    status, raw, h = admin(c, "POST", "payments/manual-1/refunds", body={"value": 4.5, "reason": "customer called"},
                           key="refund-1")
    assert status == 200 and json.loads(raw)["value"] == 4.5, raw
    assert "idempotent-replayed" not in h
    again = admin(c, "POST", "payments/manual-1/refunds", body={"reason": "customer called", "value": 4.50},
                  key="refund-1")
    assert again[0] == 200 and again[1] == raw and again[2]["idempotent-replayed"] == "true"
    detail = json.loads(admin(c, "GET", "payments/manual-1")[1])
    assert detail["state"] == "refunded" and detail["refunded"] == 4.5 and detail["settled"] == 10
    received = [e["detail"] for e in detail["audit"] if e["kind"] == "operation_received"]
    assert "settlement by operator alice: phone order" in received
    assert "refund by operator alice: customer called" in received
    book = ledger(stub)
    refunds = [r for k, r in book.get("refunds", {}).items() if k.startswith("manual-1/")]
    assert len(refunds) == 1, book
    # Bodies are checked before anything runs.
    for body in ({"value": 1}, {"reason": "x"}, {"value": -1, "reason": "x"}, {"value": 1, "reason": "x", "extra": 1},
                 {"value": "1", "reason": "x"}, {"value": 1.234, "reason": "x"}, {"value": 1, "reason": "x" * 501}):
        assert admin(c, "POST", "payments/manual-1/refunds", body=body, key=f"bad-{len(json.dumps(body))}")[0] == 400
    assert admin(c, "POST", "payments/nobody/refunds", body={"value": 1, "reason": "x"}, key="nobody")[0] == 404


def test_a_hundred_identical_keyed_refunds_refund_once(connector_factory, stubs):
    stub = stubs("--latency-ms", "200")
    c = connector(connector_factory, stub)
    approved(c, "burst-1", value=20)
    assert admin(c, "POST", "payments/burst-1/settlements", body={"value": 20, "reason": "r"}, key="s")[0] == 200
    body = {"value": 5, "reason": "double click"}
    results = concurrently(100, lambda i: admin(c, "POST", "payments/burst-1/refunds", body=body, key="burst-key"))
    statuses = [s for s, _, _ in results]
    assert set(statuses) <= {200, 409}, statuses
    assert 409 in statuses  # repeats while the first was in flight
    assert all(h.get("retry-after") for s, _, h in results if s == 409)
    answers = {raw for s, raw, _ in results if s == 200}
    assert len(answers) <= 1
    final = admin(c, "POST", "payments/burst-1/refunds", body=body, key="burst-key")
    assert final[0] == 200 and final[2]["idempotent-replayed"] == "true"
    assert answers <= {final[1]}
    refunds = [r for k, r in ledger(stub).get("refunds", {}).items() if k.startswith("burst-1/")]
    assert len(refunds) == 1 and refunds[0]["amount"] == 5, refunds
    assert json.loads(admin(c, "GET", "payments/burst-1")[1])["refunded"] == 5


def test_keys_are_validated_scoped_and_bound_to_their_body(connector_factory, stubs):
    c = connector(connector_factory, stubs())
    approved(c, "keys-1", value=10)
    settle = {"value": 10, "reason": "r"}
    assert admin(c, "POST", "payments/keys-1/settlements", body=settle)[0] == 400  # no key
    for key in ("", "x" * 256, "caf\u00e9"):
        headers = bearer(ROOT)
        headers["Idempotency-Key"] = key
        try:
            status = admin(c, "POST", "payments/keys-1/settlements", body=settle, headers=headers)[0]
        except UnicodeEncodeError:
            continue
        assert status == 400, key
    headers = bearer(ROOT)
    headers["X-Idempotency-Key"] = "xk-1"
    assert admin(c, "POST", "payments/keys-1/settlements", body=settle, headers=headers)[0] == 200
    # The same key under the other header name is the same key...
    replay = admin(c, "POST", "payments/keys-1/settlements", body=settle, key="xk-1")
    assert replay[0] == 200 and replay[2]["idempotent-replayed"] == "true"
    # ...bound to its body (whatever the order of its members)...
    assert admin(c, "POST", "payments/keys-1/settlements", body={"reason": "r", "value": 10}, key="xk-1")[0] == 200
    status, raw, _ = admin(c, "POST", "payments/keys-1/settlements", body={"value": 9, "reason": "r"}, key="xk-1")
    assert status == 422, raw
    # ...and scoped by operator and route: another route with the key runs on its own.
    status, _, h = admin(c, "POST", "payments/keys-1/reconcile", body={}, key="xk-1")
    assert status == 200 and "idempotent-replayed" not in h


def test_answers_survive_a_restart_and_a_failed_first_attempt_does_not_lock_the_key(connector_factory, stubs):
    stub = stubs()
    proxy = CuttableProxy(stub.port)
    c = connector_factory(acquirer=f"http://127.0.0.1:{proxy.port}", merchants=MERCHANTS, operators=OPERATORS,
                          extra_args=["--acquirer-timeout-ms", "1000"])
    try:
        approved(c, "restart-1", value=10)
        assert admin(c, "POST", "payments/restart-1/settlements", body={"value": 10, "reason": "r"}, key="s1")[0] == 200
        proxy.forwarding.clear()  # the acquirer cannot be reached: the refund fails, retryably
        body = {"value": 3, "reason": "retry me"}
        status, raw, _ = admin(c, "POST", "payments/restart-1/refunds", body=body, key="r1")
        assert status in (500, 503), raw
        proxy.forwarding.set()
        deadline = time.time() + 30
        while True:  # the retry runs (a 409 only while the first attempt's recovery is still at work)
            status, first, h = admin(c, "POST", "payments/restart-1/refunds", body=body, key="r1")
            if status == 200 or time.time() > deadline:
                break
            time.sleep(0.3)
        assert status == 200, first
        c.process.kill()
        c.start()
        again = admin(c, "POST", "payments/restart-1/refunds", body=body, key="r1")
        assert again[0] == 200 and again[1] == first and again[2]["idempotent-replayed"] == "true"
        refunds = [r for k, r in ledger(stub).get("refunds", {}).items() if k.startswith("restart-1/")]
        assert len(refunds) == 1 and refunds[0]["amount"] == 3, refunds
    finally:
        proxy.close()


def test_in_flight_repeats_get_409_and_expired_keys_are_free_again(connector_factory, stubs):
    stub = stubs("--latency-ms", "1500")
    c = connector(connector_factory, stub, "--idempotency-retention-s", "2")
    approved(c, "flight-1", value=10)
    assert admin(c, "POST", "payments/flight-1/settlements", body={"value": 10, "reason": "r"}, key="s")[0] == 200
    body = {"value": 2, "reason": "slow"}
    first = {}
    t = threading.Thread(target=lambda: first.update(r=admin(c, "POST", "payments/flight-1/refunds", body=body, key="f")))
    t.start()
    time.sleep(0.5)
    status, _, h = admin(c, "POST", "payments/flight-1/refunds", body=body, key="f")
    assert status == 409 and h["retry-after"] == "1"
    t.join()
    assert first["r"][0] == 200
    assert admin(c, "POST", "payments/flight-1/refunds", body={"value": 3, "reason": "x"}, key="f")[0] == 422
    time.sleep(2.5)  # past the retention: the key is free, a different body is no longer refused
    status, _, h = admin(c, "POST", "payments/flight-1/refunds", body={"value": 3, "reason": "x"}, key="f")
    assert status != 422 and "idempotent-replayed" not in h


def test_dead_letters_are_replayed_and_payments_reconciled_while_running(connector_factory, receiver):
    r = receiver(script=["410"])
    c = connector_factory(merchants=MERCHANTS, operators=OPERATORS, extra_args=CALLBACK_ARGS)
    status, _, _ = c.post("/payments", create_body("dead-1", card="4222222222222224", callbackUrl=r.url()))
    assert status == 200
    deadline = time.time() + 20
    while True:
        detail = json.loads(admin(c, "GET", "payments/dead-1")[1])
        dead = [d for d in detail["deliveries"] if d["dead"]]
        if dead or time.time() > deadline:
            break
        time.sleep(0.2)
    assert dead, detail
    delivery = dead[0]["deliveryId"]
    status, raw, _ = admin(c, "POST", f"deliveries/{delivery}/replay", body={}, key="replay-1")
    assert status == 200 and json.loads(raw) == {"deliveryId": delivery, "paymentId": "dead-1", "status": "pending"}
    deadline = time.time() + 20
    while len(r.requests) < 2 and time.time() < deadline:
        time.sleep(0.1)
    assert len(r.requests) == 2
    assert r.requests[0]["headers"]["webhook-id"] == r.requests[1]["headers"]["webhook-id"] == delivery
    again = admin(c, "POST", f"deliveries/{delivery}/replay", body={}, key="replay-1")
    assert again[0] == 200 and again[2]["idempotent-replayed"] == "true"
    assert admin(c, "POST", f"deliveries/{delivery}/replay", body={}, key="replay-2")[0] in (404, 409)
    assert admin(c, "POST", "deliveries/dlv_nothing_1/replay", body={}, key="replay-3")[0] == 404
    # Reconcile: no key needed (fingerprint mode); a repeat within the window gets the first answer.
    status, raw, h = admin(c, "POST", "payments/dead-1/reconcile", body={})
    assert status == 200 and json.loads(raw)["paymentId"] == "dead-1" and "idempotent-replayed" not in h
    again = admin(c, "POST", "payments/dead-1/reconcile", body={})
    assert again[1] == raw and again[2]["idempotent-replayed"] == "true"


@pytest.mark.skipif(not BASE_URI, reason="IDEMPAY_TEST_PG_URI is not set: no PostgreSQL server")
def test_two_instances_on_postgresql_share_the_keys(connector_factory, stubs, pg_uri):
    """Two instances on one PostgreSQL database: the same keyed refund sent to both at once
    refunds once, and either instance replays the stored answer."""
    stub = stubs("--latency-ms", "300")
    nodes = [connector_factory(acquirer=stub.url, merchants=MERCHANTS, operators=OPERATORS,
                               extra_args=["--store", pg_uri, *SHARED_ARGS]) for _ in range(2)]
    approved(nodes[0], "pg-op-1", value=10)
    assert admin(nodes[1], "POST", "payments/pg-op-1/settlements", body={"value": 10, "reason": "r"},
                 key="pg-s")[0] == 200
    body = {"value": 4, "reason": "two consoles"}
    results = concurrently(20, lambda i: admin(nodes[i % 2], "POST", "payments/pg-op-1/refunds", body=body,
                                               key="pg-r"))
    assert {s for s, _, _ in results} <= {200, 409}, [s for s, _, _ in results]
    for node in nodes:
        deadline = time.time() + 20
        while (answer := admin(node, "POST", "payments/pg-op-1/refunds", body=body, key="pg-r"))[0] == 409:
            assert time.time() < deadline
            time.sleep(0.2)
        assert answer[0] == 200 and answer[2]["idempotent-replayed"] == "true"
    refunds = [r for k, r in ledger(stub).get("refunds", {}).items() if k.startswith("pg-op-1/")]
    assert len(refunds) == 1 and refunds[0]["amount"] == 4, refunds
    seen = {p["paymentId"] for p in json.loads(admin(nodes[1], "GET", "payments")[1])["payments"]}
    assert seen == {"pg-op-1"}


def raw_request(port, lines, body=b""):
    """A request written byte for byte (repeated headers, numbers Python's json would alter)."""
    import socket
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(b"\r\n".join(lines) + b"\r\nContent-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
    out = b""
    s.settimeout(10)
    while b"\r\n\r\n" not in out or len(out.split(b"\r\n\r\n", 1)[1]) < int(
            out.lower().split(b"content-length: ")[1].split(b"\r\n")[0]):
        chunk = s.recv(65536)
        if not chunk:
            break
        out += chunk
    s.close()
    return int(out[9:12]), out.split(b"\r\n\r\n", 1)[1]


def settled(c, pid, value=10):
    approved(c, pid, value=value)
    assert request(c.port, "POST", f"/payments/{pid}/settlements",
                   {"paymentId": pid, "requestId": f"s-{pid}", "value": value}, AUTH)[0] == 200


def test_one_key_is_one_refund_however_the_route_is_spelled(connector_factory, stubs):
    stub = stubs()
    c = connector(connector_factory, stub)
    settled(c, "spell-1")
    body = {"value": 2, "reason": "returned"}
    first = admin(c, "POST", "payments/spell-1/refunds", body=body, key="one-key")
    assert first[0] == 200, first
    for spelling in ("payments/spell-1/refunds/", "payments/spell%2D1/refunds", "payments/%73pell-1/refunds/"):
        again = admin(c, "POST", spelling, body=body, key="one-key")
        assert again[:2] == first[:2] and again[2]["idempotent-replayed"] == "true", spelling
    refunds = [r for k, r in ledger(stub).get("refunds", {}).items() if k.startswith("spell-1/")]
    assert len(refunds) == 1 and refunds[0]["amount"] == 2, refunds


def test_search_cursors_are_sealed_and_cannot_be_chosen(connector_factory, stubs):
    c = connector(connector_factory, stubs())
    for i in range(4):
        approved(c, f"cur-shop-{i}")
        approved(c, f"cur-other-{i}", auth=OTHER_AUTH)
    seen, cursor = [], None
    while True:
        status, raw, _ = admin(c, "GET", "payments?limit=1" + (f"&cursor={cursor}" if cursor else ""), token=LIMITED)
        assert status == 200, raw
        page = json.loads(raw)
        seen += [p["paymentId"] for p in page["payments"]]
        cursor = page["nextCursor"]
        if not cursor:
            break
        # Opaque: no payment id can be read out of it.
        assert all(pid.encode().hex() not in cursor for pid in ("cur-shop-0", "cur-other-0", "cur-other-1"))
    assert seen == [f"cur-other-{i}" for i in range(4)]
    # A cursor made up by the operator (a payment id of another merchant's, to walk past it) is
    # refused, and so is an altered one.
    for made_up in ("cur-shop-1".encode().hex(), json.loads(admin(c, "GET", "payments?limit=1")[1])
                    ["nextCursor"][:-2] + "00"):
        assert admin(c, "GET", f"payments?cursor={made_up}", token=LIMITED)[0] == 400, made_up


def test_operator_text_and_amounts_follow_the_protocols_rules(connector_factory, stubs):
    stub = stubs()
    c = connector(connector_factory, stub)
    settled(c, "rules-1")
    # Control characters in a reason would forge audit lines and drive operators' terminals
    # (C1's U+009B is a CSI to some), and bidirectional overrides reorder what a reader sees.
    for reason in ("ok\x1b[31m red", "line\r\nforged line", "nul\x00byte", "c1\u009b2J", "next\u0085line",
                   "refund \u202eevil\u202c", "isolate\u2066x\u2069"):
        status, raw, _ = admin(c, "POST", "payments/rules-1/refunds", body={"value": 1, "reason": reason},
                               key="k-" + reason.encode().hex())
        assert status == 400 and b"control or bidirectional" in raw, (reason, raw)
    # Amounts are decimals read from their text, as on Create Payment: never rounded.
    head = [b"POST /admin/v1/payments/rules-1/refunds HTTP/1.1", b"Host: x", b"Authorization: Bearer " + ROOT.encode(),
            b"Content-Type: application/json", b"Idempotency-Key: rounding"]
    status, raw = raw_request(c.port, head, b'{"value":1.999999999999999999999,"reason":"r"}')
    assert status == 400 and b"two decimals" in raw, raw
    # The same value spelled otherwise is the same request: its replay, not a 422.
    first = raw_request(c.port, head[:-1] + [b"Idempotency-Key: spelled"], b'{"value":1,"reason":"r"}')
    again = raw_request(c.port, head[:-1] + [b"Idempotency-Key: spelled"], b'{"reason":"r","value":1.00}')
    assert first[0] == 200 and again == first, (first, again)
    # One key, in one header.
    status, raw = raw_request(c.port, head[:-1] + [b"Idempotency-Key: a", b"Idempotency-Key: b"],
                              b'{"value":1,"reason":"r"}')
    assert status == 400, raw
    status, raw = raw_request(c.port, head[:-1] + [b"Idempotency-Key: a", b"X-Idempotency-Key: a"],
                              b'{"value":1,"reason":"r"}')
    assert status == 400, raw
    refunds = [r for k, r in ledger(stub).get("refunds", {}).items() if k.startswith("rules-1/")]
    assert [r["amount"] for r in refunds] == [1], refunds


def test_api_answers_are_never_cached_or_sniffed_and_unknown_routes_are_404(connector_factory, stubs):
    c = connector(connector_factory, stubs(), "--metrics-listen", "127.0.0.1:0")
    approved(c, "cache-1")
    for method, path, token in (("GET", "me", ROOT), ("GET", "payments/cache-1", ROOT), ("GET", "nope", ROOT),
                                ("POST", "me", ROOT), ("GET", "payments/cache-1", LIMITED)):
        status, _, h = admin(c, method, path, token=token)
        assert h.get("cache-control") == "no-store" and h.get("x-content-type-options") == "nosniff", (path, h)
    # Paths no route has are 404 (RFC 7807) before any credential is looked at: a browser's
    # favicon request or a scanner's probe is not a wrong credential, and locks nobody out.
    from test_metrics import metrics_port
    def wrong_credentials():
        body = request(metrics_port(c), "GET", "/metrics", headers={})[1].decode()
        return sum(float(l.split()[-1]) for l in body.splitlines() if l.startswith("idempay_auth_failures_total"))
    before = wrong_credentials()
    for path in ("/favicon.ico", "/robots.txt", "/ADMIN/v1", "/admin/v1/nope", "/payments/x/nope"):
        for headers in ({}, bearer(ROOT), AUTH):
            status, raw, h = request(c.port, "GET", path, headers=headers)
            assert status == 404 and h["content-type"] == "application/problem+json", (path, status, raw)
    assert wrong_credentials() == before
    assert admin(c, "GET", "me")[0] == 200
