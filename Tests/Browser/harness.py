"""What the browser tests share: the stack scripts/with-stack.sh started, headless Chromium, and screenshots.

The tests run inside `scripts/with-stack.sh` (scripts/browser-tests.sh does that), which names the stack in
RAVE_STACK_* variables. Chromium trusts the gateway's certificate by its public key
(`--ignore-certificate-errors-spki-list`), the narrowest exception there is: any other certificate error still fails.
"""

import base64
import functools
import hashlib
import json
import os
import pathlib
import ssl
import subprocess
import tempfile
import urllib.error
import urllib.request
import uuid

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.support.ui import WebDriverWait

ROOT = pathlib.Path(__file__).resolve().parents[2]
SCREENSHOTS = ROOT / ".test-output" / "demo"
WAIT_SECONDS = 20


class Stack:
    """The running stack, from the variables scripts/with-stack.sh exports."""

    def __init__(self):
        missing = [name for name in ("RAVE_STACK_URL", "RAVE_STACK_CA", "RAVE_STACK_APP_ID") if name not in os.environ]
        if missing:
            raise RuntimeError(f"run the browser tests through scripts/with-stack.sh ({', '.join(missing)} unset)")
        self.url = os.environ["RAVE_STACK_URL"]
        self.ca = os.environ["RAVE_STACK_CA"]
        self.gateway_cert = os.environ["RAVE_STACK_GATEWAY_CERT"]
        self.admin_cert = os.environ["RAVE_STACK_ADMIN_CERT"]
        self.admin_key = os.environ["RAVE_STACK_ADMIN_KEY"]
        self.app_id = os.environ["RAVE_STACK_APP_ID"]

    def demo_url(self):
        return f"{self.url}/demo/?app={self.app_id}"

    def call(self, method, request, token=None, admin=False, headers=None):
        """Calls a method through the HTTP front door without a browser (no Origin header).

        Answers (HTTP status, JSON body, response headers).
        """
        context = ssl.create_default_context(cafile=self.ca)
        if admin:
            context.load_cert_chain(self.admin_cert, self.admin_key)
        all_headers = {"Content-Type": "application/json", "X-Request-Id": f"browser-tests-{uuid.uuid4()}"}
        if token:
            all_headers["Authorization"] = f"Bearer {token}"
        all_headers.update(headers or {})
        http_request = urllib.request.Request(
            f"{self.url}/v1/{method}", data=json.dumps(request).encode(), headers=all_headers, method="POST")
        try:
            with urllib.request.urlopen(http_request, context=context, timeout=WAIT_SECONDS) as answer:
                return answer.status, json.loads(answer.read() or b"{}"), dict(answer.headers)
        except urllib.error.HTTPError as error:
            body = error.read()
            try:
                parsed = json.loads(body or b"{}")
            except ValueError:
                parsed = {"raw": body.decode(errors="replace")}
            return error.code, parsed, dict(error.headers)

    def deposit(self, user_id, amount):
        """Funds a player's sandbox GOLD as an operator (the admin certificate)."""
        status, body, _ = self.call("rave.wallet.v1.WalletAdmin/Deposit", {"transfer": {
            "operationId": uuid.uuid4().hex, "userId": user_id, "currency": "GOLD",
            "economy": "ECONOMY_SANDBOX", "amount": amount, "reason": "browser test"}}, admin=True)
        if status != 200:
            raise AssertionError(f"deposit failed: {status} {body}")
        return body


@functools.cache
def gateway_pin(certificate):
    """base64 of the SHA-256 of the certificate's SubjectPublicKeyInfo, as Chromium's SPKI list wants it."""
    public_key = subprocess.run(["openssl", "x509", "-in", certificate, "-pubkey", "-noout"],
                                capture_output=True, check=True).stdout
    der = subprocess.run(["openssl", "pkey", "-pubin", "-outform", "der"], input=public_key,
                         capture_output=True, check=True).stdout
    return base64.b64encode(hashlib.sha256(der).digest()).decode()


def browser(stack, width=1280, height=800):
    """A headless Chromium with a profile of its own (its own localStorage: its own device, its own player)."""
    options = webdriver.ChromeOptions()
    options.binary_location = os.environ.get("RAVE_CHROMIUM", "/usr/bin/chromium")
    profile = tempfile.mkdtemp(prefix="rave-chromium-")
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                     f"--window-size={width},{height}", f"--user-data-dir={profile}",
                     f"--ignore-certificate-errors-spki-list={gateway_pin(stack.gateway_cert)}",
                     "--no-first-run", "--no-default-browser-check", "--disable-extensions"):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(
        service=Service(os.environ.get("RAVE_CHROMEDRIVER", "/usr/bin/chromedriver")), options=options)
    driver.set_script_timeout(60)
    driver.profile_directory = profile
    # The exact viewport (a window cannot be made narrower than 500 px); a narrow one is a phone's.
    driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                           {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": width < 600})
    return driver


def close(driver):
    profile = getattr(driver, "profile_directory", None)
    driver.quit()
    if profile:
        subprocess.run(["rm", "-rf", profile], check=False)


def screenshot(driver, name, directory=SCREENSHOTS):
    """Saves the whole page (not only the viewport) as <directory>/<name>.png (default .test-output/demo/)."""
    directory.mkdir(parents=True, exist_ok=True)
    width, height = driver.execute_script(
        "return [document.documentElement.clientWidth,"
        "        Math.max(document.documentElement.scrollHeight, document.body.scrollHeight)]")
    shot = driver.execute_cdp_cmd("Page.captureScreenshot", {
        "format": "png", "captureBeyondViewport": True,
        "clip": {"x": 0, "y": 0, "width": width, "height": height, "scale": 1}})
    path = directory / f"{name}.png"
    path.write_bytes(base64.b64decode(shot["data"]))
    return path


def wait_for(driver, condition, message, seconds=WAIT_SECONDS):
    """Waits until condition(driver) is truthy and answers it; fails with message and the browser's console."""
    try:
        # An element the page replaced while the condition read it is asked again at the next poll.
        return WebDriverWait(driver, seconds, poll_frequency=0.1,
                             ignored_exceptions=(StaleElementReferenceException,)).until(lambda d: condition(d), message)
    except Exception as error:
        raise AssertionError(f"{message}\nbrowser console:\n{console(driver)}") from error


def console(driver):
    try:
        return "\n".join(f"  {entry['level']}: {entry['message']}" for entry in driver.get_log("browser"))
    except Exception:  # noqa: BLE001 - the log is a diagnostic only
        return "  (unavailable)"


def run_async(driver, body, *arguments):
    """Runs an async JavaScript function body in the page and answers its result.

    The body sees `args` (the arguments) and may await; what it returns comes back; a throw fails the test with the
    error's text.
    """
    script = (
        "const done = arguments[arguments.length - 1];"
        "const args = Array.from(arguments).slice(0, -1);"
        f"(async () => {{ {body} }})().then("
        "  (value) => done({ok: true, value}),"
        "  (error) => done({ok: false, error: String(error && (error.stack || error.message) || error),"
        "                   status: error && error.status}));")
    result = driver.execute_async_script(script, *arguments)
    if not result["ok"]:
        raise AssertionError(f"the page's script failed: {result['error']}")
    return result["value"]
