"""The browser SDK (Clients/web/rave.js) in headless Chromium against the whole stack: one shared token refresh,
retries of calls the gateway did not process, errors, batches. The checks themselves are sdk_checks.js, run in a
page of the gateway's own origin with the SDK the gateway serves at /sdk/rave.js.
"""

import json
import os
import pathlib
import unittest

import harness

CHECKS = (pathlib.Path(__file__).parent / "sdk_checks.js").read_text()


class SDKTests(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.stack = harness.Stack()
        cls.driver = harness.browser(cls.stack)
        # A page of the gateway's origin (the demo without an app id makes no calls).
        cls.driver.get(f"{cls.stack.url}/demo/")
        harness.wait_for(cls.driver, lambda d: d.execute_script("return document.readyState") == "complete",
                         "the page loads")

    @classmethod
    def tearDownClass(cls):
        harness.close(cls.driver)

    def check(self, name, *arguments):
        """Runs sdk_checks.js's `name` with the SDK module, the demo app id and arguments."""
        return harness.run_async(self.driver, f"""
            const sdk = await import("/sdk/rave.js");
            const source = {json.dumps(CHECKS)};
            const checks = await import(URL.createObjectURL(new Blob([source], {{type: "text/javascript"}})));
            return await checks[{json.dumps(name)}](sdk, ...args);
        """, self.stack.app_id, *arguments)

    def test_concurrent_calls_share_one_refresh_before_expiry(self):
        result = self.check("refreshBeforeExpiry", 8)
        self.assertEqual(result["outcomes"], [{"ok": True, "userId": result["userId"]}] * 8)
        self.assertEqual(result["refreshesInBurst"], 1, "eight calls, one refresh")
        self.assertTrue(result["rotated"], "the refresh token was rotated")
        self.assertEqual(result["ended"], [], "the session never ended")
        self.assertEqual(result["refreshesInAll"], 2)
        self.assertEqual(result["afterUserId"], result["userId"], "the session is alive after the burst")

    def test_concurrent_401s_share_one_refresh_and_each_call_is_sent_once_more(self):
        result = self.check("refreshAfterUnauthenticated", 8)
        self.assertEqual(result["outcomes"], [{"ok": True, "userId": result["userId"]}] * 8)
        self.assertEqual(result["refreshes"], 1)
        self.assertEqual(sorted(result["attempts"]), [[401, 200]] * 8, "each call: refused, then served")

    def test_calls_not_processed_are_retried_after_retry_after(self):
        burst = int(os.environ.get("RAVE_GATEWAY_USER_BURST", "0"))
        self.assertGreater(burst, 0, "scripts/browser-tests.sh sets RAVE_GATEWAY_USER_RATE/_BURST low for this test")
        concurrent = burst + 15
        result = self.check("retriesNotProcessed", concurrent)
        self.assertEqual([outcome for outcome in result["outcomes"] if not outcome["ok"]], [])
        self.assertEqual(len(result["outcomes"]), concurrent)
        self.assertGreater(len(result["refused"]), 0, "the rate limit refused some calls")
        for refused in result["refused"]:
            self.assertEqual(refused["status"], 429)
            self.assertEqual(refused["notProcessed"], "true")
            self.assertRegex(refused["retryAfter"] or "", r"^\d+$")
        self.assertEqual(len(result["retries"]), len(result["refused"]), "every refusal was retried once")
        for retry in result["retries"]:
            self.assertEqual((retry["status"], retry["notProcessed"], retry["httpStatus"]),
                             ("RESOURCE_EXHAUSTED", True, 429))
            self.assertEqual(retry["delayMs"], retry["retryAfterMs"], "the pause is the answer's Retry-After")
            self.assertGreaterEqual(retry["delayMs"], 1000)
        self.assertEqual(result["distinctRequestIds"], concurrent, "a retry keeps its call's X-Request-Id")
        self.assertEqual(result["requests"], concurrent + len(result["refused"]))
        self.assertTrue(result["everyAnswerEchoedItsId"])

    def test_a_processed_failure_is_a_typed_error_and_not_retried(self):
        result = self.check("processedFailureIsNotRetried")
        self.assertEqual(result["scopes"], ["player", "guest"])
        self.assertTrue(result["isRaveError"])
        self.assertEqual((result["status"], result["code"], result["httpStatus"], result["notProcessed"]),
                         ("FAILED_PRECONDITION", 9, 400, False), result["message"])
        self.assertTrue(result["requestIdMatches"], "the error names the call's X-Request-Id")
        self.assertEqual((result["sent"], result["retries"]), (1, 0))

    def test_batch_answers_in_order_with_typed_errors(self):
        results = self.check("batchResults")
        caller = results.pop()["userId"]
        self.assertEqual([(r["name"], r["ok"], r["status"], r["dependencyFailed"]) for r in results], [
            ("me", True, "OK", False),
            ("score", False, "FAILED_PRECONDITION", False),
            ("rank", False, "ABORTED", True),
        ])
        self.assertTrue(all(r["isRaveError"] for r in results))
        self.assertEqual(results[0]["userId"], caller)

    def test_account_export_is_asked_for_seen_and_an_unknown_one_is_not_found(self):
        result = self.check("accountExport")
        self.assertTrue(result["created"])
        self.assertFalse(result["createdAgain"], "the export in progress is answered")
        self.assertTrue(result["sameExport"] and result["seenId"] and result["latestId"] and result["userId"])
        self.assertIn(result["status"], ["ACCOUNT_EXPORT_STATUS_PENDING", "ACCOUNT_EXPORT_STATUS_READY"])
        self.assertEqual((result["isRaveError"], result["errorStatus"], result["httpStatus"]),
                         (True, "NOT_FOUND", 404))


if __name__ == "__main__":
    unittest.main()
