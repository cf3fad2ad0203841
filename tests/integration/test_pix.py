"""Pix through the Banco Central's API Pix, end to end: the gateway's Create Payment becomes a
charge at the (fake) PSP, the payer pays it, the PSP's notification is confirmed with the PSP,
the gateway hears the outcome by callback, and a refund becomes one devolucao. Every request
the connector sends to the PSP goes through Stoplight Prism, validating it and the PSP's
answer against the published document; the PSP's own rules (mutual TLS, txids, ids never
reused) are the fake's. Crashes, overlaps and hostile notifications must not change what the
PSP's ledger shows: one charge per paymentId, one devolucao per requestId."""
import base64
import hashlib
import json
import subprocess
import threading
import time

import pytest

from conftest import BIN, CALLBACK_ARGS, audit_trail, concurrently, logged_port, sent_before_a_kill
from pix import (SPEC, SPEC_SHA256, Pki, Prism, charge, notify, pay, pix_acquirer, pix_body, pix_merchant,
                 psp_ledger, start_psp, tls_args, wait_for)
from receiver import callback_body
from schema import validate


@pytest.fixture
def pki(tmp_path):
    return Pki(tmp_path)


@pytest.fixture
def pix_world(base_dir, request, connector_factory, pki):
    """The fake PSP behind Prism (plain HTTP: Prism speaks no mutual TLS), a connector whose
    merchant's Pix goes through Prism to it, with a TLS listener that takes the PSP's
    notifications from its pinned certificate. Yields (psp, prism, connector)."""
    name = request.node.name
    psp = start_psp(base_dir, name, pki)
    prism = Prism(base_dir, name, psp.url)
    acquirer = pix_acquirer(prism.url, psp.url + "/oauth/token", pki)
    c = connector_factory(merchants=pix_merchant(acquirer), extra_args=CALLBACK_ARGS + tls_args(pki))
    c.tls_port = connector_tls_port(c)
    assert "notifies" in register_webhook(c)
    yield psp, prism, c
    violations = prism.violations()
    prism.stop()
    psp.terminate()
    assert not violations, "requests or answers against the API Pix document:\n" + "\n".join(violations)


def connector_tls_port(c):
    return logged_port(c.process, rb"listening with TLS on [^:]+:(\d+)")


def register_webhook(c):
    out = subprocess.run([BIN, "pix-webhook", "register", "--credentials", str(c.creds), "--merchant", "shop",
                          "--acquirer", "psp", "--public-url", f"https://127.0.0.1:{c.tls_port}"],
                         capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stdout + out.stderr
    return out.stdout


def settle(c, payment_id, value):
    """The gateway settles an approved Pix (its auto-settlement): answered without the PSP."""
    answer = c.post(f"/payments/{payment_id}/settlements", {"paymentId": payment_id, "requestId": "s-" + payment_id,
                                                            "value": value})
    assert answer[0] == 200, answer[1]


def create(c, body):
    status, raw, _ = c.post("/payments", body)
    assert status == 200, raw
    return json.loads(raw), raw


def test_the_document_is_the_published_one():
    assert hashlib.sha256(SPEC.read_bytes()).hexdigest() == SPEC_SHA256
    provenance = (SPEC.parent / "PROVENANCE.md").read_text()
    assert SPEC_SHA256 in provenance and "Apache" in (SPEC.parent / "LICENSE").read_text()


def test_a_pix_from_create_payment_to_callback_then_settled_and_refunded(pix_world, pki, receiver):
    psp, prism, c = pix_world
    tokens_before = psp_ledger(psp)["tokensIssued"]  # the registration tool's own
    r = receiver()
    body = pix_body("pix-1", value=31.9, callbackUrl=r.url())
    first, raw = create(c, body)
    validate(raw, "/payments", "post", 200)
    assert first["status"] == "undefined"
    assert first["paymentAppData"]["appName"] == "vtex.pix-payment"
    app = json.loads(first["paymentAppData"]["payload"])
    png = base64.b64decode(app["qrCodeBase64Image"])
    assert png.startswith(b"\x89PNG")
    assert app["code"].startswith("000201") and "br.gov.bcb.pix" in app["code"]
    txid = first["tid"]
    book = charge(psp, txid)
    assert book["valor"] == "31.90" and book["status"] == "ATIVA"
    assert create(c, body)[1] == raw, "a repeated Create Payment: the same answer, byte for byte"

    assert pay(psp, txid)[0] == 200
    assert r.wait_for(lambda rv: rv.processed, timeout=20), "no callback after the PSP's notification"
    approved = callback_body(r.requests[-1])
    assert approved["status"] == "approved" and approved["paymentId"] == "pix-1"
    assert approved["authorizationId"] == charge(psp, txid)["endToEndId"]
    assert create(c, body)[1] == r.requests[-1]["body"], "the final answer is the callback's"
    assert psp_ledger(psp)["notifications"]["delivered"] >= 1

    settle = c.post("/payments/pix-1/settlements", {"paymentId": "pix-1", "requestId": "s-1", "value": 31.9})
    assert settle[0] == 200 and json.loads(settle[1])["value"] == 31.9
    refund_body = {"paymentId": "pix-1", "requestId": "r-1", "value": 10, "transactionId": "tx-pix-1"}
    refunded = c.post("/payments/pix-1/refunds", refund_body)
    assert refunded[0] == 200, refunded[1]
    assert json.loads(refunded[1])["value"] == 10
    assert c.post("/payments/pix-1/refunds", refund_body)[1] == refunded[1]
    devolucoes = charge(psp, txid)["devolucoes"]
    assert [d["valor"] for d in devolucoes] == ["10.00"], "one devolucao for one requestId"
    assert devolucoes[0]["status"] == "DEVOLVIDO"
    assert psp_ledger(psp)["tokensIssued"] == tokens_before + 1, "one token for every call of the connector"


def test_an_unpaid_pix_is_cancelled_at_the_psp(pix_world):
    psp, prism, c = pix_world
    first, _ = create(c, pix_body("pix-cancel"))
    cancel = c.post("/payments/pix-cancel/cancellations", {"paymentId": "pix-cancel", "requestId": "c-1"})
    assert cancel[0] == 200 and json.loads(cancel[1])["cancellationId"], cancel[1]
    assert charge(psp, first["tid"])["status"] == "REMOVIDA_PELO_USUARIO_RECEBEDOR"
    assert pay(psp, first["tid"])[0] == 409, "a removed charge can no longer be paid"


def test_notifications_are_hints_from_the_pinned_certificate_only(pix_world, pki):
    psp, prism, c = pix_world
    first, raw = create(c, pix_body("pix-hint"))
    txid = first["tid"]
    claim = {"pix": [{"endToEndId": "E" + "1" * 31, "txid": txid, "valor": "31.90",
                      "horario": "2026-12-02T10:00:00Z"}]}
    assert notify(c.tls_port, pki, claim, cert=None)[0] == 403, "no client certificate"
    assert notify(c.tls_port, pki, claim, cert="stranger")[0] == 403, "a certificate the acquirer does not pin"
    # From the PSP's certificate, but the PSP says the charge is not paid: nothing changes, and
    # the PSP is asked to send it again later.
    status, _ = notify(c.tls_port, pki, claim)
    assert status == 503
    assert create(c, pix_body("pix-hint"))[1] == raw
    assert notify(c.tls_port, pki, {"pix": [{"endToEndId": "E" + "2" * 31, "txid": "unknowntxid0000000000000000",
                                            "valor": "1.00", "horario": "2026-12-02T10:00:00Z"}]})[0] == 200
    assert notify(c.tls_port, pki, {"pix": "not a list"})[0] == 400
    big = {"pix": [{"txid": f"t{i:030d}", "endToEndId": "E" + "3" * 31} for i in range(101)]}
    assert notify(c.tls_port, pki, big)[0] == 400

    # A flood of duplicates of a true notification: asked of the PSP at most once a second.
    assert pay(psp, txid)[0] == 200
    before = psp_ledger(psp)["requests"].get("GET /cob/{}", 0)
    statuses = concurrently(20, lambda i: notify(c.tls_port, pki, claim)[0])
    assert set(statuses) <= {200, 503}
    wait_for(lambda: json.loads(c.post("/payments", pix_body("pix-hint"))[1])["status"] == "approved",
             what="the payment approved")
    asked = psp_ledger(psp)["requests"].get("GET /cob/{}", 0) - before
    assert 1 <= asked <= 6, f"{asked} status calls for 20 notifications"
    decided = json.loads(c.post("/payments", pix_body("pix-hint"))[1])
    assert decided["nsu"] == charge(psp, txid)["endToEndId"], "the approval's nsu, decided by a hint"
    # The hints are unauthenticated: the trail records them as hints, never the path's merchant
    # as the one who asked (only the Create Payments are the merchant's).
    trail = audit_trail(c, "pix-hint")
    hints = [e for e in trail if e["kind"] == "acquirer_hint"]
    assert hints and all(e["actor"] == "" for e in hints)
    assert [e["actor"] for e in trail if e["kind"] == "webhook_applied"] == [""]


def test_the_psps_mutual_tls_and_the_connectors_client_certificate(base_dir, request, connector_factory, pki):
    psp = start_psp(base_dir, request.node.name + "-mtls", pki, True)
    try:
        without = pix_acquirer(psp.tls_url, psp.tls_url + "/oauth/token", None, caFile=pki.path("ca.pem"))
        c = connector_factory(merchants=pix_merchant(without))
        first, _ = create(c, pix_body("mtls-0"))
        assert first["status"] == "undefined" and "paymentAppData" not in first, "no charge without the certificate"
        assert psp_ledger(psp)["charges"] == [] and psp_ledger(psp)["tokensIssued"] == 0
        c.process.terminate()
        with_cert = pix_acquirer(psp.tls_url, psp.tls_url + "/oauth/token", pki)
        c2 = connector_factory(merchants=pix_merchant(with_cert))
        second, _ = create(c2, pix_body("mtls-1"))
        assert second["status"] == "undefined" and "paymentAppData" in second
        assert charge(psp, second["tid"]) is not None
    finally:
        psp.terminate()


def test_overlapping_creates_and_refunds_make_one_charge_and_one_devolucao(pix_world):
    psp, prism, c = pix_world
    body = pix_body("pix-overlap")
    answers = concurrently(8, lambda i: c.post("/payments", body))
    assert {a[0] for a in answers} == {200}
    assert len({a[1] for a in answers}) == 1, "overlapping requests get the same answer"
    txid = json.loads(answers[0][1])["tid"]
    assert len([ch for ch in psp_ledger(psp)["charges"] if ch["txid"] == txid]) == 1
    assert pay(psp, txid)[0] == 200
    wait_for(lambda: json.loads(c.post("/payments", body)[1])["status"] == "approved", what="approval")
    settle(c, "pix-overlap", 31.9)
    refund = {"paymentId": "pix-overlap", "requestId": "r-over", "value": 5, "transactionId": "tx-pix-overlap"}
    refunds = concurrently(6, lambda i: c.post("/payments/pix-overlap/refunds", refund))
    finals = [r for r in refunds if r[0] == 200]
    assert finals and len({r[1] for r in finals}) == 1, refunds
    assert all(r[0] in (200, 500) for r in refunds), refunds  # 500: in progress, the gateway retries
    wait_for(lambda: c.post("/payments/pix-overlap/refunds", refund)[0] == 200, what="the refund's answer")
    assert [d["valor"] for d in charge(psp, txid)["devolucoes"]] == ["5.00"]


def kill_while_in_flight(c, path, body, carried_out):
    """Sends the request and SIGKILLs the connector once the PSP has carried it out
    (`carried_out()`), while the PSP still holds its answer."""
    sender = sent_before_a_kill(lambda: c.post(path, body))
    wait_for(carried_out, timeout=20, what="the PSP carrying out the call")
    c.process.kill()
    sender.join(timeout=30)


def test_sigkill_during_put_cob_and_during_a_refund(base_dir, request, connector_factory, pki):
    """The PSP carries out each call at once and holds its answer for a second: the connector
    dies knowing nothing of what it did. Restarted, the gateway's retries find the same charge
    and the same devolucao."""
    psp = start_psp(base_dir, request.node.name, pki, False, "--latency-ms", "1000")
    try:
        acquirer = pix_acquirer(psp.url, psp.url + "/oauth/token", pki)
        c = connector_factory(merchants=pix_merchant(acquirer), extra_args=tls_args(pki))
        c.tls_port = connector_tls_port(c)
        register_webhook(c)
        body = pix_body("pix-kill")
        kill_while_in_flight(c, "/payments", body, lambda: len(psp_ledger(psp)["charges"]) == 1)
        c.start()
        c.tls_port = connector_tls_port(c)
        register_webhook(c)  # the listener's port changed with the restart
        first, raw = wait_for(lambda: _undefined_with_code(c, body), what="the charge's code after the restart")
        assert len(psp_ledger(psp)["charges"]) == 1
        assert create(c, body)[1] == raw
        assert pay(psp, first["tid"])[0] == 200
        wait_for(lambda: json.loads(c.post("/payments", body)[1])["status"] == "approved", what="approval")
        settle(c, "pix-kill", 31.9)

        refund = {"paymentId": "pix-kill", "requestId": "r-kill", "value": 7, "transactionId": "tx-pix-kill"}
        kill_while_in_flight(c, "/payments/pix-kill/refunds", refund,
                             lambda: len(charge(psp, first["tid"])["devolucoes"]) == 1)
        c.start()
        answer = wait_for(lambda: _final(c.post("/payments/pix-kill/refunds", refund)), timeout=30,
                          what="the refund's answer after the restart")
        assert json.loads(answer)["value"] == 7
        assert [d["valor"] for d in charge(psp, first["tid"])["devolucoes"]] == ["7.00"]
        assert c.post("/payments/pix-kill/refunds", refund)[1] == answer
    finally:
        psp.terminate()


def _undefined_with_code(c, body):
    status, raw, _ = c.post("/payments", body)
    answer = json.loads(raw) if status == 200 else {}
    return (answer, raw) if answer.get("paymentAppData") else None


def _final(answer):
    return answer[1] if answer[0] == 200 else None


def test_sigkill_while_notifications_arrive(base_dir, request, connector_factory, pki, receiver):
    psp = start_psp(base_dir, request.node.name, pki)
    try:
        acquirer = pix_acquirer(psp.tls_url, psp.tls_url + "/oauth/token", pki)
        r = receiver()
        c = connector_factory(merchants=pix_merchant(acquirer), extra_args=CALLBACK_ARGS + tls_args(pki))
        c.tls_port = connector_tls_port(c)
        txids = []
        for i in range(5):
            first, _ = create(c, pix_body(f"pix-nk-{i}", callbackUrl=r.url()))
            txids.append(first["tid"])
        # Notifications straight from the test (the PSP's retries would mask a lost one).
        for txid in txids:
            assert pay(psp, txid)[0] == 200
        claims = [{"pix": [{"txid": t, "endToEndId": charge(psp, t)["endToEndId"]}]} for t in txids]
        killer = threading.Timer(0.05, c.process.kill)
        killer.start()
        acknowledged = [t for t, claim in zip(txids, claims) if _notified(c, pki, claim)]
        killer.join()
        c.process.proc.wait(timeout=10)
        c.start()
        c.tls_port = connector_tls_port(c)
        for t, claim in zip(txids, claims):  # the PSP tries again what was not acknowledged
            if t not in acknowledged:
                wait_for(lambda: _notified(c, pki, claim), what="a notification accepted after the restart")
        for i in range(5):
            answer = json.loads(c.post("/payments", pix_body(f"pix-nk-{i}", callbackUrl=r.url()))[1])
            assert answer["status"] == "approved", f"pix-nk-{i}: {answer['status']}"
        assert r.wait_for(lambda rv: len(rv.processed) == 5, timeout=30), "one callback per payment"
        assert all(len([ch for ch in psp_ledger(psp)["charges"] if ch["txid"] == t]) == 1 for t in txids)
    finally:
        psp.terminate()


def _notified(c, pki, claim):
    try:
        return notify(c.tls_port, pki, claim)[0] == 200
    except (OSError, subprocess.TimeoutExpired):
        return False


def test_a_charge_paid_before_its_cancellation_is_approved_not_cancelled(base_dir, request, connector_factory, receiver):
    """Without a registered webhook nothing tells the connector of the Pix; the gateway's
    cancellation at the end of the delay to cancel asks the PSP first, finds it paid, and the
    gateway hears "approved" instead of losing the shopper's money."""
    psp = start_psp(base_dir, request.node.name)
    try:
        r = receiver()
        c = connector_factory(merchants=pix_merchant(pix_acquirer(psp.url, psp.url + "/oauth/token")),
                              extra_args=CALLBACK_ARGS)
        first, _ = create(c, pix_body("pix-late", callbackUrl=r.url()))
        assert pay(psp, first["tid"])[0] == 200
        cancel = c.post("/payments/pix-late/cancellations", {"paymentId": "pix-late", "requestId": "c-late"})
        assert json.loads(cancel[1])["cancellationId"] is None, cancel[1]
        assert charge(psp, first["tid"])["status"] == "CONCLUIDA"
        assert r.wait_for(lambda rv: rv.processed, timeout=20)
        assert callback_body(r.requests[-1])["status"] == "approved"
        assert json.loads(c.post("/payments", pix_body("pix-late", callbackUrl=r.url()))[1])["status"] == "approved"
    finally:
        psp.terminate()


# -- Pix without a webhook ---------------------------------------------------------------------

def gets_of_cob(psp):
    return psp_ledger(psp)["requests"].get("GET /cob/{}", 0)


def test_a_pix_is_approved_within_seconds_without_a_webhook_and_after_a_restart(base_dir, request, connector_factory,
                                                                                receiver):
    """No webhook registered at the PSP: the connector looks at each pending charge on its own
    (GET /cob, every 2 s at first), so the shopper's Pix is approved within seconds, with its
    nsu; a charge pending when the connector is killed is looked at again after the restart."""
    psp = start_psp(base_dir, request.node.name)
    try:
        r = receiver()
        c = connector_factory(merchants=pix_merchant(pix_acquirer(psp.url, psp.url + "/oauth/token")),
                              extra_args=CALLBACK_ARGS)
        first, _ = create(c, pix_body("pix-poll", callbackUrl=r.url()))
        assert pay(psp, first["tid"])[0] == 200
        paid_at = time.monotonic()
        assert r.wait_for(lambda rv: rv.processed, timeout=15), "no callback without a webhook"
        assert time.monotonic() - paid_at < 8, "approved within the first looks"
        approved = callback_body(r.requests[-1])
        assert approved["status"] == "approved" and approved["nsu"] == charge(psp, first["tid"])["endToEndId"]
        assert psp_ledger(psp)["notifications"]["sent"] == 0, "nothing came from the PSP"

        second, _ = create(c, pix_body("pix-poll-2", callbackUrl=r.url()))
        c.process.kill()
        c.start()
        assert pay(psp, second["tid"])[0] == 200
        assert r.wait_for(lambda rv: len(rv.processed) == 2, timeout=20), "the pending charge watched again after a restart"
        assert callback_body(r.requests[-1])["paymentId"] == "pix-poll-2"
        looks = gets_of_cob(psp)
        time.sleep(2.5)
        assert gets_of_cob(psp) == looks, "a payment decided is looked at no more"
    finally:
        psp.terminate()


def test_a_flood_of_pending_charges_is_looked_at_within_the_cap(base_dir, request, connector_factory):
    """24 pending charges would be looked at 12 times a second; with the cap at 4 looks a second
    per acquirer entry the PSP sees at most that (and a burst of 4), and still sees looks."""
    psp = start_psp(base_dir, request.node.name)
    try:
        c = connector_factory(merchants=pix_merchant(pix_acquirer(psp.url, psp.url + "/oauth/token")),
                              extra_args=["--status-polls-per-second", "4"])
        for i in range(24):
            create(c, pix_body(f"pix-flood-{i}"))
        time.sleep(2.5)  # every charge's first look is due
        before, started = gets_of_cob(psp), time.monotonic()
        time.sleep(6)
        looks, elapsed = gets_of_cob(psp) - before, time.monotonic() - started
        assert looks <= 4 * elapsed + 4 + 1, f"{looks} looks in {elapsed:.1f} s"
        assert looks >= 2 * elapsed, f"{looks} looks in {elapsed:.1f} s: the cap, not fewer"
    finally:
        psp.terminate()


def test_a_devolucaos_notification_decides_its_refund(base_dir, request, connector_factory, pki):
    """A refund left in processing at the PSP answers "not yet"; when the devolucao ends, the
    PSP's notification (the Pix with its devolucoes) makes the connector ask the PSP about the
    refund and record it done, before the gateway asks again — whose retry then hears it."""
    psp = start_psp(base_dir, request.node.name, pki, True, "--refund-delay-ms", "600000")
    try:
        acquirer = pix_acquirer(psp.tls_url, psp.tls_url + "/oauth/token", pki)
        c = connector_factory(merchants=pix_merchant(acquirer), extra_args=tls_args(pki))
        c.tls_port = connector_tls_port(c)
        register_webhook(c)
        first, _ = create(c, pix_body("pix-dev"))
        assert pay(psp, first["tid"])[0] == 200
        wait_for(lambda: json.loads(c.post("/payments", pix_body("pix-dev"))[1])["status"] == "approved",
                 what="approval")
        settle(c, "pix-dev", 31.9)
        refund = {"paymentId": "pix-dev", "requestId": "r-dev", "value": 5, "transactionId": "tx-pix-dev"}
        pending = c.post("/payments/pix-dev/refunds", refund)
        assert pending[0] == 500 and json.loads(pending[1])["code"] == "refund-pending", pending[1]
        pix = charge(psp, first["tid"])
        [devolucao] = pix["devolucoes"]
        assert request_psp(psp, f"/fake/devolucao/{pix['endToEndId']}/{devolucao['id']}", {"status": "DEVOLVIDO"}) == 200
        wait_for(lambda: refund_phase(c, "pix-dev", "r-dev") == "done", timeout=20,
                 what="the refund recorded done on the PSP's notification alone")
        done = c.post("/payments/pix-dev/refunds", refund)
        assert done[0] == 200 and json.loads(done[1])["value"] == 5, done[1]
        assert [d["valor"] for d in charge(psp, first["tid"])["devolucoes"]] == ["5.00"], "one devolucao"
    finally:
        psp.terminate()


def request_psp(psp, path, body):
    from conftest import request as http_request
    return http_request(psp.port, "POST", path, body, headers={})[0]


def refund_phase(c, payment_id, request_id):
    out = subprocess.run([BIN, "inspect", payment_id, "--json", "--data-dir", str(c.data_dir)], capture_output=True,
                         text=True, timeout=30)
    if out.returncode != 0:
        return None
    ops = [op for op in json.loads(out.stdout)["operations"] if op["requestId"] == request_id]
    return ops[0]["phase"] if ops else None
