"""The operator console in a real browser (Debian's chromium, driven by python3-selenium):
sign in, find a payment, double-click "refund" — the acquirer's ledger shows one refund. A
screenshot of the console is kept with the test's output (CONSOLE_SCREENSHOT names where)."""
import json
import os
import shutil
import time

import pytest

from conftest import AUTH, ledger, request
from test_operator_api import MERCHANTS, OPERATORS, ROOT, approved

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.action_chains import ActionChains
from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as ready
from selenium.webdriver.support.ui import WebDriverWait


def click_when_ready(wait, locator):
    """Clicks what `locator` finds once it can; the page redraws tables as answers arrive, so
    an element found a moment ago may be gone: it is looked up again."""
    def attempt(driver):
        try:
            driver.find_element(*locator).click()
            return True
        except (StaleElementReferenceException, NoSuchElementException):
            return False
    wait.until(attempt)


@pytest.fixture
def browser(tmp_path):
    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which("chromium") or "/usr/bin/chromium"
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--window-size=1280,1100", f"--user-data-dir={tmp_path / 'profile'}"):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})  # the page's errors, for the tests
    driver = webdriver.Chrome(service=Service(shutil.which("chromedriver") or "/usr/bin/chromedriver"),
                              options=options)
    driver.set_page_load_timeout(30)
    yield driver
    driver.quit()


def test_a_double_clicked_refund_in_the_console_refunds_once(connector_factory, stubs, browser, base_dir):
    stub = stubs("--latency-ms", "300")  # a refund takes a moment: the second click arrives while it runs
    c = connector_factory(acquirer=stub.url, merchants=MERCHANTS, operators=OPERATORS)
    approved(c, "console-1", value=25)
    status, _, _ = request(c.port, "POST", "/payments/console-1/settlements",
                           {"paymentId": "console-1", "requestId": "s-1", "value": 25}, AUTH)
    assert status == 200
    wait = WebDriverWait(browser, 20)
    browser.get(f"http://127.0.0.1:{c.port}/admin/")
    browser.find_element(By.ID, "token").send_keys(ROOT)
    browser.find_element(By.ID, "sign-in-button").click()
    wait.until(ready.visibility_of_element_located((By.ID, "console")))
    assert browser.find_element(By.ID, "who-name").text == "alice"
    # The search lists the payment; a click opens it.
    click_when_ready(wait, (By.XPATH, "//table[@id='results']//td[text()='console-1']"))
    wait.until(ready.text_to_be_present_in_element((By.ID, "detail-id"), "console-1"))
    wait.until(ready.text_to_be_present_in_element((By.ID, "timeline"), "operation processed"))
    browser.find_element(By.CSS_SELECTOR, "#actions button[data-action='refunds']").click()
    wait.until(ready.visibility_of_element_located((By.ID, "action-form")))
    key = browser.find_element(By.ID, "action-key").text
    assert len(key) >= 16
    amount = browser.find_element(By.ID, "action-value")
    amount.clear()
    amount.send_keys("7.5")
    browser.find_element(By.ID, "action-reason").send_keys("customer called: item returned")
    ActionChains(browser).double_click(browser.find_element(By.ID, "action-submit")).perform()
    wait.until(lambda d: d.find_element(By.ID, "action-result").get_attribute("data-status"))
    # Both clicks sent the form's one key: one refund, whatever the second click was told.
    deadline = time.time() + 10
    while time.time() < deadline:
        detail = json.loads(request(c.port, "GET", "/admin/v1/payments/console-1",
                                    headers={"Authorization": "Bearer " + ROOT})[1])
        if detail["refunded"] == 7.5:
            break
        time.sleep(0.2)
    refunds = [r for k, r in ledger(stub).get("refunds", {}).items() if k.startswith("console-1/")]
    assert len(refunds) == 1 and refunds[0]["amount"] == 7.5, refunds
    assert detail["refunded"] == 7.5
    # The page shows it (the detail is drawn again after each action): the operator's reason
    # in the timeline.
    wait.until(ready.text_to_be_present_in_element((By.ID, "timeline"), "customer called: item returned"))
    assert "refund by operator alice" in browser.find_element(By.ID, "timeline").text
    shot = os.environ.get("CONSOLE_SCREENSHOT") or str(base_dir / "console.png")
    browser.save_screenshot(shot)
    assert os.path.getsize(shot) > 10_000
    # Nothing in the page came from elsewhere.
    for entry in browser.execute_script("return performance.getEntriesByType('resource').map(e => e.name)"):
        assert entry.startswith(f"http://127.0.0.1:{c.port}/"), entry


def test_the_console_opens_any_id_the_connector_accepts_and_keeps_nothing_of_the_last(connector_factory, stubs,
                                                                                      browser):
    """A paymentId with ':' is sent percent-encoded and decoded once by the API; an id that is
    no payment shows an error and nothing of the payment shown before (its trail, its buttons)."""
    c = connector_factory(acquirer=stubs().url, merchants=MERCHANTS, operators=OPERATORS)
    approved(c, "order:42", value=12)
    wait = WebDriverWait(browser, 20)
    browser.get(f"http://127.0.0.1:{c.port}/admin/")
    browser.find_element(By.ID, "token").send_keys(ROOT)
    browser.find_element(By.ID, "sign-in-button").click()
    wait.until(ready.visibility_of_element_located((By.ID, "console")))

    def open_id(payment_id):
        box = browser.find_element(By.ID, "search-id")
        box.clear()
        box.send_keys(payment_id)
        browser.find_element(By.ID, "search-button").click()
        wait.until(ready.text_to_be_present_in_element((By.ID, "detail-id"), payment_id))

    open_id("order:42")
    wait.until(ready.text_to_be_present_in_element((By.ID, "timeline"), "event processed"))
    assert "shop" in browser.find_element(By.ID, "facts").text
    for not_a_payment in ("..", "no-such-payment"):
        open_id(not_a_payment)
        wait.until(ready.text_to_be_present_in_element((By.ID, "facts"), "error"))
        assert browser.find_element(By.ID, "timeline").text == ""
        assert browser.find_element(By.CSS_SELECTOR, "#operations tbody").text == ""
        errors = [e for e in browser.get_log("browser") if e["level"] == "SEVERE" and "TypeError" in e["message"]]
        assert not errors, errors
