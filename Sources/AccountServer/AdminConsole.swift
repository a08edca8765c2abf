//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Crypto
import Foundation
import Hummingbird

/// The audit console's page at `/admin/`: one HTML document and its script, both served by this
/// server (no CDN, no external library). The page holds no data: without a session its script
/// shows the sign-in form, which opens one (`POST /admin/api/session`); with one, the console,
/// whose data come from the admin API.
enum AdminConsole {
    /// The page, with its script inline: the page loads nothing else.
    static func page() -> Response {
        Response(
            status: .ok, headers: [.contentType: "text/html; charset=utf-8", .contentSecurityPolicy: policy],
            body: ResponseBody(byteBuffer: ByteBuffer(string: document)))
    }

    static let document = html.replacingOccurrences(of: "<script></script>", with: "<script>\(AdminConsoleScript.source)</script>")

    /// Only this script runs (by its hash), and it talks only to this server.
    static let policy: String = {
        let hash = Data(SHA256.hash(data: Data(AdminConsoleScript.source.utf8))).base64EncodedString()
        return "default-src 'none'; script-src 'sha256-\(hash)'; style-src 'unsafe-inline'; connect-src 'self'; img-src data:; "
            + "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    }()

    static let html = #"""
        <!doctype html>
        <html lang="en">
        <head>
        <meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <title>Account store: audit console</title>
        <style>
        :root { --ink: #1d2330; --muted: #5b6577; --line: #d8dde6; --panel: #f6f8fb; --accent: #8c1515;
                --signups: #1f77b4; --deletions: #c0392b; --failed: #e69f00; }
        * { box-sizing: border-box; }
        [hidden] { display: none !important; }
        body { margin: 0; font: 14px/1.45 system-ui, sans-serif; color: var(--ink); background: #fff; }
        header { display: flex; justify-content: space-between; align-items: baseline; padding: 12px 24px;
                 border-bottom: 3px solid var(--accent); }
        header h1 { margin: 0; font-size: 20px; }
        main { display: grid; grid-template-columns: minmax(0, 3fr) minmax(0, 2fr); gap: 16px; padding: 16px 24px; }
        section { background: var(--panel); border: 1px solid var(--line); border-radius: 6px; padding: 12px 16px; }
        section h2 { margin: 0 0 8px; font-size: 16px; }
        .wide { grid-column: 1 / -1; }
        form { display: flex; gap: 8px; }
        #signin { max-width: 440px; margin: 48px auto; }
        #signin form { flex-direction: column; }
        #signin input { padding: 6px 8px; border: 1px solid var(--line); border-radius: 4px; }
        input[type=search] { flex: 1; padding: 6px 8px; border: 1px solid var(--line); border-radius: 4px; }
        button { padding: 6px 12px; border: 1px solid var(--accent); background: var(--accent); color: #fff; border-radius: 4px;
                 cursor: pointer; }
        button:disabled { opacity: 0.5; cursor: default; }
        .muted { color: var(--muted); }
        .error { color: #b00020; }
        code, .mono { font-family: ui-monospace, monospace; font-size: 12px; word-break: break-all; }
        ol.timeline { list-style: none; margin: 8px 0 0; padding: 0 0 0 16px; border-left: 2px solid var(--line); }
        ol.timeline > li { position: relative; margin: 0 0 12px; padding-left: 8px; }
        ol.timeline > li::before { content: ""; position: absolute; left: -23px; top: 5px; width: 10px; height: 10px;
                                   border-radius: 50%; background: var(--accent); }
        ol.timeline > li.redacted::before { background: var(--muted); }
        .entry-head { display: flex; gap: 12px; flex-wrap: wrap; }
        .entry-type { font-weight: 600; }
        table { border-collapse: collapse; width: 100%; margin-top: 4px; }
        th, td { text-align: left; padding: 3px 6px; border-bottom: 1px solid var(--line); vertical-align: top; }
        th { font-weight: 600; color: var(--muted); }
        td.old { color: #8a1c1c; text-decoration: line-through; }
        td.new { color: #1b6b2f; }
        .badge { display: inline-block; padding: 0 6px; border-radius: 8px; font-size: 12px; background: var(--line); }
        .badge.deleted { background: #f3d6d6; }
        svg text { font-size: 10px; fill: var(--muted); }
        .legend span { margin-right: 12px; }
        .legend i { display: inline-block; width: 10px; height: 10px; margin-right: 4px; border-radius: 2px; }
        progress { width: 100%; }
        #tail { max-height: 320px; overflow-y: auto; }
        #tail tr.fresh { animation: fresh 2s ease-out; }
        @keyframes fresh { from { background: #fff3b0; } to { background: transparent; } }
        dl { display: grid; grid-template-columns: max-content 1fr; gap: 2px 12px; margin: 0; }
        dt { color: var(--muted); }
        </style>
        </head>
        <body>
        <header>
          <h1>Account store &middot; audit console</h1>
          <span id="who" class="muted" hidden>signed in as <strong id="admin-name">…</strong>
            <button id="signout-button" type="button">Sign out</button></span>
        </header>
        <section id="signin" hidden>
          <h2>Sign in</h2>
          <form id="signin-form">
            <label for="signin-name">Name</label>
            <input id="signin-name" name="username" autocomplete="username" required>
            <label for="signin-password">Password</label>
            <input id="signin-password" name="password" type="password" autocomplete="current-password" required>
            <button id="signin-button" type="submit">Sign in</button>
          </form>
          <p id="signin-error" class="error"></p>
        </section>
        <main id="console" hidden>
          <section id="find" class="wide">
            <h2>Find an account</h2>
            <form id="find-form">
              <input id="find-query" type="search" placeholder="user id or account id" autocomplete="off" required>
              <button id="find-button" type="submit">Open history</button>
            </form>
            <p class="muted">Opening an account's history is recorded in the audit trail under your name.</p>
            <div id="account"></div>
          </section>
          <section id="activity">
            <h2>Activity</h2>
            <form id="activity-form">
              <select id="activity-bucket"><option value="hour">last 24 hours, per hour</option>
                <option value="day">last 30 days, per day</option></select>
            </form>
            <div class="legend"><span><i style="background: var(--signups)"></i>signups</span>
              <span><i style="background: var(--deletions)"></i>deletions</span>
              <span><i style="background: var(--failed)"></i>failed logins</span></div>
            <div id="chart"></div>
          </section>
          <section id="log">
            <h2>Log</h2>
            <dl>
              <dt>records</dt><dd id="log-records">…</dd>
              <dt>head hash</dt><dd id="log-head" class="mono">…</dd>
              <dt>last verify</dt><dd id="log-verified">…</dd>
            </dl>
            <p><button id="verify-button" type="button">Verify the log</button></p>
            <div id="verify-job"></div>
            <h2>Projections</h2>
            <table>
              <thead><tr><th>name</th><th>checkpoint</th><th>lag</th><th>generation</th><th></th></tr></thead>
              <tbody id="projections"></tbody>
            </table>
            <div id="rebuild-job"></div>
          </section>
          <section id="tail-section">
            <h2>Live tail <span id="tail-state" class="badge">connecting</span></h2>
            <div id="tail">
              <table>
                <thead><tr><th>position</th><th>time</th><th>type</th><th>stream</th></tr></thead>
                <tbody id="tail-rows"></tbody>
              </table>
            </div>
          </section>
          <section id="audit">
            <h2>Audit trail</h2>
            <table>
              <thead><tr><th>time</th><th>admin</th><th>action</th><th>on</th></tr></thead>
              <tbody id="audit-rows"></tbody>
            </table>
          </section>
        </main>
        <script></script>
        </body>
        </html>
        """#
}
