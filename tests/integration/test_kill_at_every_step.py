"""Crash safety: the connector is killed at named points (IDEMPAY_CRASH_AT) and at random
moments; clients retry as the gateway would. Each payment ends charged once, the answer the
client gets agrees with the acquirer's ledger, callbacks arrive, and the audit verifies."""
import json
import random
import subprocess
import threading
import time

import pytest

from conftest import BIN, CALLBACK_ARGS, SANDBOX, Process, create_body, free_port, ledger, request
from receiver import callback_body


def retry_until_final(connector, body, deadline=30):
    """The gateway's behaviour: resend the same Create Payment until it gets a final answer."""
    end = time.time() + deadline
    while time.time() < end:
        try:
            status, raw, _ = connector.post("/payments", body)
            if status == 200 and json.loads(raw)["status"] != "undefined":
                return json.loads(raw), raw
        except (ConnectionError, OSError):
            pass
        time.sleep(0.1)
    raise AssertionError(f"no final answer for {body['paymentId']}")


def audit_verifies(connector):
    out = subprocess.run([BIN, "audit", "verify", "--data-dir", str(connector.data_dir)], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr


def wait_until_dead(connector, timeout=10):
    connector.process.proc.wait(timeout=timeout)
    assert connector.process.proc.returncode == -9, "the fault point should have killed the process"


@pytest.mark.parametrize("point", ["after-intent", "after-acquirer", "after-result"])
def test_crash_at_create_payment_points(connector_factory, stub_server, point):
    c = connector_factory(acquirer=stub_server.url)
    c.process.terminate()
    c.start(env={"IDEMPAY_CRASH_AT": point})
    body = create_body(f"crash-{point}")
    try:
        c.post("/payments", body)
    except (ConnectionError, OSError):
        pass
    wait_until_dead(c)
    c.start()
    answer, raw = retry_until_final(c, body)
    entry = ledger(stub_server)["authorizations"][body["paymentId"]]
    assert entry["charges"] == 1
    assert answer["status"] == "approved" and answer["tid"] == entry["tid"]
    assert retry_until_final(c, body)[1] == raw
    c.process.terminate()
    audit_verifies(c)


def test_crash_during_callback_delivery(connector_factory, receiver):
    r = receiver()
    c = connector_factory(extra_args=CALLBACK_ARGS)
    c.process.terminate()
    c.start(env={"IDEMPAY_CRASH_AT": "during-callback"})
    c.post("/payments", create_body("crash-cb", card="4222222222222224", callbackUrl=r.url()))
    wait_until_dead(c)
    assert len(r.requests) == 1, "the receiver got the callback before the crash"
    c.start()
    assert r.wait_for(lambda rv: len(rv.requests) >= 2)
    assert {q["headers"]["webhook-id"] for q in r.requests} == {r.requests[0]["headers"]["webhook-id"]}
    assert len(r.processed) == 1 and callback_body(r.requests[-1])["status"] == "approved"
    c.process.terminate()
    audit_verifies(c)


def test_crash_during_webhook_inbox_write(webhook_stub_pair, receiver):
    stub, c = webhook_stub_pair
    r = receiver()
    c.process.terminate()
    c.start(env={"IDEMPAY_CRASH_AT": "during-inbox-write"})
    body = create_body("crash-inbox", card="4222222222222224", callbackUrl=r.url())
    assert json.loads(c.post("/payments", body)[1])["status"] == "undefined"
    request(stub.port, "POST", "/trigger", {"paymentId": "crash-inbox", "outcome": "approve"}, headers={})
    wait_until_dead(c)
    c.start()  # the stub keeps retrying its webhook until acknowledged
    assert r.wait_for(lambda rv: rv.processed, timeout=30)
    assert callback_body(r.requests[-1])["status"] == "approved"
    assert json.loads(c.post("/payments", body)[1])["status"] == "approved"
    assert ledger(stub)["authorizations"]["crash-inbox"]["charges"] == 1
    c.process.terminate()
    audit_verifies(c)


@pytest.mark.parametrize("acquirer", ["in-process", "out-of-process"])
def test_random_crashes_with_retrying_clients(connector_factory, stub_server, acquirer):
    port = free_port()
    out_of_process = acquirer == "out-of-process"
    c = connector_factory(acquirer=stub_server.url if out_of_process else "stub", listen=f"127.0.0.1:{port}")
    rng = random.Random(20261130)
    payments = [f"rand-{acquirer}-{i}" for i in range(300)]
    answers, errors, kills = {}, [], []
    stop = threading.Event()

    def client(ids):
        pace = random.Random(ids[0])
        for pid in ids:
            time.sleep(pace.uniform(0.05, 0.2))  # orders arrive over time, not all at once
            try:
                answers[pid] = retry_until_final(c, create_body(pid), deadline=90)
            except AssertionError as e:
                errors.append(str(e))

    def killer():
        for _ in range(30):
            if stop.wait(rng.uniform(0.02, 0.15)):
                return
            c.process.kill()
            kills.append(len(answers))
            c.start()

    clients = [threading.Thread(target=client, args=(payments[i::8],)) for i in range(8)]
    chaos = threading.Thread(target=killer)
    chaos.start()
    for t in clients:
        t.start()
    for t in clients:
        t.join()
    stop.set()
    chaos.join()
    assert not errors
    assert len([k for k in kills if k < len(payments)]) >= 10, f"too few kills while clients ran: {kills}"
    assert all(answers[p][0]["status"] == "approved" for p in payments)
    for p in payments:  # every later repeat gives the same bytes
        assert retry_until_final(c, create_body(p))[1] == answers[p][1]
    if out_of_process:
        book = ledger(stub_server)["authorizations"]
        for p in payments:
            assert book[p]["charges"] == 1
            assert answers[p][0]["tid"] == book[p]["tid"]
    c.process.terminate()
    audit_verifies(c)


def test_acquirer_outage_orphans_then_recovers(connector_factory, base_dir):
    stub_port = free_port()
    c = connector_factory(acquirer=f"http://127.0.0.1:{stub_port}",
                          extra_args=["--reconcile-base-ms", "50", "--reconcile-attempts", "3",
                                      "--acquirer-timeout-ms", "500"])
    bodies = [create_body(f"outage-{i}") for i in range(20)]
    for body in bodies:
        status, raw, _ = c.post("/payments", body)
        assert status == 200 and json.loads(raw)["status"] == "undefined", raw  # never a false success
    time.sleep(1.5)  # 3 failed status calls, 50/100/200 ms apart
    report = json.loads(subprocess.run([BIN, "inspect", "outage-0", "--json", "--data-dir", str(c.data_dir)],
                                       capture_output=True, text=True, check=True).stdout)
    assert report["state"] == "orphaned"
    assert "event_orphaned" in [a["kind"] for a in report["audit"]]

    # A restart with work in flight starts answering at once; recovery runs in the background.
    c.process.kill()
    started = time.time()
    c.start()
    assert request(c.port, "GET", "/manifest", headers={})[0] == 200
    assert time.time() - started < 5

    stub = Process(["acquirer-stub", "--listen", f"127.0.0.1:{stub_port}"], base_dir / "outage-stub.log",
                   program=SANDBOX)
    try:
        for body in bodies:  # the gateway keeps retrying "undefined" payments
            answer, _ = retry_until_final(c, body)
            assert answer["status"] == "approved"
        book = ledger(stub)["authorizations"]
        assert all(book[b["paymentId"]]["charges"] == 1 for b in bodies)
    finally:
        stub.terminate()
    c.process.terminate()
    audit_verifies(c)
