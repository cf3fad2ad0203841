"""Per-merchant settings: each merchant's payments go to its own acquirer with its own
credentials there, its callbacks carry its own VTEX credentials, and a payment keeps the
acquirer it was created with when the file changes (SIGHUP)."""
import json
import signal
import time


from conftest import ACQUIRER_SECRET, CALLBACK_ARGS, create_body, free_port, ledger
from receiver import callback_body


def auth(merchant):
    return {"X-VTEX-API-AppKey": merchant + "-key", "X-VTEX-API-AppToken": merchant + "-token",
            "Content-Type": "application/json"}


def test_each_merchant_has_its_own_acquirer_and_callback_credentials(connector_factory, stubs, receiver, tmp_path):
    port = free_port()  # the connector's, where both acquirers report outcomes
    reports = ["--pending-delay-ms", "300", "--webhook-url", f"http://127.0.0.1:{port}/webhooks/acquirer",
               "--webhook-secret", ACQUIRER_SECRET]
    default = stubs(*reports)
    guarded = stubs(*reports, "--api-key", "beta-acquirer-key", "--api-key", "alpha-acquirer-key")
    key_file = tmp_path / "beta-acquirer-key"
    key_file.write_text("beta-acquirer-key\n")
    merchants = [
        {"name": "alpha", "appKey": "alpha-key", "appToken": "alpha-token"},
        {"name": "beta", "appKey": "beta-key", "appToken": "beta-token", "acquirer": guarded.url,
         "acquirerApiKeyFile": str(key_file), "callbackAppKey": "beta-vtex-key",
         "callbackAppTokenEnv": "BETA_CALLBACK_TOKEN"},
        {"name": "gamma", "appKey": "gamma-key", "appToken": "gamma-token", "acquirer": guarded.url},
    ]
    c = connector_factory(acquirer=default.url, listen=f"127.0.0.1:{port}", merchants=merchants,
                          extra_args=CALLBACK_ARGS + ["--acquirer-webhook-secret", ACQUIRER_SECRET],
                          env={"BETA_CALLBACK_TOKEN": "beta-vtex-token"})
    r = receiver()

    def create(merchant, pid, card="4444333322221111"):
        status, raw, _ = c.post("/payments", create_body(pid, card=card, callbackUrl=r.url()), auth(merchant))
        assert status == 200, raw
        return json.loads(raw)["status"]

    assert create("alpha", "ms-a") == "approved"
    assert create("beta", "ms-b") == "approved"  # its key reached the guarded acquirer
    assert create("gamma", "ms-g") == "undefined"  # no key there: refused, nothing charged
    default_book, guarded_book = ledger(default)["authorizations"], ledger(guarded)["authorizations"]
    assert set(default_book) == {"ms-a"}
    assert set(guarded_book) == {"ms-b"}

    # Callbacks carry the merchant's own VTEX credentials when it has them.
    assert create("beta", "ms-b-async", card="4222222222222224") == "undefined"
    assert create("alpha", "ms-a-async", card="4222222222222224") == "undefined"
    assert r.wait_for(lambda rv: len(rv.processed) >= 2, timeout=30)
    by_payment = {callback_body(q)["paymentId"]: q["headers"] for q in r.requests}
    assert by_payment["ms-b-async"]["x-vtex-api-appkey"] == "beta-vtex-key"
    assert by_payment["ms-b-async"]["x-vtex-api-apptoken"] == "beta-vtex-token"
    assert by_payment["ms-a-async"]["x-vtex-api-appkey"] == "connector-key"

    # Alpha moves to the guarded acquirer: new payments go there, old ones stay where they are.
    merchants[0].update({"acquirer": guarded.url, "acquirerApiKey": "alpha-acquirer-key"})
    c.creds.write_text(json.dumps({"merchants": merchants}))
    c.process.proc.send_signal(signal.SIGHUP)
    deadline = time.time() + 10
    while c.process.log_path.read_bytes().count(b"reloaded") < 1:
        assert time.time() < deadline
        time.sleep(0.1)
    settle = {"paymentId": "ms-a", "requestId": "s1", "value": 31.9}
    assert c.post("/payments/ms-a/settlements", settle, auth("alpha"))[0] == 200
    assert "ms-a/s1" in ledger(default)["captures"] and "ms-a/s1" not in ledger(guarded)["captures"]
    assert create("alpha", "ms-a2") == "approved"
    assert "ms-a2" in ledger(guarded)["authorizations"] and "ms-a2" not in ledger(default)["authorizations"]


def test_a_bad_acquirer_setting_is_refused_at_start(tmp_path):
    import subprocess
    from conftest import BIN
    for bad in ({"acquirer": "ftp://x"}, {"acquirer": "http://h/\r\nx"}, {"acquirerApiKeyEnv": "NOT_SET_ANYWHERE"},
                {"acquirerApiKeyFile": str(tmp_path / "missing")}, {"callbackAppKey": "k"},
                {"acquirerApiKey": "a", "acquirerApiKeyEnv": "HOME"}):
        path = tmp_path / "credentials.json"
        path.write_text(json.dumps({"merchants": [dict({"name": "a", "appKey": "k", "appToken": "t"}, **bad)]}))
        run = subprocess.run([BIN, "serve", "--listen", "127.0.0.1:0", "--data-dir", str(tmp_path / "data"),
                              "--credentials", str(path)], capture_output=True, timeout=30)
        assert run.returncode == 2, (bad, run.stderr)
