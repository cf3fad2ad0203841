"""Real overlapping requests against the connector with the out-of-process stub acquirer:
the stub's ledger proves from outside that each payment was charged once (G1)."""
import json

from conftest import concurrently, create_body, ledger

N = 64


def test_simultaneous_creates_charge_once(connector_factory, stub_server):
    connector = connector_factory(acquirer=stub_server.url)
    body = create_body("hot-payment")
    results = concurrently(N, lambda i: connector.post("/payments", body))
    statuses = {r[0] for r in results}
    bodies = {r[1] for r in results}
    assert statuses == {200}
    assert len(bodies) == 1, "all 64 answers must be byte-identical"
    assert json.loads(bodies.pop())["status"] == "approved"
    entry = ledger(stub_server)["authorizations"]["hot-payment"]
    assert entry["calls"] == 1 and entry["charges"] == 1


def test_simultaneous_settlements_capture_once(connector_factory, stub_server):
    connector = connector_factory(acquirer=stub_server.url)
    assert connector.post("/payments", create_body("hot-settle", value=50))[0] == 200
    settle = {"paymentId": "hot-settle", "requestId": "settle-once", "value": 50}
    results = concurrently(N, lambda i: connector.post("/payments/hot-settle/settlements", settle))
    assert {r[0] for r in results} == {200}
    assert len({r[1] for r in results}) == 1
    assert ledger(stub_server)["captures"]["hot-settle/settle-once"]["calls"] == 1


def test_many_distinct_payments_at_once(connector_factory, stub_server):
    connector = connector_factory(acquirer=stub_server.url)
    results = concurrently(N, lambda i: connector.post("/payments", create_body(f"many-{i}")))
    assert {r[0] for r in results} == {200}
    tids = {json.loads(r[1])["tid"] for r in results}
    assert len(tids) == N
    book = ledger(stub_server)["authorizations"]
    assert all(book[f"many-{i}"]["calls"] == 1 for i in range(N))
