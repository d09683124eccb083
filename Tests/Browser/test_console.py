"""The web console (Clients/console) in headless Chromium against the whole stack, as an operator of each role.

Operators are created with the admin certificate (IdentityAdmin/CreateOperator), enrolled over HTTP
(Identity/OperatorEnroll), and log in through the page with a TOTP code computed here. Each role does one task per
page; a viewer's writes are refused by the server (the page shows the refusal, and the state did not change).
Screenshots of every page go to .test-output/console/ (the players page also at a phone's 390×844).
"""

import base64
import email
import email.policy
import hashlib
import hmac
import json
import os
import pathlib
import re
import shutil
import struct
import time
import unittest
import urllib.parse
import uuid

from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

import harness

SCREENSHOTS = harness.ROOT / ".test-output" / "console"
PASSWORD = "console test password"


def totp(secret, at=None):
    """RFC 6238 (SHA-1, 6 digits, 30 s) of a base32 secret, as identity checks it."""
    key = base64.b32decode(secret.upper() + "=" * (-len(secret) % 8))
    counter = int((time.time() if at is None else at) // 30)
    digest = hmac.new(key, struct.pack(">Q", counter), hashlib.sha1).digest()
    offset = digest[-1] & 0x0F
    number = struct.unpack(">I", digest[offset:offset + 4])[0] & 0x7FFFFFFF
    return f"{number % 1_000_000:06d}"


def admin_call(stack, method, request):
    status, body, _ = stack.call(method, request, admin=True, headers={"X-Rave-Reason": "browser test setup"})
    if status != 200:
        raise AssertionError(f"{method} failed: {status} {body}")
    return body


def create_operator(stack, role, publisher_id):
    """Creates and enrols an operator of `role`; answers (email, TOTP secret)."""
    email = f"{role}-{uuid.uuid4().hex[:8]}@console.test"
    scope = {"allPublishers": True} if role == "owner" else {"publisherId": publisher_id}
    created = admin_call(stack, "rave.identity.v1.IdentityAdmin/CreateOperator", {
        "email": email, "role": f"OPERATOR_ROLE_{role.upper()}", "reason": "browser test operator", **scope})
    status, enrolled, _ = stack.call("rave.identity.v1.Identity/OperatorEnroll",
                                     {"enrolmentCode": created["enrolmentCode"], "password": PASSWORD})
    if status != 200:
        raise AssertionError(f"OperatorEnroll failed: {status} {enrolled}")
    return email, enrolled["totpSecret"]


def guest(stack, username=None):
    """A new guest player of the demo application (with a username when given); answers its Rave ID."""
    status, body, _ = stack.call("rave.identity.v1.Identity/GuestLogin", {
        "appId": stack.app_id, "device": {"deviceId": str(uuid.uuid4()), "name": "console test", "platform": "web"}})
    if status != 200:
        raise AssertionError(f"GuestLogin failed: {status} {body}")
    if username:
        status, named, _ = stack.call("rave.identity.v1.Identity/UpdateCurrentUser", {"username": {"value": username}},
                                      token=body["tokens"]["accessToken"])
        if status != 200:
            raise AssertionError(f"UpdateCurrentUser failed: {status} {named}")
    return body["user"]["profile"]["userId"]


def player_call(stack, method, request, token):
    status, body, _ = stack.call(method, request, token=token)
    if status != 200:
        raise AssertionError(f"{method} failed: {status} {body}")
    return body


def signed_up(stack):
    """A new player with an email and password (not a guest: one who may submit scores); answers (id, email, token)."""
    email = f"player-{uuid.uuid4().hex[:8]}@console.test"
    body = player_call(stack, "rave.identity.v1.Identity/SignUp", {
        "appId": stack.app_id, "device": {"deviceId": str(uuid.uuid4()), "name": "console test", "platform": "web"},
        "email": email, "password": PASSWORD, "birthYear": 1990, "country": "GB"}, None)
    return body["user"]["profile"]["userId"], email, body["tokens"]["accessToken"]


def seed_player_records(stack):
    """A signed-up player with everything the console's read panels show: a guest merged into it (the guest logs in
    to the account), a friend, a deposit, a gift received, a registered device, a score on a new board and an
    achievement defined. Answers what was seeded, by name."""
    player, email, token = signed_up(stack)
    guest_status, guest_login, _ = stack.call("rave.identity.v1.Identity/GuestLogin", {
        "appId": stack.app_id, "device": {"deviceId": str(uuid.uuid4()), "name": "old phone", "platform": "web"}})
    assert guest_status == 200, guest_login
    merged_guest = guest_login["user"]["profile"]["userId"]
    merged = player_call(stack, "rave.identity.v1.Identity/LoginWithPassword", {
        "appId": stack.app_id, "device": {"deviceId": str(uuid.uuid4()), "name": "old phone", "platform": "web"},
        "email": email, "password": PASSWORD}, guest_login["tokens"]["accessToken"])
    friend_status, friend_login, _ = stack.call("rave.identity.v1.Identity/GuestLogin", {
        "appId": stack.app_id, "device": {"deviceId": str(uuid.uuid4()), "name": "friend", "platform": "web"}})
    assert friend_status == 200, friend_login
    friend = friend_login["user"]["profile"]["userId"]
    friend_token = friend_login["tokens"]["accessToken"]
    player_call(stack, "rave.social.v1.Social/SendFriendRequest",
                {"listKey": "friends", "target": {"userId": friend}}, token)
    player_call(stack, "rave.social.v1.Social/SendFriendRequest",
                {"listKey": "friends", "target": {"userId": player}}, friend_token)
    stack.deposit(player, "4.25")
    suffix = uuid.uuid4().hex[:6]
    gift_key = f"tulip-{suffix}"
    admin_call(stack, "rave.gifts.v1.GiftsAdmin/CreateGiftType",
               {"appId": stack.app_id, "giftType": {"key": gift_key, "name": "A tulip"}})
    player_call(stack, "rave.gifts.v1.Gifts/SendGifts",
                {"giftTypeKey": gift_key, "recipientIds": [player], "idempotencyKey": uuid.uuid4().hex}, friend_token)
    device_token = f"fcm-{uuid.uuid4().hex}"
    player_call(stack, "rave.push.v1.Push/RegisterToken", {
        "platform": "PLATFORM_FCM", "token": device_token, "consent": {"push": True}, "country": "GB",
        "language": "en", "timeZone": "Europe/London"}, token)
    board = f"reads-{suffix}"
    admin_call(stack, "rave.leaderboards.v1.LeaderboardsAdmin/DefineLeaderboard", {
        "appId": stack.app_id, "definition": {"key": board, "name": "Read board", "sorter": 9, "active": True}})
    player_call(stack, "rave.leaderboards.v1.Leaderboards/SubmitScore", {"leaderboardKey": board, "score": "70"}, token)
    achievement = f"reader-{suffix}"
    admin_call(stack, "rave.leaderboards.v1.LeaderboardsAdmin/DefineAchievement", {
        "appId": stack.app_id, "definition": {"key": achievement, "name": "Read it all"}})
    return {"player": player, "merged_guest": merged_guest, "merge_id": merged["mergeId"], "friend": friend,
            "gift_key": gift_key, "device_token": device_token, "board": board, "achievement": achievement}


def text_of(driver, element_id):
    return driver.execute_script("const e = document.getElementById(arguments[0]); return e ? e.textContent : ''",
                                 element_id)


def shot(driver, name):
    return harness.screenshot(driver, name, directory=SCREENSHOTS)


def loaded(page):
    return lambda d: d.execute_script("return document.body.dataset.loaded || ''") == page


def login(driver, stack, email, secret):
    driver.get(f"{stack.url}/console/?app={stack.app_id}")
    harness.wait_for(driver, lambda d: d.find_element(By.ID, "login").is_displayed(), "the login form shows")
    driver.find_element(By.ID, "login-email").send_keys(email)
    driver.find_element(By.ID, "login-password").send_keys(PASSWORD)
    driver.find_element(By.ID, "login-code").send_keys(totp(secret), Keys.ENTER)
    harness.wait_for(driver, loaded("overview"), f"{email} logs in and sees the overview")


def open_page(driver, page, query=""):
    """Opens a page from the menu with the keyboard (focus the link, Enter), or by address when a query is given."""
    if query:
        driver.execute_script("location.hash = arguments[0]", f"#/{page}?{query}")
    else:
        link = driver.find_element(By.CSS_SELECTOR, f'#nav a[data-page="{page}"]')
        driver.execute_script("arguments[0].focus()", link)
        driver.switch_to.active_element.send_keys(Keys.ENTER)
    harness.wait_for(driver, loaded(page), f"the {page} page loads")


def settled(driver, status_id):
    """Waits for a status line to say ok or error; answers (state, text)."""
    def done(d):
        state = d.execute_script("const s = document.getElementById(arguments[0]); return s && s.dataset.state",
                                 status_id)
        return state if state in ("ok", "error") else None
    state = harness.wait_for(driver, done, f"#{status_id} shows an outcome")
    return state, driver.find_element(By.ID, status_id).text


def submit_with_reason(driver, form_id, reason, status_id):
    """Submits a form (Enter in its first field would do; the button is clicked), gives the reason, confirms."""
    return click_with_reason(driver, f"{form_id}-submit", reason, status_id)


def click_with_reason(driver, button_id, reason, status_id):
    """Clicks a write's button, gives the reason, confirms and waits for the write's outcome on its status line.

    The status line's earlier outcome (a panel's load) is forgotten first: the dialog's close event, which starts
    the write, comes a task after the click, and an old "ok" must not pass for the write's.
    """
    driver.execute_script("const s = document.getElementById(arguments[0]); if (s) delete s.dataset.state", status_id)
    driver.find_element(By.ID, button_id).click()
    confirm_reason(driver, reason)
    return settled(driver, status_id)


def confirm_reason(driver, reason):
    harness.wait_for(driver, lambda d: d.find_element(By.ID, "reason-dialog").get_attribute("open") is not None,
                     "the reason dialog opens")
    # The dialog takes the focus: typing goes to the reason.
    driver.switch_to.active_element.send_keys(reason)
    driver.find_element(By.ID, "reason-confirm").click()


def fill(driver, form_id, values):
    for name, value in values.items():
        field = driver.find_element(By.CSS_SELECTOR, f'#{form_id} [name="{name}"]')
        if field.tag_name == "select":
            driver.execute_script("arguments[0].value = arguments[1]", field, value)
        elif field.get_attribute("type") == "checkbox":
            if field.is_selected() != bool(value):
                field.click()
        else:
            field.clear()
            field.send_keys(value)


def operator_id_of(driver):
    """The logged-in operator's id, from the console's session in this tab."""
    return driver.execute_script(
        "return JSON.parse(sessionStorage.getItem('rave.console.session') || '{}').account.operatorId")


def audited(stack, method, reason):
    """The audit log's entries of `method` given `reason` (newest first)."""
    events = admin_call(stack, "rave.identity.v1.IdentityAdmin/ListAuditEvents", {"method": method, "pageSize": 100})
    return [event for event in events.get("events", []) if event.get("reason") == reason]


def mails_to(stack, address):
    """The subjects of the mails the stack's mail sink received for `address`."""
    directory = pathlib.Path(os.environ["RAVE_STACK_DIR"]) / "mail"
    subjects = []
    for path in sorted(directory.glob(f"*-{address}.eml")) if directory.is_dir() else []:
        message = email.message_from_bytes(path.read_bytes(), policy=email.policy.default)
        subjects.append(str(message.get("Subject", "")))
    return subjects


def audit_page_shows(driver, method, reason):
    """Opens the audit log filtered by `method` and answers whether an entry with `reason` is listed."""
    open_page(driver, "audit", urllib.parse.urlencode({"method": method}))
    state, text = settled(driver, "audit-status")
    if state != "ok":
        raise AssertionError(f"the audit log did not load: {text}")
    return reason in text_of(driver, "audit-body")


def shown_after_more(driver, panel_id, key):
    """Answers whether a row keyed `key` is in the paged panel `panel_id`, pressing its "Show more" until it is."""
    for _ in range(20):
        if driver.find_elements(By.CSS_SELECTOR, f'#{panel_id} tr[data-key="{key}"]'):
            return True
        more = driver.find_elements(By.ID, f"{panel_id}-more")
        if not more:
            return False
        rows = len(driver.find_elements(By.CSS_SELECTOR, f"#{panel_id} tbody tr"))
        more[0].click()
        harness.wait_for(driver, lambda d: len(d.find_elements(By.CSS_SELECTOR, f"#{panel_id} tbody tr")) > rows,
                         f"{panel_id} shows more")
    return False


def ban_shown(driver):
    """"true" or "false" as the players page shows the ban ("" before the profile loads); read in one script, since
    the profile is replaced while it reloads."""
    return driver.execute_script("const b = document.getElementById('player-ban'); return b ? b.dataset.banned : ''")


def overflows_horizontally(driver):
    return driver.execute_script("return document.documentElement.scrollWidth > window.innerWidth + 1")


class ConsoleTests(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.stack = harness.Stack()
        cls.publisher_id = admin_call(cls.stack, "rave.identity.v1.IdentityAdmin/GetApplication",
                                      {"appId": cls.stack.app_id})["application"]["publisherId"]

    def setUp(self):
        self.browsers = []

    def tearDown(self):
        # A failed test leaves its browsers' last page in .test-output/console/ (unittest records the failure first).
        result = getattr(self._outcome, "result", None)
        failed = result is not None and any(test is self for test, _ in result.failures + result.errors)
        for index, driver in enumerate(self.browsers):
            if failed:
                shot(driver, f"failed-{self._testMethodName}-{index}")
            harness.close(driver)

    def signed_in(self, role, **size):
        """A browser logged in as a new operator of `role` (each login its own account: a TOTP step is taken once)."""
        driver = harness.browser(self.stack, **size)
        self.browsers.append(driver)
        login(driver, self.stack, *create_operator(self.stack, role, self.publisher_id))
        return driver

    def ban_state(self, user_id):
        return admin_call(self.stack, "rave.identity.v1.IdentityAdmin/GetUser", {"userId": user_id}).get("ban")

    def audit_of(self, user_id):
        return admin_call(self.stack, "rave.identity.v1.IdentityAdmin/ListAuditEvents",
                          {"targetUserId": user_id}).get("events", [])

    def balances(self, user_id):
        return admin_call(self.stack, "rave.wallet.v1.WalletAdmin/GetUserWallet", {"userId": user_id}).get("balances", [])

    def test_login_page_is_keyboard_usable_and_refuses_a_wrong_code(self):
        driver = harness.browser(self.stack)
        self.browsers.append(driver)
        driver.get(f"{self.stack.url}/console/")
        harness.wait_for(driver, lambda d: d.find_element(By.ID, "login").is_displayed(), "the login form shows")
        self.assertEqual(driver.switch_to.active_element.get_attribute("id"), "login-email", "the email has focus")
        email, _ = create_operator(self.stack, "viewer", self.publisher_id)
        driver.switch_to.active_element.send_keys(email, Keys.TAB)
        focused = driver.switch_to.active_element
        self.assertEqual(focused.get_attribute("id"), "login-password")
        self.assertNotEqual(focused.value_of_css_property("outline-style"), "none", "the focused field shows it")
        focused.send_keys(PASSWORD, Keys.TAB)
        driver.switch_to.active_element.send_keys("000000", Keys.ENTER)
        harness.wait_for(driver, lambda d: "UNAUTHENTICATED" in d.find_element(By.ID, "login-status").text,
                         "a wrong code is refused with the server's status")
        self.assertIn("the email, password or code is wrong", driver.find_element(By.ID, "login-status").text)
        shot(driver, "00-login-refused-1280")

    def test_support_deletes_a_player_at_once_and_the_deletion_runs_everywhere(self):
        player = guest(self.stack)
        driver = self.signed_in("support")
        open_page(driver, "players", f"user={player}")
        harness.wait_for(driver, lambda d: d.find_elements(By.ID, "player-deletion-state"), "the deletion card loads")
        self.assertEqual(driver.find_element(By.ID, "player-deletion-state").get_attribute("data-state"), "none")
        state, text = click_with_reason(driver, "force-deletion", "the player asked support by mail, ticket 77",
                                        "player-deletion-status")
        self.assertEqual((state, text), ("ok", "Deletion started."))
        harness.wait_for(driver, lambda d: d.find_element(By.ID, "player-deletion-state").get_attribute("data-state")
                         in ("started", "completed"), "the page shows the deletion under way")
        self.assertEqual(driver.find_elements(By.ID, "force-deletion"), [], "a started deletion is not offered again")
        shot(driver, "18-player-deleted-1280")
        # The server's record: a deletion requested by an operator, recorded in the audit log with support's reason.
        deletions = admin_call(self.stack, "rave.identity.v1.IdentityAdmin/ListAccountDeletions",
                               {"userId": player}).get("deletions", [])
        self.assertEqual(len(deletions), 1)
        self.assertIn(deletions[0]["status"], ("ACCOUNT_DELETION_STATUS_STARTED", "ACCOUNT_DELETION_STATUS_COMPLETED"))
        reasons = [event.get("reason") for event in self.audit_of(player)]
        self.assertIn("the player asked support by mail, ticket 77", reasons)

    def test_support_bans_and_unbans_a_player_and_the_audit_log_shows_it(self):
        player = guest(self.stack)
        driver = self.signed_in("support")
        # Overview: GatewayAdmin/GetSystemStatus, every service of the stack healthy, the login counted.
        state, text = settled(driver, "overview-status")
        self.assertEqual(state, "ok", text)
        services = dict(driver.execute_script(
            "return Array.from(document.querySelectorAll('#services tbody tr[data-key]')).map((row) =>"
            "  [row.dataset.key, row.querySelector('[data-state]').dataset.state])"))
        for service in ("identity", "social", "leaderboards", "gifts", "push", "wallet"):
            self.assertEqual(services.get(service), "up", f"{service} is healthy: {services}")
        identity_rate = driver.execute_script(
            "return document.querySelector('#services tr[data-key=identity] td[data-label=\"Calls/s\"]').textContent")
        self.assertGreater(float(identity_rate), 0, "the operator's login went through the gateway to identity")
        self.assertGreaterEqual(len(driver.find_elements(By.CSS_SELECTOR, "#services svg.spark")), 12, "charts")
        shot(driver, "01-overview-1280")

        # Players: find by Rave ID (typed, Enter), ban with a message and a reason.
        open_page(driver, "players")
        driver.find_element(By.CSS_SELECTOR, '#player-search [name="q"]').send_keys(player, Keys.ENTER)
        harness.wait_for(driver, loaded("players"), "the player's page loads")
        harness.wait_for(driver, lambda d: d.find_elements(By.ID, "player-id"), "the profile shows")
        self.assertEqual(driver.find_element(By.ID, "player-id").text, player)

        # Sessions: the guest's one session, ended by support with a reason.
        harness.wait_for(driver, lambda d: d.find_elements(By.CSS_SELECTOR, "#player-sessions tbody tr"),
                         "the player's session is listed")
        self.assertEqual(len(driver.find_elements(By.CSS_SELECTOR, "#player-sessions tbody tr")), 1)
        state, text = click_with_reason(driver, "revoke-all", "account shared with a stranger",
                                        "player-sessions-status")
        self.assertEqual((state, text), ("ok", "Ended 1 sessions."))
        harness.wait_for(driver, lambda d: "No live session." in d.find_element(By.ID, "player-sessions").text,
                         "the list is empty")
        fill(driver, "ban-form", {"message": "cheating in the console test"})
        state, text = submit_with_reason(driver, "ban-form", "support ticket 42", "ban-status")
        self.assertEqual(state, "ok", text)
        harness.wait_for(driver, lambda d: ban_shown(d) == "true", "the page shows the ban")
        self.assertIn("cheating in the console test", driver.find_element(By.ID, "player-ban").text)
        self.assertEqual(self.ban_state(player)["reason"], "cheating in the console test")
        harness.wait_for(driver, lambda d: "ban user" in d.find_element(By.ID, "player-audit").text,
                         "the player's audit entries list the ban")
        shot(driver, "02-players-banned-1280")

        # Audit log: filtered by the player, the ban with the reason given.
        open_page(driver, "audit")
        fill(driver, "audit-filters", {"user": player})
        driver.find_element(By.ID, "audit-filters-submit").click()
        harness.wait_for(driver, lambda d: d.execute_script("return location.hash").endswith(player)
                         and loaded("audit")(d), "the filtered audit log loads")
        state, text = settled(driver, "audit-status")
        self.assertEqual(state, "ok", text)
        rows = driver.find_elements(By.CSS_SELECTOR, "#audit-body tbody tr")
        # Newest first: the ban, then the sessions ended before it (recorded by the gateway under the player).
        self.assertEqual(len(rows), 2, driver.find_element(By.ID, "audit-body").text)
        self.assertIn("ban user", rows[0].text)
        # BanUser is audited by identity itself, with support's reason (the ban's message is what the player sees).
        self.assertIn("support ticket 42", rows[0].text)
        self.assertIn("RevokeUserSessions", rows[1].text)
        self.assertIn("account shared with a stranger", rows[1].text)
        shot(driver, "03-audit-1280")

        # Unban from the players page.
        open_page(driver, "players", f"user={player}")
        driver.find_element(By.ID, "unban").click()
        confirm_reason(driver, "appeal accepted")
        harness.wait_for(driver, lambda d: ban_shown(d) == "false", "the page shows the ban lifted")
        self.assertIsNone(self.ban_state(player))

        # Two-factor reset: a guest has none; the page says so and nothing else changes.
        state, text = click_with_reason(driver, "reset-two-factor", "lost their phone", "two-factor-status")
        self.assertEqual((state, text), ("ok", "Two-factor was not enabled; 0 sessions ended."))
        self.assertEqual(driver.find_element(By.ID, "player-two-factor").text, "off")

        # Merges: an unknown merge is NOT_FOUND, in the server's words.
        open_page(driver, "merges", f"merge={uuid.uuid4().hex}")
        state, text = settled(driver, "merge-status")
        self.assertEqual(state, "error")
        self.assertIn("NOT_FOUND", text)
        shot(driver, "04-merges-1280")

    def test_viewer_reads_but_the_server_refuses_its_writes(self):
        username = f"Searched{uuid.uuid4().hex[:8]}"
        player = guest(self.stack, username=username)
        self.stack.deposit(player, "3.00")
        audit_before = self.audit_of(player)
        driver = self.signed_in("viewer")

        # A viewer finds the player by username (any case) and opens them from the results.
        open_page(driver, "players")
        driver.find_element(By.CSS_SELECTOR, '#player-search [name="q"]').send_keys(username.lower(), Keys.ENTER)
        state, text = settled(driver, "search-status")
        self.assertEqual((state, text), ("ok", "1 found."))
        result = driver.find_element(By.CSS_SELECTOR, f'#search-results tr[data-key="{player}"]')
        self.assertIn(username, result.text)
        shot(driver, "05-players-search-1280")
        result.find_element(By.TAG_NAME, "a").click()
        harness.wait_for(driver, lambda d: d.find_elements(By.ID, "player-id"), "a viewer reads the profile")
        harness.wait_for(driver, lambda d: "3.00" in d.find_element(By.ID, "player-wallet").text,
                         "a viewer reads the wallet")
        fill(driver, "ban-form", {"message": "a viewer may not ban"})

        # Keyboard: Enter on the button opens the reason dialog, Escape cancels it (no call) and the focus returns.
        driver.execute_script("document.getElementById('ban-form-submit').focus()")
        driver.switch_to.active_element.send_keys(Keys.ENTER)
        harness.wait_for(driver, lambda d: d.find_element(By.ID, "reason-dialog").get_attribute("open") is not None,
                         "the reason dialog opens")
        self.assertEqual(driver.switch_to.active_element.get_attribute("id"), "reason-text")
        driver.switch_to.active_element.send_keys(Keys.ESCAPE)
        harness.wait_for(driver, lambda d: d.find_element(By.ID, "reason-dialog").get_attribute("open") is None,
                         "Escape closes the dialog")
        self.assertEqual(driver.switch_to.active_element.get_attribute("id"), "ban-form-submit")
        self.assertEqual(driver.find_element(By.ID, "ban-status").text, "", "nothing was sent")

        state, text = submit_with_reason(driver, "ban-form", "trying", "ban-status")
        self.assertEqual(state, "error")
        self.assertIn("PERMISSION_DENIED (HTTP 403)", text)
        self.assertIn("needs the operator role support or higher", text)
        self.assertIsNone(self.ban_state(player), "the server made no ban")
        self.assertEqual(self.audit_of(player), audit_before, "nothing new in the audit log")
        shot(driver, "06-players-viewer-refused-1280")

        # Nor reset two-factor.
        state, text = click_with_reason(driver, "reset-two-factor", "trying", "two-factor-status")
        self.assertEqual(state, "error")
        self.assertIn("needs the operator role support or higher", text)

        # The viewer may read sessions but not end them.
        state, text = click_with_reason(driver, "revoke-all", "trying", "player-sessions-status")
        self.assertEqual(state, "error")
        self.assertIn("PERMISSION_DENIED (HTTP 403)", text)
        self.assertEqual(len(driver.find_elements(By.CSS_SELECTOR, "#player-sessions tbody tr")), 1,
                         "the session is still listed")

        open_page(driver, "wallet", f"user={player}")
        fill(driver, "transfer-form", {"user": player, "amount": "100.00"})
        state, text = submit_with_reason(driver, "transfer-form", "trying", "transfer-status")
        self.assertEqual(state, "error")
        self.assertIn("PERMISSION_DENIED", text)
        self.assertEqual([b["amount"] for b in self.balances(player)], ["3.00"], "the balance did not move")

        open_page(driver, "operators")
        state, text = settled(driver, "operators-status")
        self.assertEqual(state, "error", "ListOperators is an owner's")
        self.assertIn("PERMISSION_DENIED", text)

    def test_operator_edits_boards_gifts_push_and_wallet(self):
        player = guest(self.stack)
        suffix = uuid.uuid4().hex[:6]
        driver = self.signed_in("operator")

        open_page(driver, "leaderboards")
        fill(driver, "board-form", {"key": f"console-{suffix}", "name": "Console board", "sorter": "3",
                                    "interval": "RESET_INTERVAL_WEEKLY"})
        state, text = submit_with_reason(driver, "board-form", "new weekly board", "board-status")
        self.assertEqual(state, "ok", text)
        self.assertIn(f"console-{suffix}", driver.find_element(By.ID, "board-json").text)
        self.assertIn("RESET_INTERVAL_WEEKLY", driver.find_element(By.ID, "board-json").text)
        fill(driver, "achievement-form", {"key": f"first-{suffix}", "name": "First roll"})
        state, text = submit_with_reason(driver, "achievement-form", "new achievement", "achievement-status")
        self.assertEqual(state, "ok", text)
        shot(driver, "07-leaderboards-1280")

        open_page(driver, "gifts")
        fill(driver, "gift-type-form", {"key": f"rose-{suffix}", "name": "A rose", "dailyLimitPerSender": "5"})
        state, text = submit_with_reason(driver, "gift-type-form", "spring event", "gift-type-status")
        self.assertEqual(state, "ok", text)
        harness.wait_for(driver, lambda d: d.find_elements(By.CSS_SELECTOR, f'#gift-types tr[data-key="rose-{suffix}"]'),
                         "the new gift type is listed")
        row = driver.find_element(By.CSS_SELECTOR, f'#gift-types tr[data-key="rose-{suffix}"]')
        self.assertIn("A rose", row.text)
        # Edit reads the stored gift type (GetGiftType) into the form.
        driver.execute_script("delete document.getElementById('gift-type-status').dataset.state")
        row.find_element(By.TAG_NAME, "button").click()
        self.assertEqual(settled(driver, "gift-type-status"), ("ok", f"Editing rose-{suffix}."))
        self.assertEqual(driver.find_element(By.CSS_SELECTOR, '#gift-type-form [name="name"]').get_attribute("value"),
                         "A rose")
        self.assertEqual(driver.find_element(By.ID, "gift-type-form-submit").text, "Update gift type…")
        shot(driver, "08-gifts-1280")

        open_page(driver, "push")
        fill(driver, "template-form", {"topic": "gifts.gift_received", "language": "fr",
                                       "title": "A gift!", "body": "{sender} sent you {gift}"})
        state, text = submit_with_reason(driver, "template-form", "new language", "template-status")
        self.assertEqual(state, "ok", text)
        harness.wait_for(driver, lambda d: d.find_elements(
            By.CSS_SELECTOR, f'#templates tr[data-key="gifts.gift_received/fr"]'), "the template is listed")
        fill(driver, "send-form", {"user": player})
        state, text = submit_with_reason(driver, "send-form", "testing push", "send-status")
        self.assertEqual(state, "ok", text)
        self.assertIn("Queued 0", text, "a guest without a device token has nothing queued")
        shot(driver, "09-push-1280")

        open_page(driver, "wallet", f"user={player}")
        fill(driver, "transfer-form", {"user": player, "amount": "12.50"})
        state, text = submit_with_reason(driver, "transfer-form", "welcome bonus", "transfer-status")
        self.assertEqual(state, "ok", text)
        self.assertIn("12.50", text)
        harness.wait_for(driver, lambda d: "12.50" in d.find_element(By.ID, "wallet-balances").text,
                         "the balance shows the deposit")
        self.assertEqual([b["amount"] for b in self.balances(player)], ["12.50"])
        shot(driver, "10-wallet-1280")

    def test_owner_creates_and_disables_an_operator(self):
        driver = self.signed_in("owner")
        open_page(driver, "operators")
        state, text = settled(driver, "operators-status")
        self.assertEqual(state, "ok", text)
        email = f"new-{uuid.uuid4().hex[:8]}@console.test"
        fill(driver, "operator-create", {"email": email, "role": "OPERATOR_ROLE_SUPPORT", "publisher": "*"})
        state, text = submit_with_reason(driver, "operator-create", "a new support agent", "operator-create-status")
        # A support operator may not act for every publisher: the server says so.
        self.assertEqual(state, "error")
        fill(driver, "operator-create", {"publisher": self.publisher_id})
        state, text = submit_with_reason(driver, "operator-create", "a new support agent", "operator-create-status")
        self.assertEqual(state, "ok", text)
        self.assertGreater(len(driver.find_element(By.ID, "enrolment-code").text), 20)
        harness.wait_for(driver, lambda d: d.find_elements(By.CSS_SELECTOR, f'#operators-body tr[data-key="{email}"]'),
                         "the new operator is listed")
        row = driver.find_element(By.CSS_SELECTOR, f'#operators-body tr[data-key="{email}"]')
        self.assertIn("not enrolled", row.text)
        row.find_element(By.XPATH, ".//button[starts-with(., 'Disable')]").click()
        confirm_reason(driver, "left the team")
        harness.wait_for(driver, lambda d: "disabled" in d.find_element(
            By.CSS_SELECTOR, f'#operators-body tr[data-key="{email}"]').text, "the operator is disabled")
        shot(driver, "11-operators-1280")

    def test_viewer_reads_merges_friends_ledger_gifts_devices_boards_catalog_and_merges(self):
        seeded = seed_player_records(self.stack)
        player = seeded["player"]
        driver = self.signed_in("viewer")

        # Players: the new panels, each from its own read method.
        open_page(driver, "players", f"user={player}")
        for status in ("player-merges-status", "player-friends-status", "player-ledger-status",
                       "player-gifts-status", "player-devices-status"):
            state, text = settled(driver, status)
            self.assertEqual(state, "ok", f"{status}: {text}")
        self.assertIn(seeded["merged_guest"], text_of(driver, "player-merged-ids"))
        self.assertIn(seeded["merge_id"], text_of(driver, "player-merges"))
        self.assertEqual(text_of(driver, "player-friends-count"), "1")
        self.assertIn("4.25", text_of(driver, "player-ledger"))
        self.assertIn("deposit", text_of(driver, "player-ledger"))
        self.assertIn(f"#/wallet?user={player}",
                      driver.find_element(By.ID, "player-ledger-all").get_attribute("href"))
        gifts = text_of(driver, "player-gifts")
        self.assertIn(seeded["gift_key"], gifts)
        self.assertIn("received", gifts)
        devices = text_of(driver, "player-devices")
        self.assertIn("…" + seeded["device_token"][-6:], devices)
        self.assertNotIn(seeded["device_token"], devices, "the page never holds a whole token")
        shot(driver, "14-players-reads-1280")

        # Leaderboards: the app's boards and achievements; a board's top scores and the player's standing.
        open_page(driver, "leaderboards")
        self.assertEqual(settled(driver, "boards-status")[0], "ok")
        self.assertEqual(settled(driver, "achievements-status")[0], "ok")
        row = driver.find_element(By.CSS_SELECTOR, f'#boards tr[data-key="{seeded["board"]}"]')
        self.assertIn("Read board", row.text)
        self.assertIn(seeded["achievement"], text_of(driver, "achievements"))
        fill(driver, "scores-form", {"board": seeded["board"], "count": "5", "user": player})
        driver.find_element(By.ID, "scores-form-submit").click()
        state, text = settled(driver, "top-scores-status")
        self.assertEqual(state, "ok", text)
        self.assertIn(player, text_of(driver, "top-scores"))
        self.assertIn("70", text_of(driver, "top-scores"))
        harness.wait_for(driver, lambda d: text_of(d, "standing-text").startswith("#1 with 70"),
                         "the player's standing shows")
        shot(driver, "15-leaderboards-reads-1280")

        # Wallet: currencies, games with their return to player, the player's ledger.
        open_page(driver, "wallet", f"user={player}")
        for status in ("currencies-status", "games-status", "wallet-ledger-status"):
            state, text = settled(driver, status)
            self.assertEqual(state, "ok", f"{status}: {text}")
        self.assertTrue(driver.find_elements(By.CSS_SELECTOR, '#currencies tr[data-key="GOLD"]'), "GOLD is listed")
        dice = driver.find_element(By.CSS_SELECTOR, '#games tr[data-key="demo-dice"]')
        rtp = dice.find_element(By.CSS_SELECTOR, 'td[data-label="Return to player"]').text
        self.assertRegex(rtp, r"^0\.\d+", "the dice game's return to player")
        self.assertIn("4.25", text_of(driver, "wallet-ledger"))
        shot(driver, "16-wallet-reads-1280")

        # Merges: the list filtered by the player, and by state.
        open_page(driver, "merges")
        fill(driver, "merge-filters", {"user": player})
        driver.find_element(By.ID, "merge-filters-submit").click()
        harness.wait_for(driver, lambda d: d.execute_script("return location.hash").endswith(player)
                         and loaded("merges")(d), "the filtered merges list loads")
        state, text = settled(driver, "merges-status")
        self.assertEqual((state, text), ("ok", "1 merges."))
        merge_row = driver.find_element(By.CSS_SELECTOR, f'#merges-body tr[data-key="{seeded["merge_id"]}"]')
        self.assertIn(seeded["merged_guest"], merge_row.text)
        merge_state = merge_row.find_element(By.CSS_SELECTOR, "[data-state]").get_attribute("data-state")
        shot(driver, "17-merges-list-1280")
        other = "COMPLETED" if merge_state == "pending" else "PENDING"
        open_page(driver, "merges", f"state={other}&user={player}")
        self.assertEqual(settled(driver, "merges-status"), ("ok", "0 merges."))

    def test_players_page_reads_on_a_phone(self):
        player = guest(self.stack, username=f"Dicey{uuid.uuid4().hex[:6]}")
        self.stack.deposit(player, "42.00")
        driver = self.signed_in("viewer", width=390, height=844)
        self.assertFalse(overflows_horizontally(driver), "the overview fits a phone's width")
        open_page(driver, "players", f"user={player}")
        harness.wait_for(driver, lambda d: d.find_elements(By.ID, "player-id"), "the profile shows")
        harness.wait_for(driver, lambda d: settled(d, "player-audit-status"), "the audit entries load")
        self.assertFalse(overflows_horizontally(driver), "the players page fits a phone's width")
        shot(driver, "12-players-390")
        # The pages with the new panels fit too (the menu scrolls sideways in its own row).
        for page in ("leaderboards", "push", "wallet", "social", "mail", "apps"):
            open_page(driver, page)
            self.assertFalse(overflows_horizontally(driver), f"the {page} page fits a phone's width")
            shot(driver, f"12-{page}-390")
        wide = self.signed_in("support")
        open_page(wide, "players", f"user={player}")
        harness.wait_for(wide, lambda d: d.find_elements(By.ID, "player-id"), "the profile shows")
        settled(wide, "player-audit-status")
        path = shot(wide, "13-players-1280")
        # The README's screenshot is refreshed on request only, so a test run leaves the tree as it found it.
        if os.environ.get("RAVE_UPDATE_SCREENSHOTS") == "1":
            shutil.copyfile(path, harness.ROOT / "docs" / "images" / "console-players.png")

    def test_support_exports_a_players_data_and_downloads_the_archive(self):
        player = guest(self.stack)
        driver = self.signed_in("support")
        downloads = SCREENSHOTS / "downloads"
        shutil.rmtree(downloads, ignore_errors=True)
        downloads.mkdir(parents=True)
        driver.execute_cdp_cmd("Browser.setDownloadBehavior", {"behavior": "allow", "downloadPath": str(downloads)})
        open_page(driver, "players", f"user={player}")
        self.assertEqual(settled(driver, "player-export-status")[0], "ok")
        self.assertEqual(driver.find_element(By.ID, "player-export-state").get_attribute("data-state"), "none")

        requested = "data access request by mail, ticket 91"
        state, text = submit_with_reason(driver, "export-form", requested, "player-export-status")
        self.assertEqual((state, text), ("ok", "Export requested."))
        export = admin_call(self.stack, "rave.identity.v1.IdentityAdmin/GetUserExport",
                            {"userId": player})["accountExport"]
        self.assertEqual(export["requestedBy"], "ACCOUNT_EXPORT_REQUESTER_OPERATOR")
        # The page asks again every 3 s while the archive is assembled.
        harness.wait_for(driver, lambda d: d.find_element(By.ID, "player-export-state").get_attribute("data-state")
                         == "ready", "the page shows the export ready", seconds=90)
        export = admin_call(self.stack, "rave.identity.v1.IdentityAdmin/GetUserExport",
                            {"userId": player})["accountExport"]
        self.assertEqual(export["status"], "ACCOUNT_EXPORT_STATUS_READY")

        downloaded = "sending the archive to the player, ticket 91"
        state, text = click_with_reason(driver, "download-export", downloaded, "player-export-download-status")
        self.assertEqual(state, "ok", text)
        self.assertIn("the SHA-256 matches the export's", text)
        harness.wait_for(driver, lambda d: text_of(d, "player-export-sha256") == export["sha256"],
                         "the page shows the archive's SHA-256")
        saved = downloads / f"rave-export-{export['exportId']}.json"
        harness.wait_for(driver, lambda d: saved.is_file() and saved.stat().st_size == int(export["sizeBytes"]),
                         "the browser saved the archive")
        self.assertEqual(hashlib.sha256(saved.read_bytes()).hexdigest(), export["sha256"])
        self.assertIn(player, saved.read_text(), "the archive is the player's")
        shot(driver, "19-players-export-1280")

        # The audit log: the request and the download's chunk, each with support's reason and an OK outcome.
        for method, reason in (("rave.identity.v1.IdentityAdmin/RequestUserExport", requested),
                               ("rave.identity.v1.IdentityAdmin/DownloadUserExport", downloaded)):
            entries = audited(self.stack, method, reason)
            self.assertTrue(entries, f"{method} is in the audit log")
            self.assertTrue(all(entry.get("finished") and not entry.get("statusCode") for entry in entries), entries)
            self.assertIn(player, entries[0]["requestJson"])
        self.assertTrue(audit_page_shows(driver, "rave.identity.v1.IdentityAdmin/DownloadUserExport", downloaded),
                        "the audit page lists the download")
        shot(driver, "20-audit-export-1280")
        # The gateway records the player each write is about: both are in the player's own audit entries.
        trail = {entry.get("method") for entry in self.audit_of(player)}
        self.assertLessEqual({"rave.identity.v1.IdentityAdmin/RequestUserExport",
                              "rave.identity.v1.IdentityAdmin/DownloadUserExport"}, trail)
        open_page(driver, "players", f"user={player}")
        self.assertEqual(settled(driver, "player-audit-status")[0], "ok")
        entries = text_of(driver, "player-audit")
        self.assertIn("RequestUserExport", entries)
        self.assertIn("DownloadUserExport", entries)

    def test_operator_sets_eligibility_push_language_lists_mail_and_rebuilds_an_index(self):
        suffix = uuid.uuid4().hex[:6]
        player, email_address, token = signed_up(self.stack)
        device_token = f"fcm-{uuid.uuid4().hex}"
        player_call(self.stack, "rave.push.v1.Push/RegisterToken", {
            "platform": "PLATFORM_FCM", "token": device_token, "consent": {"push": True}, "country": "GB",
            "language": "en", "timeZone": "Europe/London"}, token)
        board = f"rebuild-{suffix}"
        admin_call(self.stack, "rave.leaderboards.v1.LeaderboardsAdmin/DefineLeaderboard", {
            "appId": self.stack.app_id, "definition": {"key": board, "name": "Rebuilt board", "sorter": 7,
                                                       "active": True}})
        player_call(self.stack, "rave.leaderboards.v1.Leaderboards/SubmitScore",
                    {"leaderboardKey": board, "score": "31"}, token)
        driver = self.signed_in("operator")

        # Wallet: where the application allows real money; a signed-up player in NL may play for real, in FR not.
        open_page(driver, "wallet")
        self.assertEqual(settled(driver, "currencies-status")[0], "ok")
        fill(driver, "eligibility-form", {"countries": "gb, NL"})
        state, text = submit_with_reason(driver, "eligibility-form", f"licence granted {suffix}", "eligibility-status")
        self.assertEqual((state, text), ("ok", "Saved."))
        harness.wait_for(driver, lambda d: text_of(d, "eligibility-countries") == "GB, NL",
                         "the page shows the countries set, read back from the wallet")
        self.assertEqual(admin_call(self.stack, "rave.wallet.v1.WalletAdmin/GetEligibility",
                                    {"appId": self.stack.app_id}).get("realMoneyCountries"), ["GB", "NL"])
        for country, allowed in (("NL", True), ("FR", False)):
            account = player_call(self.stack, "rave.wallet.v1.Wallet/GetAccount", {"country": country}, token)
            self.assertEqual(bool(account.get("realMoneyAllowed")), allowed, f"{country}: {account}")
        self.assertTrue(audited(self.stack, "rave.wallet.v1.WalletAdmin/SetEligibility", f"licence granted {suffix}"))
        shot(driver, "21-wallet-eligibility-1280")

        # Leaderboards: the board's index rebuilt from its table; the score is still there.
        open_page(driver, "leaderboards")
        fill(driver, "rebuild-form", {"key": board})
        state, text = submit_with_reason(driver, "rebuild-form", f"checking the index {suffix}", "rebuild-status")
        self.assertEqual((state, text), ("ok", f"Rebuilt {board}: 1 entries in the index."))
        top = admin_call(self.stack, "rave.leaderboards.v1.LeaderboardsAdmin/GetTopScores",
                         {"appId": self.stack.app_id, "leaderboardKey": board, "count": 5})
        self.assertEqual([(row["userId"], row["score"]) for row in top.get("scores", [])], [(player, "31")])
        self.assertTrue(audited(self.stack, "rave.leaderboards.v1.LeaderboardsAdmin/RebuildIndex",
                                f"checking the index {suffix}"))
        shot(driver, "22-leaderboards-rebuild-1280")

        # Push: the default language, and the deliveries of a test notification (the token masked on the page).
        open_page(driver, "push")
        self.assertEqual(settled(driver, "templates-status")[0], "ok")
        fill(driver, "default-language-form", {"language": "fr"})
        state, text = submit_with_reason(driver, "default-language-form", f"french first {suffix}",
                                         "default-language-status")
        self.assertEqual((state, text), ("ok", "Saved."))
        harness.wait_for(driver, lambda d: d.find_element(By.ID, "push-default-language").get_attribute(
            "data-language") == "fr", "the page shows the new default language")
        templates = admin_call(self.stack, "rave.push.v1.PushAdmin/ListTemplates", {"appId": self.stack.app_id})
        self.assertEqual(templates.get("defaultLanguage"), "fr")
        # The rest of the notification goes as JSON: the server reads it (a time to live over 28 days is refused in
        # its words), and a page-side JSON error makes no call.
        fill(driver, "send-form", {"user": player, "more": '{"ttlSeconds": 99999999}'})
        state, text = submit_with_reason(driver, "send-form", f"too long a life {suffix}", "send-status")
        self.assertEqual(state, "error", text)
        self.assertIn("ttl_seconds must be 0", text)
        fill(driver, "send-form", {"user": player, "more": '{"data": '})
        driver.execute_script('delete document.getElementById("send-status").dataset.state')
        driver.find_element(By.ID, "send-form-submit").click()
        self.assertEqual(settled(driver, "send-status")[0], "error")
        self.assertIn("must be a JSON object", text_of(driver, "send-status"))
        fill(driver, "send-form", {"user": f"{player}, {player}", "more": json.dumps(
            {"data": [{"key": "level", "value": "7"}], "collapseKey": f"c-{suffix}", "ttlSeconds": 600})})
        state, text = submit_with_reason(driver, "send-form", f"testing deliveries {suffix}", "send-status")
        self.assertEqual(state, "ok", text)
        queued, held = (int(n) for n in re.findall(r"\d+", text)[:2])
        self.assertEqual(queued + held, 1, f"the device of the player named twice is notified once: {text}")
        state, text = settled(driver, "deliveries-status")
        self.assertEqual(state, "ok", text)
        deliveries = text_of(driver, "deliveries")
        self.assertIn(player, deliveries)
        self.assertIn("…" + device_token[-6:], deliveries)
        self.assertNotIn(device_token, deliveries, "the page shows no whole token")
        notification = driver.find_element(By.CSS_SELECTOR, '#deliveries-form [name="notification"]').get_attribute(
            "value")
        answered = admin_call(self.stack, "rave.push.v1.PushAdmin/GetDeliveries", {"notificationId": notification})
        self.assertTrue(answered.get("deliveries"), answered)
        self.assertNotIn(device_token, json.dumps(answered), "GetDeliveries itself answers no whole token")
        # Put the default back: the other tests' pushes expect the built-in English.
        fill(driver, "default-language-form", {"language": ""})
        state, text = submit_with_reason(driver, "default-language-form", f"back to english {suffix}",
                                         "default-language-status")
        self.assertEqual(state, "ok", text)
        shot(driver, "23-push-language-deliveries-1280")

        # Social lists: a custom list, listed by GetLists.
        open_page(driver, "social")
        self.assertEqual(settled(driver, "social-lists-status")[0], "ok")
        fill(driver, "list-form", {"key": f"guild-{suffix}", "kind": "LIST_KIND_FOLLOWERS", "maxMembers": "50"})
        state, text = submit_with_reason(driver, "list-form", f"guild feature {suffix}", "list-status")
        self.assertEqual((state, text), ("ok", "Created."))
        harness.wait_for(driver, lambda d: d.find_elements(
            By.CSS_SELECTOR, f'#social-lists tr[data-key="guild-{suffix}"]'), "the new list is listed")
        lists = admin_call(self.stack, "rave.social.v1.SocialAdmin/GetLists", {"appId": self.stack.app_id})["lists"]
        created = [row for row in lists if row["key"] == f"guild-{suffix}"]
        self.assertEqual(len(created), 1, lists)
        self.assertEqual((created[0]["kind"], created[0]["maxMembers"]), ("LIST_KIND_FOLLOWERS", 50))
        shot(driver, "24-social-lists-1280")

        # Mail templates: a Dutch password reset mail; the player asking in Dutch gets it.
        open_page(driver, "mail")
        subject = f"Nieuw wachtwoord {suffix}"
        fill(driver, "mail-template-form", {"kind": "MAIL_KIND_PASSWORD_RESET", "language": "nl", "subject": subject,
                                            "body": "Je code is {{code}} ({{minutes}} minuten)."})
        state, text = submit_with_reason(driver, "mail-template-form", f"dutch launch {suffix}", "mail-template-status")
        self.assertEqual((state, text), ("ok", "Saved."))
        harness.wait_for(driver, lambda d: subject in text_of(d, "mail-templates"), "the template is listed")
        self.assertTrue(driver.find_elements(
            By.CSS_SELECTOR, '#mail-templates tr[data-key="MAIL_KIND_PASSWORD_RESET/nl"]'), "listed by kind and language")
        player_call(self.stack, "rave.identity.v1.Identity/RequestPasswordReset",
                    {"appId": self.stack.app_id, "email": email_address, "language": "nl"}, None)
        harness.wait_for(driver, lambda d: subject in mails_to(self.stack, email_address),
                         "the player's reset mail uses the template", seconds=30)
        shot(driver, "25-mail-templates-1280")
        self.assertTrue(audit_page_shows(driver, "rave.identity.v1.IdentityAdmin/SetMailTemplate",
                                         f"dutch launch {suffix}"), "the audit page lists the template change")

    def test_owner_creates_a_publisher_and_an_application_and_edits_it(self):
        suffix = uuid.uuid4().hex[:6]
        driver = self.signed_in("owner")
        open_page(driver, "apps")
        self.assertEqual(settled(driver, "application-status")[0], "ok", "the menu's application is shown")
        self.assertEqual(text_of(driver, "application-id"), self.stack.app_id)

        fill(driver, "publisher-create", {"name": f"Studio {suffix}"})
        state, text = submit_with_reason(driver, "publisher-create", f"new studio {suffix}", "publisher-status")
        self.assertEqual((state, text), ("ok", "Created."))
        publisher = text_of(driver, "publisher-created")
        self.assertRegex(publisher, r"^[0-9a-f]{32}$")
        fill(driver, "publisher-update", {"publisher": publisher, "name": f"Studio {suffix} Ltd"})
        state, text = submit_with_reason(driver, "publisher-update", f"legal name {suffix}", "publisher-status")
        self.assertEqual((state, text), ("ok", f"Renamed to Studio {suffix} Ltd."))

        fill(driver, "application-create", {"publisher": publisher, "name": f"Game {suffix}",
                                            "mergePolicy": "MERGE_POLICY_PROMPT"})
        state, text = submit_with_reason(driver, "application-create", f"new game {suffix}",
                                         "application-create-status")
        self.assertEqual(state, "ok", text)
        app_id = text.removeprefix("Created ").removesuffix(".")
        created = admin_call(self.stack, "rave.identity.v1.IdentityAdmin/GetApplication", {"appId": app_id})
        self.assertEqual((created["application"]["publisherId"], created["application"]["name"]),
                         (publisher, f"Game {suffix}"))
        self.assertEqual(created["application"]["settings"]["mergePolicy"], "MERGE_POLICY_PROMPT")

        driver.find_element(By.ID, "application-created-link").click()
        harness.wait_for(driver, lambda d: loaded("apps")(d) and text_of(d, "application-id") == app_id,
                         "the new application is shown")
        self.assertEqual(text_of(driver, "application-publisher"), publisher)
        fill(driver, "application-edit", {"name": f"Game {suffix} HD",
                                          "allowedOrigins": f"https://game-{suffix}.example"})
        state, text = submit_with_reason(driver, "application-edit", f"web launch {suffix}", "application-edit-status")
        self.assertEqual((state, text), ("ok", "Saved."))
        harness.wait_for(driver, lambda d: text_of(d, "application-name") == f"Game {suffix} HD",
                         "the page shows the new name")
        edited = admin_call(self.stack, "rave.identity.v1.IdentityAdmin/GetApplication", {"appId": app_id})
        self.assertEqual(edited["application"]["name"], f"Game {suffix} HD")
        self.assertEqual(edited["application"]["settings"]["allowedOrigins"], [f"https://game-{suffix}.example"])
        self.assertEqual(edited["application"]["settings"]["mergePolicy"], "MERGE_POLICY_PROMPT", "kept by the form")
        self.assertEqual(settled(driver, "publisher-applications-status")[0], "ok")
        harness.wait_for(driver, lambda d: f"Game {suffix} HD" in text_of(d, "publisher-applications"),
                         "the publisher's applications list the edited application")
        self.assertIn(f"https://game-{suffix}.example", text_of(driver, "publisher-applications"))
        self.assertTrue(shown_after_more(driver, "publishers", publisher), "the new publisher is listed")
        row = driver.find_element(By.CSS_SELECTOR, f'#publishers tr[data-key="{publisher}"]')
        self.assertIn(f"Studio {suffix} Ltd", row.text, "under its new name")
        for method, reason in (("CreatePublisher", f"new studio {suffix}"), ("UpdatePublisher", f"legal name {suffix}"),
                               ("CreateApplication", f"new game {suffix}"),
                               ("UpdateApplication", f"web launch {suffix}")):
            self.assertTrue(audited(self.stack, f"rave.identity.v1.IdentityAdmin/{method}", reason), method)
        shot(driver, "26-apps-1280")

        # Wallet: any game as the protocol's JSON, a slot too, which the odds form cannot define (games are shared by
        # every publisher: an owner of all publishers creates them).
        open_page(driver, "wallet")
        slot = {"gameId": f"json-slot-{suffix}", "name": "JSON slot", "slot": {
            "rows": 1, "reels": [{"symbols": ["cherry", "lemon"]}, {"symbols": ["cherry", "lemon"]}],
            "paylines": [{"rows": [0, 0]}], "paytable": [{"symbol": "cherry", "count": 2, "multiplier": 3}]}}
        fill(driver, "game-json-form", {"definition": json.dumps(slot)})
        state, text = submit_with_reason(driver, "game-json-form", f"new slot {suffix}", "game-json-status")
        self.assertEqual(state, "ok", text)
        self.assertIn("return to player 0.75", text)
        harness.wait_for(driver, lambda d: d.find_elements(
            By.CSS_SELECTOR, f'#games tr[data-key="json-slot-{suffix}"]'), "the slot is listed")
        games = admin_call(self.stack, "rave.wallet.v1.WalletAdmin/ListGames", {})["games"]
        self.assertIn(f"json-slot-{suffix}", [game["gameId"] for game in games])
        self.assertTrue(audited(self.stack, "rave.wallet.v1.WalletAdmin/CreateGame", f"new slot {suffix}"))
        shot(driver, "28-wallet-game-json-1280")

    def test_viewer_reads_publishers_applications_mail_templates_eligibility_and_a_players_trail(self):
        suffix = uuid.uuid4().hex[:6]
        # Set with the admin certificate, not through the page: the page reads each back from its service.
        subject = f"Valmis {suffix}"
        admin_call(self.stack, "rave.identity.v1.IdentityAdmin/SetMailTemplate", {
            "appId": self.stack.app_id, "kind": "MAIL_KIND_EXPORT_READY", "language": "fi", "subject": subject,
            "body": "Tietosi ovat valmiina."})
        admin_call(self.stack, "rave.wallet.v1.WalletAdmin/SetEligibility",
                   {"appId": self.stack.app_id, "realMoneyCountries": ["NL", "GB"]})
        other = admin_call(self.stack, "rave.identity.v1.IdentityAdmin/CreatePublisher",
                           {"name": f"Elsewhere {suffix}"})["publisher"]["publisherId"]
        player = guest(self.stack)
        self.stack.deposit(player, "1.50")
        driver = self.signed_in("viewer")

        # Publishers: a viewer of one publisher sees that one only; its applications include the menu's.
        open_page(driver, "apps")
        self.assertEqual(settled(driver, "publishers-status")[0], "ok")
        keys = [row.get_attribute("data-key") for row in driver.find_elements(By.CSS_SELECTOR, "#publishers tbody tr")]
        self.assertEqual(keys, [self.publisher_id], "only the viewer's publisher")
        self.assertNotIn(other, text_of(driver, "publishers"))
        self.assertEqual(settled(driver, "publisher-applications-status")[0], "ok")
        self.assertTrue(shown_after_more(driver, "publisher-applications", self.stack.app_id),
                        "the publisher's applications list the menu's")
        shot(driver, "29-apps-viewer-lists-1280")

        # Mail templates: the one set with the certificate, with its subject.
        open_page(driver, "mail")
        self.assertEqual(settled(driver, "mail-templates-status")[0], "ok")
        row = driver.find_elements(By.CSS_SELECTOR, '#mail-templates tr[data-key="MAIL_KIND_EXPORT_READY/fi"]')
        self.assertTrue(row, text_of(driver, "mail-templates"))
        self.assertIn(subject, row[0].text)
        shot(driver, "30-mail-templates-viewer-1280")

        # Wallet: the real-money countries as the wallet holds them.
        open_page(driver, "wallet")
        self.assertEqual(settled(driver, "eligibility-read-status")[0], "ok")
        self.assertEqual(text_of(driver, "eligibility-countries"), "GB, NL")

        # The player's audit entries list the certificate's deposit, which the gateway recorded about the player.
        open_page(driver, "players", f"user={player}")
        self.assertEqual(settled(driver, "player-audit-status")[0], "ok")
        self.assertIn("rave.wallet.v1.WalletAdmin/Deposit", text_of(driver, "player-audit"))
        deposits = [entry for entry in self.audit_of(player)
                    if entry.get("method") == "rave.wallet.v1.WalletAdmin/Deposit"]
        self.assertEqual([entry.get("targetUserId") for entry in deposits], [player])
        shot(driver, "31-players-audit-deposit-1280")

    def test_viewer_is_refused_every_write_of_the_new_panels(self):
        suffix = uuid.uuid4().hex[:6]
        player = guest(self.stack)
        driver = self.signed_in("viewer")
        viewer = operator_id_of(driver)
        refusals = [
            ("players", f"user={player}", "export-form", {}, "player-export-status"),
            ("wallet", "", "eligibility-form", {"countries": "US"}, "eligibility-status"),
            ("leaderboards", "", "rebuild-form", {"key": "high-scores"}, "rebuild-status"),
            ("push", "", "default-language-form", {"language": "de"}, "default-language-status"),
            ("social", "", "list-form", {"key": f"viewer-{suffix}"}, "list-status"),
            ("mail", "", "mail-template-form", {"subject": "Hi", "body": "{{code}}"}, "mail-template-status"),
            ("apps", "", "publisher-create", {"name": f"Viewer {suffix}"}, "publisher-status"),
            ("apps", "", "application-edit", {"name": "renamed by a viewer"}, "application-edit-status"),
        ]
        for page, query, form_id, values, status in refusals:
            open_page(driver, page, query)
            harness.wait_for(driver, lambda d: d.find_elements(By.ID, form_id), f"{form_id} shows")
            fill(driver, form_id, values)
            state, text = submit_with_reason(driver, form_id, "a viewer trying", status)
            self.assertEqual(state, "error", f"{form_id}: {text}")
            self.assertIn("PERMISSION_DENIED (HTTP 403)", text, form_id)
        # The server changed nothing and recorded nothing for the viewer.
        self.assertNotIn("accountExport", admin_call(self.stack, "rave.identity.v1.IdentityAdmin/GetUserExport",
                                                     {"userId": player}))
        lists = admin_call(self.stack, "rave.social.v1.SocialAdmin/GetLists", {"appId": self.stack.app_id})["lists"]
        self.assertNotIn(f"viewer-{suffix}", [row["key"] for row in lists])
        application = admin_call(self.stack, "rave.identity.v1.IdentityAdmin/GetApplication",
                                 {"appId": self.stack.app_id})["application"]
        self.assertNotEqual(application["name"], "renamed by a viewer")
        self.assertEqual(admin_call(self.stack, "rave.identity.v1.IdentityAdmin/ListAuditEvents",
                                    {"operatorId": viewer}).get("events", []), [])
        shot(driver, "27-apps-viewer-refused-1280")


if __name__ == "__main__":
    unittest.main()
