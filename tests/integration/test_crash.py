"""SIGKILL the connector after a run of payments; on the same data directory every earlier
answer comes back byte for byte, and nothing is authorized again (G2, G4)."""
import json

from conftest import create_body, ledger


def test_answers_survive_sigkill(connector_factory, stub_server):
    connector = connector_factory(acquirer=stub_server.url)
    answers = {}
    for i in range(20):
        pid = f"crash-{i}"
        answers[("/payments", pid)] = connector.post("/payments", create_body(pid, value=10))
        if i % 2 == 0:
            path = f"/payments/{pid}/settlements"
            answers[(path, pid)] = connector.post(path, {"paymentId": pid, "requestId": f"s-{pid}", "value": 10})
    assert all(status == 200 for status, _, _ in answers.values())

    connector.process.kill()
    connector.start()

    for (path, pid), (status, raw, _) in answers.items():
        body = create_body(pid, value=10) if path == "/payments" else \
            {"paymentId": pid, "requestId": f"s-{pid}", "value": 10}
        again = connector.post(path, body)
        assert again[0] == status
        assert again[1] == raw, f"{path} for {pid} changed after the crash"
    book = ledger(stub_server)
    assert all(book["authorizations"][f"crash-{i}"]["calls"] == 1 for i in range(20))
    assert all(book["captures"][f"crash-{i}/s-crash-{i}"]["calls"] == 1 for i in range(0, 20, 2))
