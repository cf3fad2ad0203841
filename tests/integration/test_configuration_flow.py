"""The optional configuration flow: the gateway, with the
credentials configured for the flow, gets a token; the merchant's browser gets a consent page
whose link goes back to the gateway with an authorization code; the gateway exchanges the code
for a new AppKey/AppToken, which then work on the payment routes at once and after a restart.
The flow's credentials open nothing else; codes and tokens are single-purpose and expire; pending
flows, their returnUrls, the onboarding rate and the number of merchants are bounded."""
import json
import re
import time
import urllib.parse

from conftest import APP_KEY, APP_TOKEN, AUTH, create_body, request
from schema import validate

FLOW = {"X-PROVIDER-API-AppKey": "vtex-flow-key", "X-PROVIDER-API-AppToken": "vtex-flow-token",
        "Content-Type": "application/json"}
MERCHANTS = [{"name": "shop", "appKey": APP_KEY, "appToken": APP_TOKEN},
             {"name": "vtex-flow", "appKey": "vtex-flow-key", "appToken": "vtex-flow-token", "onboarding": True}]
RETURN = "https://admin.example/admin/provider-return?account=mystore"


def connector_with_flow(connector_factory):
    return connector_factory(merchants=MERCHANTS, extra_args=["--onboarding-return-hosts", "admin.example"])


def onboard(c):
    status, raw, _ = c.post("/authorization/token", {"applicationId": "vtex", "returnUrl": RETURN}, FLOW)
    assert status == 200, raw
    token = validate(raw, "/authorization/token", "post", 200)["token"]
    status, page, headers = request(c.port, "GET", f"/authorization/redirect?applicationId=vtex&token={token}",
                                    headers={})
    assert status == 200 and headers["content-type"].startswith("text/html"), page
    link = re.search(rb'id="accept" href="([^"]+)"', page).group(1).decode().replace("&amp;", "&")
    assert link.startswith(RETURN + "&authorizationCode=")
    code = urllib.parse.parse_qs(urllib.parse.urlsplit(link).query)["authorizationCode"][0]
    return token, code


def exchange(c, code):
    return request(c.port, "GET", f"/authorization/credentials?applicationId=vtex&authorizationCode={code}",
                   headers=FLOW)


def test_a_merchant_onboards_and_its_new_credentials_work_now_and_after_a_restart(connector_factory):
    c = connector_with_flow(connector_factory)
    token, code = onboard(c)
    status, raw, _ = exchange(c, code)
    assert status == 200, raw
    issued = validate(raw, "/authorization/credentials", "get", 200)
    assert issued["applicationId"] == "vtex" and issued["appKey"] and len(issued["appToken"]) >= 32
    assert exchange(c, code)[:2] == (status, raw)  # the gateway's retry: the same pair
    merchant = {"X-VTEX-API-AppKey": issued["appKey"], "X-VTEX-API-AppToken": issued["appToken"],
                "Content-Type": "application/json"}
    status, raw, _ = c.post("/payments", create_body("onb-1"), merchant)
    assert status == 200 and json.loads(raw)["status"] == "approved"
    # Its payments are its own: the existing merchant cannot see them.
    assert c.post("/payments/onb-1/settlements", {"paymentId": "onb-1", "requestId": "s", "value": 31.9})[0] == 500
    # The token only ever shows the same code; the page is not cached.
    _, page, headers = request(c.port, "GET", f"/authorization/redirect?applicationId=vtex&token={token}", headers={})
    assert code.encode() in page and headers["cache-control"] == "no-store"

    # At rest: the token only as its digest.
    stored = (c.data_dir / "onboarded-merchants.json").read_text()
    assert issued["appKey"] in stored and issued["appToken"] not in stored
    c.process.terminate()
    c.start()
    status, raw, _ = c.post("/payments", create_body("onb-2"), merchant)
    assert status == 200 and json.loads(raw)["status"] == "approved"
    assert exchange(c, code)[0] == 404  # codes do not outlive the process that issued them


def test_the_flow_is_closed_to_everyone_else_and_its_credentials_open_nothing_else(connector_factory):
    c = connector_with_flow(connector_factory)
    # Merchants cannot start a flow or exchange a code.
    assert c.post("/authorization/token", {"applicationId": "vtex", "returnUrl": RETURN}, AUTH)[0] == 403
    _, code = onboard(c)
    assert request(c.port, "GET", f"/authorization/credentials?applicationId=vtex&authorizationCode={code}",
                   headers=AUTH)[0] == 403
    # The flow's credentials cannot take payments.
    assert c.post("/payments", create_body("onb-x"), FLOW)[0] == 403
    # Crafted inputs: another host to send the merchant back to, a script in the URL, unknown
    # tokens and codes.
    for bad in ["https://attacker.example/steal", "javascript:alert(1)", "https://admin.example/\r\nX: y"]:
        assert c.post("/authorization/token", {"applicationId": "vtex", "returnUrl": bad}, FLOW)[0] == 400, bad
    assert c.post("/authorization/token", {"applicationId": "other", "returnUrl": RETURN}, FLOW)[0] == 400
    assert request(c.port, "GET", "/authorization/redirect?applicationId=vtex&token=deadbeef", headers={})[0] == 404
    assert exchange(c, "deadbeef")[0] == 404
    assert not (c.data_dir / "onboarded-merchants.json").exists()


def flow_connector(connector_factory, *extra):
    return connector_factory(merchants=MERCHANTS, extra_args=["--onboarding-return-hosts", "admin.example", *extra])


def test_the_flow_cannot_exhaust_memory_or_fill_the_merchants_file(connector_factory):
    c = flow_connector(connector_factory, "--onboarding-max-merchants", "3")
    # A huge returnUrl is refused outright (it would live in memory for the token's 15 minutes).
    huge = RETURN + "&pad=" + "x" * 200_000
    status, raw, _ = c.post("/authorization/token", {"applicationId": "vtex", "returnUrl": huge}, FLOW)
    assert status == 400 and b"longer than" in raw, raw
    # No more merchants than the cap: the fourth exchange is refused and the file keeps three.
    codes = [onboard(c)[1] for _ in range(4)]
    assert [exchange(c, code)[0] for code in codes] == [200, 200, 200, 503]
    stored = json.loads((c.data_dir / "onboarded-merchants.json").read_text())
    assert len(stored["merchants"]) == 3
    # Pending flows are bounded per credential (100 live tokens): the 101st waits.
    statuses = [c.post("/authorization/token", {"applicationId": "vtex", "returnUrl": RETURN}, FLOW)[0]
                for _ in range(101)]
    assert statuses.count(200) <= 100 - 4 and statuses[-1] == 503, statuses


def test_merchants_are_onboarded_at_a_bounded_rate_and_a_refused_code_works_later(connector_factory):
    c = flow_connector(connector_factory)
    codes = [onboard(c)[1] for _ in range(22)]
    statuses = [exchange(c, code)[0] for code in codes]
    assert statuses[:20] == [200] * 20 and 503 in statuses[20:], statuses
    refused = codes[statuses.index(503)]
    deadline = time.time() + 15  # one more every 3 s
    while exchange(c, refused)[0] != 200:
        assert time.time() < deadline, "the refused code never went through"
        time.sleep(0.5)


def test_the_consent_page_keeps_the_fragment_and_cannot_be_framed(connector_factory):
    c = flow_connector(connector_factory)
    back = "https://admin.example/return?x=1#done"
    status, raw, _ = c.post("/authorization/token", {"applicationId": "vtex", "returnUrl": back}, FLOW)
    token = json.loads(raw)["token"]
    status, page, headers = request(c.port, "GET", f"/authorization/redirect?token={token}", headers={})
    link = re.search(rb'id="accept" href="([^"]+)"', page).group(1).decode().replace("&amp;", "&")
    code = re.search(r"authorizationCode=([0-9a-f]+)", link).group(1)
    assert link == f"https://admin.example/return?x=1&authorizationCode={code}#done", link
    assert "frame-ancestors 'none'" in headers["content-security-policy"]
    assert headers["x-frame-options"] == "DENY"
