"""A broken invariant stops the process rather than answer wrongly (IDEMPAY_ASSERT stays on in
release builds), and what it leaves behind recovers. The invariant `committed-payment` is made
to read broken (IDEMPAY_BREAK_AT) on the N-th payment commit: after that batch is durable and
before anything is answered. The connector started again answers the gateway's retries with the
outcome the acquirer's ledger shows, each payment charged and captured once, and the audit
trail verifies."""
import json
import pathlib
import signal
import subprocess
import time

import pytest

from conftest import BIN, create_body, ledger


def retry_until_final(connector, path, body, deadline=30):
    """The gateway's behaviour: the same request again until it gets a final answer."""
    end = time.time() + deadline
    while time.time() < end:
        try:
            status, raw, _ = connector.post(path, body)
            if status == 200 and json.loads(raw).get("status") != "undefined":
                return raw
        except (ConnectionError, OSError):
            pass
        time.sleep(0.1)
    raise AssertionError(f"no final answer to {path} for {body['paymentId']}")


# The payment commits of a create and its settlement: the intent, the authorization's outcome,
# then the settlement's outcome (its intent writes the operation, not the payment).
@pytest.mark.parametrize("nth", [1, 2, 3], ids=["after-intent", "after-authorization", "after-settlement"])
def test_a_broken_invariant_stops_the_process_and_the_store_recovers(connector_factory, stub_server, nth):
    c = connector_factory(acquirer=stub_server.url)
    c.process.terminate()
    c.start(env={"IDEMPAY_BREAK_AT": f"committed-payment:{nth}"})
    pid = f"assert-{nth}"
    create = create_body(pid, value=10)
    settle_path = f"/payments/{pid}/settlements"
    settle = {"paymentId": pid, "requestId": f"s-{pid}", "value": 10}
    try:
        status, raw, _ = c.post("/payments", create)
        assert nth > 2, f"answered {status} {raw} past a broken invariant"
        assert status == 200 and json.loads(raw)["status"] == "approved"
        status, raw, _ = c.post(settle_path, settle)
        raise AssertionError(f"answered {status} {raw} past a broken invariant")
    except (ConnectionError, OSError):
        pass  # the process stopped before it answered
    c.process.proc.wait(timeout=30)
    assert c.process.proc.returncode == -signal.SIGABRT, "an assertion stops the process by abort"
    log = pathlib.Path(c.process.log_path).read_text(errors="replace")
    assert "invariant broken" in log and "a payment's commit landed without a new version" in log

    c.start()
    created = json.loads(retry_until_final(c, "/payments", create))
    book = ledger(stub_server)
    assert created["status"] == "approved" and created["tid"] == book["authorizations"][pid]["tid"]
    assert book["authorizations"][pid]["charges"] == 1
    settled = json.loads(retry_until_final(c, settle_path, settle))
    assert settled["settleId"] and settled["value"] == 10
    assert ledger(stub_server)["captures"][f"{pid}/s-{pid}"]["calls"] == 1, "captured once"
    again = c.post(settle_path, settle)
    assert again[0] == 200 and json.loads(again[1]) == settled, "the same answer to the same settlement"
    c.process.terminate()
    verified = subprocess.run([BIN, "audit", "verify", "--data-dir", str(c.data_dir)], capture_output=True, text=True)
    assert verified.returncode == 0, verified.stdout + verified.stderr
