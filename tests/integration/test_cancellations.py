"""Cancellations as the protocol specifies them (docs/ppp-surface.md#refunds-and-cancellations): every answer in the Cancel
shape the official document lists (200, or 500 with `cancellationId: null`), each repeat byte
for byte, and the acquirer's ledger showing a void only where money was held."""
import subprocess

from conftest import BIN, create_body, ledger
from schema import validate

CANCEL = "/payments/{paymentId}/cancellations"


def cancel(c, pid, request_id):
    status, raw, _ = c.post(f"/payments/{pid}/cancellations", {"paymentId": pid, "requestId": request_id})
    doc = validate(raw, CANCEL, "post", status)
    assert c.post(f"/payments/{pid}/cancellations", {"paymentId": pid, "requestId": request_id})[:2] == (status, raw)
    return status, doc, raw


def test_cancels_in_every_state_answer_as_the_gateway_expects(connector_factory, stub_server):
    c = connector_factory(acquirer=stub_server.url)
    denied = c.post("/payments", create_body("cx-denied", card="4444333322221112"))[1]
    c.post("/payments", create_body("cx-approved"))
    pending = c.post("/payments", create_body("cx-pending", card="4222222222222224"))[1]
    assert b'"undefined"' in pending

    # Approved: voided at the acquirer; a second cancel (another requestId) answers with that void.
    status, first, _ = cancel(c, "cx-approved", "c1")
    assert status == 200 and first["cancellationId"] and first["code"] is None
    status, second, _ = cancel(c, "cx-approved", "c2")
    assert status == 200 and second["cancellationId"] == first["cancellationId"]

    # Denied: nothing held, nothing sent to the acquirer; the Cancel answer, not an error.
    status, doc, _ = cancel(c, "cx-denied", "c1")
    assert status == 200 and doc["cancellationId"] and "denied" in doc["message"]
    assert c.post("/payments", create_body("cx-denied", card="4444333322221112"))[1] == denied

    # Cancelled while undefined: voided, and Create Payment answers `denied` from then on.
    status, doc, _ = cancel(c, "cx-pending", "c1")
    assert status == 200 and doc["cancellationId"]
    status, raw, _ = c.post("/payments", create_body("cx-pending", card="4222222222222224"))
    assert status == 200 and validate(raw, "/payments", "post", 200)["status"] == "denied"

    book = ledger(stub_server)
    assert book["cancellations"]["cx-approved/c1"]["calls"] == 1 and book["cancellations"]["cx-approved/c1"]["succeeded"]
    assert book["cancellations"]["cx-pending/c1"]["succeeded"]
    assert "cx-approved/c2" not in book["cancellations"] and "cx-denied/c1" not in book["cancellations"]
    verified = subprocess.run([BIN, "audit", "verify", "--data-dir", str(c.data_dir)], capture_output=True, text=True)
    assert verified.returncode == 0, verified.stdout + verified.stderr


def test_a_cancel_of_an_unknown_outcome_asks_the_acquirer_then_voids(connector_factory, stub_server):
    """The authorization reaches the acquirer but its answer never comes back (a proxy that
    stops forwarding): the payment is left unknown, then orphaned. A cancel while the acquirer
    is unreachable is a 500 in the Cancel shape; once it answers again, the same cancel asks
    what happened (approved), records it and voids it: 200, one void in the ledger."""
    import time
    import urllib.parse
    from tcp_proxy import CuttableProxy
    proxy = CuttableProxy(urllib.parse.urlsplit(stub_server.url).port)
    try:
        c = connector_factory(acquirer=f"http://127.0.0.1:{proxy.port}",
                              extra_args=["--acquirer-timeout-ms", "500", "--reconcile-base-ms", "50",
                                          "--reconcile-attempts", "2"])
        body = create_body("cx-unknown")
        proxy.answers.clear()  # the authorization reaches the stub; its answer never comes back
        status, raw, _ = c.post("/payments", body)
        assert status == 200 and validate(raw, "/payments", "post", 200)["status"] == "undefined"
        assert ledger(stub_server)["authorizations"]["cx-unknown"]["charges"] == 1
        time.sleep(2)  # the background status calls fail too: orphaned
        status, doc, _ = cancel(c, "cx-unknown", "c1")
        assert status == 500 and doc["cancellationId"] is None and doc["code"] == "outcome-unknown"

        proxy.answers.set()
        status, doc, _ = cancel(c, "cx-unknown", "c1")
        assert status == 200 and doc["cancellationId"]
        book = ledger(stub_server)
        assert book["cancellations"]["cx-unknown/c1"]["succeeded"]
        # Create Payment now tells what happened: approved, then voided (the answer it had).
        status, raw, _ = c.post("/payments", body)
        assert status == 200 and validate(raw, "/payments", "post", 200)["status"] == "approved"
        verified = subprocess.run([BIN, "audit", "verify", "--data-dir", str(c.data_dir)], capture_output=True,
                                  text=True)
        assert verified.returncode == 0, verified.stdout + verified.stderr
    finally:
        proxy.close()
