#!/usr/bin/env python3
# SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
# SPDX-License-Identifier: MIT
"""Drives the audit console at /admin/ in headless Chromium (Debian's chromium and
chromium-driver, through Selenium) against a running `accountctl serve`.

The caller (Tests/AccountServerTests/AdminConsoleBrowserTests.swift) has signed up, modified and
deleted accounts through the API and passes what the page must show. Every check that fails is
printed and makes the exit status 1; a missing browser or driver is an error, never a skip.
Screenshots of each step go to --screenshots.
"""

import argparse
import http.server
import json
import os
import shutil
import subprocess
import sys
import threading
import time

from selenium import webdriver
from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException, TimeoutException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

failures = []


def check(condition, what):
    print(("ok     " if condition else "FAILED ") + what, flush=True)
    if not condition:
        failures.append(what)


def browser():
    options = webdriver.ChromeOptions()
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    driver = shutil.which("chromedriver")
    if not chromium or not driver:
        raise SystemExit("Chromium or chromedriver is missing: Tools/run.sh install-test-dependencies installs Debian's "
                         "chromium and chromium-driver")
    options.binary_location = chromium
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1400,1500",
                     "--disable-gpu", "--no-first-run"):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(service=Service(driver), options=options)


def wait_for(driver, what, condition, seconds=20):
    try:
        # An element found just before the page replaced it (a reload, rows made anew) is looked
        # for again at the next poll.
        return WebDriverWait(driver, seconds, poll_frequency=0.1, ignored_exceptions=(StaleElementReferenceException,)).until(
            lambda _: condition())
    except TimeoutException:
        check(False, what + " (timed out after %d s)" % seconds)
        return None


def fetch_json(driver, path):
    """A same-origin fetch from the page: {"status", "body"}."""
    return driver.execute_async_script("""
        const done = arguments[arguments.length - 1];
        fetch(location.origin + arguments[0], { credentials: "same-origin" })
          .then(async (response) => done({ status: response.status, body: await response.json().catch(() => null) }),
                (error) => done({ status: 0, body: String(error) }));
    """, path)


def attack(driver, base, account_id, live_account_id):
    """Serves three pages from another origin on this host and opens them: a form that POSTs a
    verify as text/plain, one that POSTs an erasure of the live account, and a navigation to an
    account's history. All must be answered 403."""
    pages = {
        "/form": ("<form id=f method=post enctype=text/plain action='%s/admin/api/verify'>"
                  "<input name=x value=y></form><script>document.getElementById('f').submit()</script>" % base),
        "/erase": ("<form id=f method=post enctype=text/plain action='%s/admin/api/accounts/%s/erase'>"
                   "<input name='{\"reason\": \"x' value='\"}'></form><script>document.getElementById('f').submit()</script>"
                   % (base, live_account_id)),
        "/navigate": "<script>location = '%s/admin/api/accounts/%s/history'</script>" % (base, account_id),
    }

    class Evil(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            body = pages.get(self.path, "").encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *arguments):
            pass

    evil = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Evil)
    threading.Thread(target=evil.serve_forever, daemon=True).start()
    try:
        for path in pages:
            driver.get("http://127.0.0.1:%d%s" % (evil.server_address[1], path))
            refused = wait_for(driver, "the cross-site %s reached the server and was refused" % path,
                               lambda: "cross-site-request" in driver.page_source or None)
            check(bool(refused) and "/admin/api/" in driver.current_url,
                  "the cross-site %s was answered 403 cross-site-request (%s)" % (path, driver.current_url))
    finally:
        evil.shutdown()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--base", required=True, help="http://127.0.0.1:PORT")
    parser.add_argument("--admin", required=True, help="name:password")
    parser.add_argument("--expect", required=True, help="JSON: what the page must show")
    parser.add_argument("--append", required=True, help="JSON list: a command that appends a signup from another process")
    parser.add_argument("--screenshots", required=True)
    arguments = parser.parse_args()
    expect = json.loads(arguments.expect)
    os.makedirs(arguments.screenshots, exist_ok=True)

    def shot(name):
        path = os.path.join(arguments.screenshots, name + ".png")
        driver.save_screenshot(path)
        print("screenshot " + path, flush=True)

    driver = browser()
    try:
        # Without a session: the sign-in form, not the console (the browser shows no Basic prompt).
        driver.get(arguments.base + "/admin/")
        form = wait_for(driver, "the sign-in form is shown", lambda: driver.find_element(By.ID, "signin").is_displayed() or None)
        check(bool(form) and not driver.find_element(By.ID, "console").is_displayed(), "without a session the console is hidden")
        name, password = arguments.admin.split(":", 1)
        driver.find_element(By.ID, "signin-name").send_keys(name)
        driver.find_element(By.ID, "signin-password").send_keys("not the password")
        driver.find_element(By.ID, "signin-button").click()
        wait_for(driver, "a wrong password is refused", lambda: "Wrong name or password" in driver.find_element(By.ID, "signin-error").text)
        driver.find_element(By.ID, "signin-password").clear()
        driver.find_element(By.ID, "signin-password").send_keys(password)
        driver.find_element(By.ID, "signin-button").click()
        wait_for(driver, "the page names the signed-in admin",
                 lambda: driver.find_element(By.ID, "admin-name").text == name)
        check(driver.find_element(By.ID, "console").is_displayed() and not driver.find_element(By.ID, "signin").is_displayed(),
              "signed in: the console replaces the form")
        check(driver.get_cookie("spezi_admin") is not None and driver.get_cookie("spezi_admin").get("httpOnly") is True,
              "the session cookie is HttpOnly")

        # Activity: one point per hour of the last 24 in each of the three series, and the counts.
        chart_points = wait_for(driver, "the activity chart is drawn",
                                lambda: driver.find_elements(By.CSS_SELECTOR, "#chart svg circle.point") or None)
        if chart_points:
            for series, total in (("signups", expect["signups"]), ("deletions", expect["deletions"]),
                                  ("failedLogins", expect["failedLogins"])):
                dots = driver.find_elements(By.CSS_SELECTOR, "#chart circle.point[data-series='%s']" % series)
                check(len(dots) == 24, "the %s line has 24 points (it has %d)" % (series, len(dots)))
                values = [int(dot.get_attribute("data-value")) for dot in dots]
                check(sum(values) == total, "the %s points add up to %d (they add up to %d)" % (series, total, sum(values)))
                # The events were made a moment ago; a run that crosses the hour splits them
                # between the last two points.
                check(sum(values[-2:]) == total, "the last two hours hold all %d %s" % (total, series))

        # The live account's timeline: before/after values.
        query = driver.find_element(By.ID, "find-query")
        query.send_keys(expect["liveUserId"])
        driver.find_element(By.ID, "find-button").click()
        entries = wait_for(driver, "the live account's timeline appears",
                           lambda: driver.find_elements(By.CSS_SELECTOR, "#timeline > li") or None)
        if entries:
            types = [entry.get_attribute("data-type") for entry in entries]
            check(types[:1] == ["account.created"], "the timeline starts with account.created (%s)" % types)
            check("account.details-modified" in types, "the timeline has the modification")
            rows = driver.find_elements(By.CSS_SELECTOR, "#timeline li[data-type='account.details-modified'] tr[data-key='name']")
            check(len(rows) == 1, "the modification shows one change of the name")
            if rows:
                old = rows[0].find_element(By.CSS_SELECTOR, "td.old").text
                new = rows[0].find_element(By.CSS_SELECTOR, "td.new").text
                check(expect["before"] in old and expect["after"] in new,
                      "before/after: %r → %r (expected %r → %r)" % (old, new, expect["before"], expect["after"]))
            check(not driver.find_elements(By.CSS_SELECTOR, "#timeline li.redacted"), "nothing of the live account is redacted")
            shot("timeline")

        # The deleted account: found by its account id, every entry with values redacted.
        query.clear()
        query.send_keys(expect["deletedAccountId"])
        driver.find_element(By.ID, "find-button").click()
        wait_for(driver, "the deleted account is marked deleted",
                 lambda: driver.find_elements(By.CSS_SELECTOR, "#account .badge.deleted") or None)
        entries = driver.find_elements(By.CSS_SELECTOR, "#timeline > li")
        redacted = driver.find_elements(By.CSS_SELECTOR, "#timeline > li.redacted")
        check(len(entries) >= 2 and len(redacted) >= 1, "the deleted account's timeline has redacted entries (%d of %d)"
              % (len(redacted), len(entries)))
        check(expect["deletedGivenName"] not in driver.find_element(By.ID, "account").text,
              "the deleted account's name is shown nowhere")
        shot("deleted-account")

        # Verify: progress, then the result, also in the log's state.
        driver.find_element(By.ID, "verify-button").click()
        outcome = wait_for(driver, "verify finishes",
                           lambda: driver.find_elements(By.CSS_SELECTOR, "#verify-job .job-state[data-state]") or None, 60)
        if outcome:
            check(outcome[0].get_attribute("data-state") == "finished" and "intact" in outcome[0].text,
                  "verify says intact: %r" % outcome[0].text)
            wait_for(driver, "the log's state shows the verification",
                     lambda: driver.find_element(By.ID, "log-verified").text.startswith("intact"))
        shot("verified")

        # Rebuild a projection and see it finish.
        button = wait_for(driver, "a rebuild button for the details cache", lambda: driver.find_elements(
            By.CSS_SELECTOR, "button[data-projection='%s']" % expect["projection"]) or None)
        if button:
            button[0].click()
            outcome = wait_for(driver, "the rebuild finishes",
                               lambda: driver.find_elements(By.CSS_SELECTOR, "#rebuild-job .job-state[data-state]") or None, 60)
            if outcome:
                check(outcome[0].get_attribute("data-state") == "finished" and expect["projection"] in outcome[0].text,
                      "the rebuild finished: %r" % outcome[0].text)

        # The audit trail names the admin for what they did.
        wait_for(driver, "the audit trail lists the history views, the verification and the rebuild", lambda: {
            row.get_attribute("data-action") for row in driver.find_elements(By.CSS_SELECTOR, "#audit-rows tr")
        } >= {"admin.history-viewed", "admin.verified", "admin.rebuild-started", "admin.rebuild-finished"})

        # The live tail: another process appends; the record appears.
        wait_for(driver, "the tail is live", lambda: driver.find_element(By.ID, "tail-state").text == "live")
        before = {row.get_attribute("data-position") for row in driver.find_elements(By.CSS_SELECTOR, "#tail-rows tr")}
        appended = subprocess.run(json.loads(arguments.append), input=b"a password for the tail\n", capture_output=True)
        check(appended.returncode == 0, "another process appended a signup: %s" % appended.stdout.decode().strip()
              + appended.stderr.decode().strip())
        created = wait_for(driver, "the other process's signup appears in the tail", lambda: [
            row for row in driver.find_elements(By.CSS_SELECTOR, "#tail-rows tr[data-type='account.created']")
            if row.get_attribute("data-position") not in before] or None)
        if created:
            check(created[0].find_elements(By.CSS_SELECTOR, "td")[3].text in appended.stdout.decode(),
                  "the tail names the new account's stream")
        shot("console")

        # A page on another origin (this host, another port: same-site, so the SameSite=Strict
        # cookie goes along) form-POSTs a verify and navigates to an account's history: refused.
        audit_before = fetch_json(driver, "/admin/api/audit")
        attack(driver, arguments.base, expect["deletedAccountId"], expect["liveAccountId"])
        driver.get(arguments.base + "/admin/")
        wait_for(driver, "back in the console", lambda: driver.find_element(By.ID, "admin-name").text == name)
        audit_after = fetch_json(driver, "/admin/api/audit")
        check(audit_before["status"] == 200 and audit_after["body"] == audit_before["body"],
              "the cross-site requests appended nothing to the audit stream (%d entries before, %d after)"
              % (len(audit_before["body"] or []), len(audit_after["body"] or [])))

        # Admin actions on the live account (still there: the cross-site erasure was refused): end
        # its sessions, then erase it on request with a reason.
        query = driver.find_element(By.ID, "find-query")
        query.clear()
        query.send_keys(expect["liveUserId"])
        driver.find_element(By.ID, "find-button").click()
        end_button = wait_for(driver, "the live account offers its actions", lambda: driver.find_elements(By.ID, "end-sessions") or None)
        if end_button:
            end_button[0].click()
            wait_for(driver, "its sessions are ended", lambda: driver.find_element(By.ID, "action-status").text.endswith("sessions ended"))
            ended = driver.find_element(By.ID, "action-status").text
            check(ended.split(" ")[0].isdigit() and int(ended.split(" ")[0]) >= 1, "at least one session was ended (%r)" % ended)
            driver.find_element(By.ID, "erase-account").click()
            wait_for(driver, "an erasure without a reason is not sent",
                     lambda: "reason" in driver.find_element(By.ID, "action-status").text)
            # Disable, then enable again: both in the timeline.
            driver.find_element(By.ID, "erase-reason").send_keys("a support ticket")
            driver.find_element(By.ID, "disable-account").click()
            wait_for(driver, "the timeline shows the account disabled", lambda: driver.find_elements(
                By.CSS_SELECTOR, "#timeline li[data-type='account.disabled']") or None)
            driver.find_element(By.ID, "erase-reason").send_keys("resolved")
            driver.find_element(By.ID, "enable-account").click()
            wait_for(driver, "the timeline shows the account enabled", lambda: driver.find_elements(
                By.CSS_SELECTOR, "#timeline li[data-type='account.enabled']") or None)
            driver.find_element(By.ID, "erase-reason").send_keys("the owner asked by mail")
            driver.find_element(By.ID, "erase-account").click()
            wait_for(driver, "the erased account is marked deleted",
                     lambda: driver.find_elements(By.CSS_SELECTOR, "#account .badge.deleted") or None)
            types = [entry.get_attribute("data-type") for entry in driver.find_elements(By.CSS_SELECTOR, "#timeline > li")]
            check(types[-1:] == ["account.deleted"] and "auth.session-ended" in types,
                  "the timeline ends with the sessions ended and the deletion (%s)" % types[-4:])
            wait_for(driver, "the audit trail lists the ended sessions and the erasure", lambda: {
                row.get_attribute("data-action") for row in driver.find_elements(By.CSS_SELECTOR, "#audit-rows tr")
            } >= {"admin.sessions-ended", "admin.account-disabled", "admin.account-enabled", "admin.account-erased"})
            shot("erased")

        # Webhooks: add a subscription through the form (its secret shown once), pause it, remove it.
        driver.find_element(By.ID, "webhook-url").send_keys("http://127.0.0.1:9/hook")
        driver.find_element(By.ID, "webhook-types").send_keys("account.created account.deleted")
        driver.find_element(By.ID, "webhook-add").click()
        secret = wait_for(driver, "the new subscription's secret is shown", lambda: driver.find_elements(By.ID, "webhook-secret") or None)
        secret_text = secret[0].text if secret else ""
        check(secret_text.startswith("whsec_"), "the secret is a whsec_ secret (%r)" % secret_text[:10])
        row = wait_for(driver, "the subscription is listed", lambda: driver.find_elements(By.CSS_SELECTOR, "#webhook-rows tr[data-webhook]") or None)
        def click(selector):
            """Clicks the element, found again if the page made its row anew meanwhile."""
            def attempt():
                try:
                    driver.find_element(By.CSS_SELECTOR, selector).click()
                    return True
                except (StaleElementReferenceException, NoSuchElementException):
                    return None
            wait_for(driver, "clicked " + selector, attempt)

        if row:
            click("#webhook-rows tr[data-webhook] button[data-action='pause']")
            wait_for(driver, "the subscription shows paused", lambda: driver.find_elements(
                By.CSS_SELECTOR, "#webhook-rows tr[data-paused='true']") or None)
            listed = fetch_json(driver, "/admin/api/webhooks")
            check(listed["status"] == 200 and secret_text and secret_text not in json.dumps(listed["body"]),
                  "the listing never shows the secret")
            click("#webhook-rows tr[data-webhook] button[data-action='remove']")
            wait_for(driver, "the subscription is gone", lambda: not driver.find_elements(By.CSS_SELECTOR, "#webhook-rows tr[data-webhook]"))
            shot("webhooks")

        # Sign out: the form again, and the old session is refused.
        driver.find_element(By.ID, "signout-button").click()
        wait_for(driver, "signed out: the sign-in form is shown", lambda: driver.find_element(By.ID, "signin").is_displayed() or None)
        check(driver.get_cookie("spezi_admin") is None, "the session cookie is gone")
        check(fetch_json(driver, "/admin/api/whoami")["status"] == 401, "after signing out the API answers 401")
        shot("signed-out")

        # The expected errors: the 401s without a session, the 403s of the cross-site requests.
        errors = [entry for entry in driver.get_log("browser") if entry["level"] == "SEVERE"
                  and "the server responded with a status of 401" not in entry["message"]
                  and "the server responded with a status of 403" not in entry["message"]]
        check(not errors, "no script errors in the console: %s" % errors)
    finally:
        driver.quit()
    print("%d checks failed" % len(failures) if failures else "all checks passed", flush=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
