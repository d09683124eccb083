"""The demo game (Clients/demo) played by two guests in headless Chromium against the whole stack.

Each step checks what the page shows and saves a screenshot in .test-output/demo/ for a reviewer.
"""

import re
import unittest
import uuid

from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

import harness


def text(driver, element_id):
    return driver.find_element(By.ID, element_id).text


def ready(driver):
    state = driver.execute_script("return document.body.dataset.ready || ''")
    if state == "error":
        raise AssertionError(f"the demo could not start: {text(driver, 'player-status')}")
    return state == "true"


def open_demo(driver, stack):
    driver.get(stack.demo_url())
    harness.wait_for(driver, ready, "the demo signs in and loads")
    return text(driver, "rave-id")


def overflows_horizontally(driver):
    return driver.execute_script("return document.documentElement.scrollWidth > window.innerWidth + 1")


def fair_checks(driver):
    """Each provably fair check's result ("pass"/"fail") and the mark the page shows, once all three are done."""
    def done(d):
        results = d.execute_script(
            "return ['check-commitment', 'check-roll', 'check-payout'].map("
            "  (id) => [document.getElementById(id).dataset.result || '',"
            "           document.querySelector('#' + id + ' .mark').textContent,"
            "           document.getElementById(id).innerText])")
        return results if all(result for result, _, _ in results) else None
    return harness.wait_for(driver, done, "the provably fair checks finish")


def name_player(driver, name):
    field = driver.find_element(By.ID, "name-input")
    field.clear()
    field.send_keys(name, Keys.ENTER)
    harness.wait_for(driver, lambda d: "Saved" in text(d, "player-status"), f"the name {name} is saved")


def roll_by_keyboard(driver):
    """Rolls by pressing Enter in the client seed field; answers the provably fair checks of that roll."""
    driver.execute_script("for (const id of ['check-commitment', 'check-roll', 'check-payout'])"
                          "  delete document.getElementById(id).dataset.result")
    seed = driver.find_element(By.ID, "client-seed")
    seed.click()
    seed.send_keys(Keys.ENTER)
    return fair_checks(driver)


def post_score(driver, user_id, points):
    """Posts the points and waits until the refreshed top 10 shows them for the player."""
    driver.find_element(By.ID, "submit-score").click()
    harness.wait_for(driver, lambda d: "Posted" in text(d, "board-status"), "the score is posted")
    harness.wait_for(driver, lambda d: any(row["userId"] == user_id and row["cells"][2] == str(points)
                                           for row in board_rows(d)), "the top 10 shows the score")


def board_rows(driver):
    return driver.execute_script(
        "return Array.from(document.querySelectorAll('#top10 tbody tr[data-user-id]')).map((row) =>"
        "  ({userId: row.dataset.userId, cells: Array.from(row.cells).slice(0, 3).map((cell) => cell.textContent)}))")


class DemoGameTests(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.stack = harness.Stack()

    def setUp(self):
        self.browsers = []

    def tearDown(self):
        for driver in self.browsers:
            harness.close(driver)

    def open_browser(self, **size):
        driver = harness.browser(self.stack, **size)
        self.browsers.append(driver)
        return driver

    def test_two_guests_bet_score_and_gift(self):
        suffix = uuid.uuid4().hex[:6]
        alice_name, bob_name = f"Alice {suffix}", f"Bob {suffix}"

        # 1. Alice signs in as a guest; a reload keeps her session and her device id.
        alice = self.open_browser(width=1280, height=800)
        alice_id = open_demo(alice, self.stack)
        self.assertRegex(alice_id, r"^[0-9a-f]{32}$")
        self.assertEqual(text(alice, "account-state"), "guest (anonymous)")
        device = alice.execute_script("return localStorage.getItem('rave.deviceId')")
        self.assertRegex(device, r"^[0-9a-f-]{36}$")
        harness.screenshot(alice, "01-alice-signed-in-1280")
        alice.refresh()
        harness.wait_for(alice, ready, "the demo loads again after a reload")
        self.assertEqual(text(alice, "rave-id"), alice_id, "a reload stays signed in as the same player")
        self.assertEqual(alice.execute_script("return localStorage.getItem('rave.deviceId')"), device)

        # Keyboard: Tab from the name field reaches its button, and the focus is visible.
        alice.find_element(By.ID, "name-input").click()
        alice.switch_to.active_element.send_keys(Keys.TAB)
        focused = alice.switch_to.active_element
        self.assertEqual(focused.get_attribute("id"), "name-save")
        self.assertNotEqual(focused.value_of_css_property("outline-style"), "none", "the focused button shows it")

        # 2. A name makes her a personalized player (the page refreshes her token, so scores are accepted).
        name_player(alice, alice_name)
        self.assertEqual(text(alice, "account-state"), "personalized guest")
        harness.screenshot(alice, "02-alice-named")

        # 3. Funded by an operator, she rolls a backed bet with the keyboard; the browser verifies it.
        self.stack.deposit(alice_id, "10.00")
        alice.refresh()
        harness.wait_for(alice, ready, "the demo loads with the deposit")
        self.assertEqual(text(alice, "balance"), "10.00 (sandbox)")
        self.assertEqual(alice.find_element(By.ID, "bet-mode").get_attribute("data-mode"), "backed")
        commitment = text(alice, "commitment")
        self.assertRegex(commitment, r"^[0-9a-f]{64}$")
        checks = roll_by_keyboard(alice)
        for result, mark, line in checks:
            self.assertEqual((result, mark), ("pass", "✓"), line)
        rolled = int(text(alice, "die"))
        self.assertIn(rolled, range(1, 7))
        expected_balance = "14.70" if rolled == 1 else "9.00"
        self.assertEqual(text(alice, "balance"), f"{expected_balance} (sandbox)", "the wager (and payout) moved")
        self.assertNotEqual(text(alice, "commitment"), commitment, "a new seed is committed after the reveal")
        alice_points = int(text(alice, "points"))
        self.assertEqual(alice_points, 25 if rolled == 1 else rolled)
        harness.screenshot(alice, "03-alice-backed-roll-verified")

        # 4. She posts her points: the top 10 lists her with them, and her own rank is shown.
        post_score(alice, alice_id, alice_points)
        rows = board_rows(alice)
        mine = [row for row in rows if row["userId"] == alice_id]
        self.assertEqual(len(mine), 1, rows)
        self.assertEqual(mine[0]["cells"][1:], [alice_name, str(alice_points)])
        self.assertRegex(text(alice, "my-rank"), rf"^Your rank: #{mine[0]['cells'][0]} of \d+ \(best {alice_points}\)$")
        self.assertLessEqual(len(rows), 10)
        self.assertFalse(overflows_horizontally(alice), "no sideways scrolling at 1280x800")
        harness.screenshot(alice, "04-alice-on-the-board")

        # 5. Bob plays on a phone-sized window: a guest without GOLD rolls a practice (unbacked) bet, verified too.
        bob = self.open_browser(width=390, height=844)
        bob_id = open_demo(bob, self.stack)
        self.assertEqual(bob.execute_script("return window.innerWidth"), 390)
        self.assertNotEqual(bob_id, alice_id)
        self.assertEqual(bob.find_element(By.ID, "bet-mode").get_attribute("data-mode"), "unbacked")
        name_player(bob, bob_name)
        checks = roll_by_keyboard(bob)
        for result, mark, line in checks:
            self.assertEqual((result, mark), ("pass", "✓"), line)
        self.assertEqual(text(bob, "balance"), "0.00 (sandbox)", "a practice roll moves no GOLD")
        bob_points = int(text(bob, "points"))
        post_score(bob, bob_id, bob_points)
        rows = board_rows(bob)
        by_user = {row["userId"]: row["cells"] for row in rows}
        self.assertEqual(by_user.get(bob_id, [None])[1:], [bob_name, str(bob_points)])
        self.assertEqual(by_user.get(alice_id, [None])[1:], [alice_name, str(alice_points)])
        self.assertRegex(text(bob, "my-rank"), rf"^Your rank: #{by_user[bob_id][0]} of \d+")
        self.assertFalse(overflows_horizontally(bob), "no sideways scrolling at 390x844")
        harness.screenshot(bob, "05-bob-390x844-board")

        # 6. Bob sends Alice a gift from her row on the board.
        bob.find_element(By.CSS_SELECTOR, f"#top10 tr[data-user-id='{alice_id}'] button.gift-to").click()
        self.assertEqual(bob.find_element(By.ID, "gift-recipient").get_attribute("value"), alice_id)
        self.assertEqual(bob.switch_to.active_element.get_attribute("id"), "gift-recipient")
        bob.find_element(By.CSS_SELECTOR, "#gift-type option[value='life']").click()
        bob.find_element(By.ID, "send-gift").click()
        harness.wait_for(bob, lambda d: text(d, "gift-sent").startswith("Sent Extra Life"), "the gift is sent")
        harness.screenshot(bob, "06-bob-sent-a-gift")

        # 7. Alice finds it and accepts it.
        alice.find_element(By.ID, "reload-gifts").click()
        item = harness.wait_for(
            alice, lambda d: next((li for li in d.find_elements(By.CSS_SELECTOR, "#inbox li[data-gift-id]")
                                   if f"Extra Life from {bob_name}" in li.text), None),
            "Alice's inbox shows Bob's gift")
        harness.screenshot(alice, "07-alice-received-the-gift")
        item.find_element(By.TAG_NAME, "button").click()
        harness.wait_for(alice, lambda d: text(d, "gifts-status") == f"Accepted Extra Life from {bob_name}.",
                         "the gift is accepted")
        self.assertFalse(re.search(f"Extra Life from {bob_name}", text(alice, "inbox")), "it left the inbox")
        harness.screenshot(alice, "08-alice-accepted-the-gift")


if __name__ == "__main__":
    unittest.main()
