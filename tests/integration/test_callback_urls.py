"""Callback URLs as an attacker would write them: nothing in a callbackUrl can become a second
request or a header, callbacks (and the VTEX credentials they carry) go only to allowed hosts
over https, and a stored URL whose host is no longer allowed is never contacted."""
import json
import time

import pytest

from conftest import CALLBACK_ARGS, create_body, deliveries
from raw_receiver import RawReceiver

PENDING = "4222222222222224"


@pytest.fixture
def raw_receiver():
    r = RawReceiver()
    yield r
    r.close()


def error_of(result):
    status, raw, _ = result
    return status, json.loads(raw)


def test_no_callback_url_can_split_a_request(connector_factory, raw_receiver):
    c = connector_factory(extra_args=CALLBACK_ARGS)
    base = f"http://127.0.0.1:{raw_receiver.port}/cb"
    attacks = {
        "crlf": base + "?a=1\r\nX-Injected: yes\r\n\r\nPOST /evil HTTP/1.1\r\nHost: 127.0.0.1",
        "lf": base + "\nPOST /evil HTTP/1.1",
        "cr": base + "\rPOST /evil HTTP/1.1",
        "space": base + " HTTP/1.1\r\nX-Injected: yes",
        "inner-space": base + "/a b",
        "tab": base + "\tx",
        "nul": base + "\u0000x",
        "unicode-line-separator": base + "\u2028x",
        "userinfo": f"http://user:pw@127.0.0.1:{raw_receiver.port}/cb",
        "host-crlf": f"http://127.0.0.1:{raw_receiver.port}\r\nX-Injected: yes/cb",
        "not-a-url": "gateway.example/cb",
        "quote": base + '?a="b"',
    }
    for name, url in attacks.items():
        status, body = error_of(c.post("/payments", create_body(f"split-{name}", card=PENDING, callbackUrl=url)))
        assert status == 400, name
        assert body["status"] == "error" and body["code"] == "invalid-request", name
        assert body["message"].startswith("callbackUrl"), name
        # Nothing was stored: the same paymentId is still free for a well-formed payment.
        ok = c.post("/payments", create_body(f"split-{name}", callbackUrl="https://gateway.example/cb"))
        assert ok[0] == 200 and json.loads(ok[1])["status"] == "approved", name
    # The same bytes, percent-encoded, are a valid URL: delivered as one request, target intact.
    encoded = base + "?a=1%0D%0AX-Injected:%20yes%0D%0A%0D%0APOST%20/evil"
    assert c.post("/payments", create_body("split-encoded", card=PENDING, callbackUrl=encoded))[0] == 200
    assert raw_receiver.wait_for_requests(1)
    time.sleep(1.0)  # anything smuggled would arrive with it or right after
    lines = raw_receiver.request_lines()
    assert lines == [b"POST /cb?a=1%0D%0AX-Injected:%20yes%0D%0A%0D%0APOST%20/evil HTTP/1.1\r"], lines
    assert b"\nX-Injected" not in raw_receiver.raw() and b"\nPOST /evil" not in raw_receiver.raw()


def test_callbacks_go_only_to_allowed_hosts(connector_factory, raw_receiver):
    # --callback-allow-private permits http and loopback, but never lifts the allowlist.
    c = connector_factory(extra_args=CALLBACK_ARGS + ["--callback-allowed-hosts", "gateway.example"])
    status, body = error_of(c.post("/payments", create_body(
        "allow-1", card=PENDING, callbackUrl=f"http://127.0.0.1:{raw_receiver.port}/cb")))
    assert status == 400 and "not an allowed destination" in body["message"]

    strict = connector_factory(extra_args=["--callback-allowed-hosts", ".vtexpayments.com.br,127.0.0.1"])
    refused = {
        "allow-http": "http://acct.vtexpayments.com.br/cb",  # https only
        "allow-apex": "https://vtexpayments.com.br/cb",  # '.domain' matches subdomains only
        "allow-suffix": "https://acct.vtexpayments.com.br.evil.example/cb",
        "allow-lookalike": "https://acctvtexpayments.com.br/cb",
        "allow-loopback": f"https://127.0.0.1:{raw_receiver.port}/cb",  # allowed, but not public
    }
    for pid, url in refused.items():
        assert strict.post("/payments", create_body(pid, callbackUrl=url))[0] == 400, pid
    good = "https://acct.vtexpayments.com.br/api/pvt/payment-provider/transactions/t/payments/p/callback?X-VTEX-signature=s"
    assert strict.post("/payments", create_body("allow-ok", callbackUrl=good))[0] == 200
    time.sleep(1.0)
    assert raw_receiver.raw() == b"", "a host outside the allowlist was contacted"


def test_a_stored_url_no_longer_allowed_is_never_contacted(connector_factory, raw_receiver):
    args = [a if a != "100" else "4000" for a in CALLBACK_ARGS]  # slow retries: time to restart
    c = connector_factory(extra_args=args)
    url = f"http://127.0.0.1:{raw_receiver.port}/cb"
    raw_receiver.close()  # first attempt fails: the delivery stays in the outbox
    assert c.post("/payments", create_body("moved-host", card=PENDING, callbackUrl=url))[0] == 200
    time.sleep(1.5)
    c.process.kill()
    listener = RawReceiver(raw_receiver.port)  # the same address, listening again
    try:
        c.start(env={"IDEMPAY_CALLBACK_ALLOWED_HOSTS": "gateway.example"})
        deadline = time.time() + 15
        while time.time() < deadline:
            if any(d["paymentId"] == "moved-host" and d["state"] == "dead" for d in deliveries(c)):
                break
            time.sleep(0.3)
        dead = [d for d in deliveries(c) if d["paymentId"] == "moved-host"]
        assert dead and dead[0]["state"] == "dead", dead
        assert listener.raw() == b"", "a host removed from the allowlist was contacted"
    finally:
        listener.close()


def test_secure_proxy_urls_follow_the_same_rules(connector_factory):
    c = connector_factory(extra_args=["--secure-proxy-allowed-hosts", ".vtexpayments.com.br"])
    for url in ("https://proxy.vtexpayments.com.br/x\r\nX-Injected: 1", "https://evil.example/proxy",
                "http://proxy.vtexpayments.com.br/proxy", "https://user@proxy.vtexpayments.com.br/proxy"):
        status, raw, _ = c.post("/payments", create_body("proxy-bad", secureProxyUrl=url))
        assert status == 400 and json.loads(raw)["message"].startswith("secureProxyUrl"), url
    ok = "https://acct.vtexpayments.com.br/api/pvt/payment-provider/secure-proxy"
    assert c.post("/payments", create_body("proxy-bad", secureProxyUrl=ok))[0] == 200
