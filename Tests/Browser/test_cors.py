"""CORS at the HTTP front door: a page of another local origin calls the gateway from headless Chromium. The
browser must fail the call, and the gateway must not have run it (the guest login it tried never created its user).
"""

import functools
import http.server
import pathlib
import ssl
import threading
import unittest
import urllib.error
import urllib.parse
import urllib.request
import uuid

import harness

PAGES = pathlib.Path(__file__).parent / "pages"


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *arguments):
        pass


class CORSTests(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.stack = harness.Stack()
        # Another origin: plain HTTP on another loopback port, serving Tests/Browser/pages.
        cls.server = http.server.ThreadingHTTPServer(
            ("127.0.0.1", 0), functools.partial(QuietHandler, directory=str(PAGES)))
        cls.origin = f"http://127.0.0.1:{cls.server.server_address[1]}"
        threading.Thread(target=cls.server.serve_forever, daemon=True).start()

    @classmethod
    def tearDownClass(cls):
        cls.server.shutdown()
        cls.server.server_close()

    def preflight(self, origin):
        request = urllib.request.Request(
            f"{self.stack.url}/v1/rave.identity.v1.Identity/GuestLogin", method="OPTIONS",
            headers={"Origin": origin, "Access-Control-Request-Method": "POST",
                     "Access-Control-Request-Headers": "content-type"})
        context = ssl.create_default_context(cafile=self.stack.ca)
        try:
            with urllib.request.urlopen(request, context=context, timeout=harness.WAIT_SECONDS) as answer:
                return answer.status, dict(answer.headers)
        except urllib.error.HTTPError as error:
            return error.code, dict(error.headers)

    def test_a_page_of_another_origin_is_refused_and_its_call_not_made(self):
        device, simple_device = f"cors-{uuid.uuid4()}", f"cors-simple-{uuid.uuid4()}"
        query = urllib.parse.urlencode({"gateway": self.stack.url, "app": self.stack.app_id, "device": device,
                                        "simpleDevice": simple_device})
        driver = harness.browser(self.stack)
        try:
            driver.get(f"{self.origin}/foreign.html?{query}")
            harness.wait_for(driver, lambda d: d.execute_script("return document.body.dataset.done") == "true",
                             "the foreign page's calls finish")
            preflighted = driver.find_element("id", "preflighted").text
            simple = driver.find_element("id", "simple").text
            harness.screenshot(driver, "09-cors-foreign-origin-refused")
        finally:
            harness.close(driver)
        self.assertTrue(preflighted.startswith("refused: TypeError"), preflighted)
        # A no-cors request is sent without a preflight; its answer is hidden from the page.
        self.assertEqual(simple, "answered: type opaque, status 0")

        # Neither call ran: the first guest login of each device happens now.
        for each in (device, simple_device):
            status, body, _ = self.stack.call("rave.identity.v1.Identity/GuestLogin",
                                              {"appId": self.stack.app_id, "device": {"deviceId": each}})
            self.assertEqual(status, 200, body)
            self.assertTrue(body.get("created"), f"the gateway made no user for {each} before: {body}")

    def test_preflights_are_answered_for_the_gateway_origin_only(self):
        status, headers = self.preflight(self.origin)
        self.assertEqual(status, 403)
        self.assertNotIn("access-control-allow-origin", {name.lower() for name in headers})
        status, headers = self.preflight(self.stack.url)
        self.assertEqual(status, 204)
        allowed = {name.lower(): value for name, value in headers.items()}
        self.assertEqual(allowed.get("access-control-allow-origin"), self.stack.url)


if __name__ == "__main__":
    unittest.main()
