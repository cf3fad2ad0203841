"""The receipt verification page (/receipts/verify) in a real browser (Debian's chromium, as the
console's test drives it): a good receipt passes both steps, with the browser's own Ed25519 and
SHA-256; one changed byte fails step one; a receipt whose payment was cut from the log fails
step two; the page saved to disk and opened from there checks a receipt as well."""
import json

from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from conftest import request
from test_console import browser  # noqa: F401 (a fixture)
from test_postgres import pg_uri, psql  # noqa: F401 (a fixture)
from test_receipts import ANCHOR, receipt_of
from test_transparency_log import LOG_ARGS, included, leaf_of
from test_operator_api import MERCHANTS, OPERATORS, approved


def check_in_page(browser, page_url, anchor, receipt, server):
    """Fills the page's fields, presses Check; the two steps' outcomes: (passed, text) each."""
    browser.get(page_url)
    for field, value in (("anchor", anchor), ("receipt", receipt), ("server", server)):
        browser.execute_script("arguments[0].value = arguments[1]", browser.find_element(By.ID, field), value)
    browser.find_element(By.ID, "verify").click()
    finished = lambda d: not d.find_element(By.CSS_SELECTOR, "#step2 .result").text.startswith(("Checking", "Waiting"))
    WebDriverWait(browser, 20).until(finished)
    outcome = []
    for step in ("step1", "step2"):
        box = browser.find_element(By.ID, step)
        outcome.append(("pass" in box.get_attribute("class").split(), box.find_element(By.CSS_SELECTOR, ".result").text))
    return outcome


def paid_receipt(connector_factory, stubs, *extra):
    c = connector_factory(acquirer=stubs().url, merchants=MERCHANTS, operators=OPERATORS, extra_args=[*LOG_ARGS, *extra])
    approved(c, "page-1", value=12)
    got = receipt_of(c, "page-1")
    included(c, got["claims"])
    anchor = request(c.port, "GET", ANCHOR, headers={})[1].decode()
    return c, got, anchor


def test_a_good_receipt_passes_both_steps_and_a_changed_one_fails_step_one(connector_factory, stubs, browser):
    c, got, anchor = paid_receipt(connector_factory, stubs)
    server = f"http://127.0.0.1:{c.port}"
    (one, one_text), (two, two_text) = check_in_page(browser, server + "/receipts/verify", anchor, got["receipt"], server)
    assert one and "page-1" in one_text and "12.00 BRL" in one_text, one_text
    assert two and "leaf" in two_text and "signed by 1 key" in two_text, two_text

    header, payload, signature = got["receipt"].split(".")
    claims = json.loads(__import__("base64").urlsafe_b64decode(payload + "=="))
    claims["authorized"] = "1200.00"
    forged_payload = __import__("base64").urlsafe_b64encode(json.dumps(claims, separators=(",", ":")).encode())
    forged = f"{header}.{forged_payload.decode().rstrip('=')}.{signature}"
    (one, one_text), (two, _) = check_in_page(browser, server + "/receipts/verify", anchor, forged, server)
    assert not one and "does not verify" in one_text, one_text
    assert not two

    # A key the pinned anchor does not list.
    other = json.dumps({"keys": [{"kty": "OKP", "crv": "Ed25519", "x": "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo",
                                  "kid": "kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k"}]})
    (one, one_text), _ = check_in_page(browser, server + "/receipts/verify", other, got["receipt"], server)
    assert not one and "does not list" in one_text, one_text
    errors = [e for e in browser.get_log("browser") if e["level"] == "SEVERE"]
    assert not errors, errors


def test_a_receipt_cut_from_the_log_fails_step_two(connector_factory, stubs, browser, pg_uri):
    c, got, anchor = paid_receipt(connector_factory, stubs, "--store", pg_uri)
    psql(pg_uri, f"DELETE FROM idempay.kv_log WHERE key = convert_to('x/{leaf_of(got['claims']).hex()}', 'UTF8')")
    server = f"http://127.0.0.1:{c.port}"
    (one, _), (two, two_text) = check_in_page(browser, server + "/receipts/verify", anchor, got["receipt"], server)
    assert one
    assert not two and "cut from the log" in two_text, two_text


def test_the_page_saved_to_disk_checks_a_receipt(connector_factory, stubs, browser, tmp_path):
    c, got, anchor = paid_receipt(connector_factory, stubs)
    for name in ("verify", "verify.js"):
        status, body, headers = request(c.port, "GET", "/receipts/" + name, headers={})
        assert status == 200 and "script-src 'self'" in headers["content-security-policy"]
        (tmp_path / (name if name.endswith(".js") else "verify.html")).write_bytes(body)
    server = f"http://127.0.0.1:{c.port}"
    (one, _), (two, two_text) = check_in_page(browser, (tmp_path / "verify.html").as_uri(), anchor, got["receipt"],
                                              server)
    assert one and two, two_text
