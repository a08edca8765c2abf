// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
"use strict";
// URLs are built on the origin: a page opened as http://name:password@host/admin/ must not
// hand its user info to fetch (which refuses URLs with credentials).
const api = (path, options) => fetch(location.origin + "/admin/api/" + path, Object.assign({ credentials: "same-origin" }, options))
  .then(async (response) => {
    const body = response.headers.get("content-type")?.includes("json") ? await response.json() : null;
    if (!response.ok) {
      const error = new Error((body && (body.detail || body.title)) || ("HTTP " + response.status));
      error.status = response.status;
      // The session expired or was signed out elsewhere: back to the form.
      if (response.status === 401 && path !== "session") showSignIn("The session has ended: sign in again.");
      throw error;
    }
    return body;
  });
const $ = (id) => document.getElementById(id);
function el(tag, attributes, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes || {})) {
    if (value !== undefined && value !== null) node.setAttribute(name, value);
  }
  for (const child of children) node.append(child instanceof Node ? child : document.createTextNode(String(child ?? "")));
  return node;
}
const svg = (tag, attributes) => {
  const node = document.createElementNS("http://www.w3.org/2000/svg", tag);
  for (const [name, value] of Object.entries(attributes)) node.setAttribute(name, value);
  return node;
};
const time = (iso) => new Date(iso).toLocaleString(undefined, { dateStyle: "medium", timeStyle: "medium" });

// Finding an account and its timeline.
async function openAccount(query) {
  const target = $("account");
  target.replaceChildren(el("p", { class: "muted" }, "Looking up " + query + " …"));
  try {
    const found = await api("accounts?query=" + encodeURIComponent(query));
    const base = "accounts/" + encodeURIComponent(found.accountId) + "/history?limit=200";
    const history = await api(base);
    const title = el("h3", {}, "Account ", el("code", {}, found.accountId), " ");
    if (found.deleted) title.append(el("span", { class: "badge deleted" }, "deleted"));
    const list = el("ol", { class: "timeline", id: "timeline" });
    for (const entry of history.entries) list.append(timelineEntry(entry));
    const count = el("p", { class: "muted" }, history.entries.length + " events, oldest first");
    // The server answers a page at a time: the next ones come when asked for.
    const more = el("button", { type: "button", id: "more-history" }, "Load more");
    let next = history.next;
    more.hidden = next === null;
    more.addEventListener("click", async () => {
      more.disabled = true;
      try {
        const page = await api(base + "&cursor=" + encodeURIComponent(next));
        for (const entry of page.entries) list.append(timelineEntry(entry));
        next = page.next;
        count.textContent = list.children.length + " events, oldest first";
        more.hidden = next === null;
      } catch (error) {
        more.replaceWith(el("p", { class: "error" }, error.message));
      } finally {
        more.disabled = false;
      }
    });
    target.replaceChildren(title, ...(found.deleted ? [] : [accountActions(found.accountId)]), count, list, more);
    refreshAudit();
  } catch (error) {
    target.replaceChildren(el("p", { class: "error" }, error.message));
  }
}

// What an administrator can do to a live account: end its sessions, erase it on request (with
// the reason, which the audit stream keeps). Both go through the same CSRF rules as every call.
function accountActions(accountId) {
  const path = "accounts/" + encodeURIComponent(accountId);
  const status = el("span", { class: "muted", id: "action-status" });
  const endSessions = el("button", { type: "button", id: "end-sessions" }, "End all sessions");
  endSessions.addEventListener("click", async () => {
    endSessions.disabled = true;
    try {
      const answer = await api(path + "/sessions", { method: "DELETE" });
      status.textContent = answer.ended + " sessions ended";
      refreshAudit();
    } catch (error) {
      status.textContent = error.message;
    } finally {
      endSessions.disabled = false;
    }
  });
  const reason = el("input", { type: "text", id: "erase-reason", maxlength: "500", placeholder: "reason (for disabling, enabling or erasing)" });
  const erase = el("button", { type: "button", id: "erase-account", class: "danger" }, "Erase account");
  erase.addEventListener("click", async () => {
    if (!reason.value.trim()) { status.textContent = "give the reason for erasing first"; return; }
    erase.disabled = true;
    try {
      await api(path + "/erase", { method: "POST", headers: { "Content-Type": "application/json" },
                                    body: JSON.stringify({ reason: reason.value }) });
      await openAccount(accountId);
    } catch (error) {
      status.textContent = error.message;
      erase.disabled = false;
    }
  });
  // Disable and enable take the same reason; the timeline shows account.disabled / account.enabled.
  const toggle = (label, id, action) => {
    const button = el("button", { type: "button", id }, label);
    button.addEventListener("click", async () => {
      if (!reason.value.trim()) { status.textContent = "give the reason first"; return; }
      button.disabled = true;
      try {
        await api(path + "/" + action, { method: "POST", headers: { "Content-Type": "application/json" },
                                          body: JSON.stringify({ reason: reason.value }) });
        await openAccount(accountId);
      } catch (error) {
        status.textContent = error.message;
        button.disabled = false;
      }
    });
    return button;
  };
  return el("div", { class: "account-actions" }, endSessions, reason, toggle("Disable", "disable-account", "disable"),
            toggle("Enable", "enable-account", "enable"), erase, status);
}

function timelineEntry(entry) {
  const item = el("li", { "data-type": entry.type, "data-position": entry.position, class: entry.redacted ? "redacted" : null });
  item.append(el("div", { class: "entry-head" },
    el("span", { class: "entry-type" }, entry.type),
    el("span", { class: "muted" }, time(entry.time)),
    el("span", { class: "muted" }, "by " + (entry.actor || "unknown")),
    el("span", { class: "muted" }, "#" + entry.position + " · version " + entry.version)));
  if (entry.redacted) {
    item.append(el("div", { class: "redacted-note muted" }, "redacted: the account was deleted and its personal data shredded"));
  } else if (entry.changes.length > 0) {
    const rows = entry.changes.map((change) => el("tr", { "data-key": change.key },
      el("td", {}, change.key), el("td", { class: "old" }, change.old ?? "—"), el("td", { class: "new" }, change.new ?? "—")));
    item.append(el("table", { class: "changes" },
      el("thead", {}, el("tr", {}, el("th", {}, "key"), el("th", {}, "before"), el("th", {}, "after"))), el("tbody", {}, ...rows)));
  }
  return item;
}

// The activity chart, drawn here as SVG: one line per series, one point per bucket.
const series = [["signups", "var(--signups)"], ["deletions", "var(--deletions)"], ["failedLogins", "var(--failed)"]];
async function refreshActivity() {
  const bucket = $("activity-bucket").value;
  const count = bucket === "hour" ? 24 : 30;
  try {
    drawChart(await api("activity?bucket=" + bucket + "&count=" + count));
  } catch (error) {
    $("chart").replaceChildren(el("p", { class: "error" }, error.message));
  }
}

function drawChart(activity) {
  const [width, height, left, bottom, top] = [560, 200, 32, 22, 8];
  const points = activity.series;
  const peak = Math.max(1, ...points.flatMap((point) => series.map(([name]) => point[name])));
  const x = (index) => left + (points.length === 1 ? 0 : index * (width - left - 8) / (points.length - 1));
  const y = (value) => top + (height - top - bottom) * (1 - value / peak);
  const chart = svg("svg", { viewBox: "0 0 " + width + " " + height, width: "100%", role: "img",
                             "aria-label": "activity per " + activity.bucket, "data-points": points.length });
  for (const tick of [0, peak / 2, peak]) {
    chart.append(svg("line", { x1: left, x2: width - 8, y1: y(tick), y2: y(tick), stroke: "#d8dde6" }));
    const label = svg("text", { x: left - 4, y: y(tick) + 3, "text-anchor": "end" });
    label.textContent = Number.isInteger(tick) ? tick : tick.toFixed(1);
    chart.append(label);
  }
  const every = Math.ceil(points.length / 6);
  points.forEach((point, index) => {
    if (index % every !== 0) return;
    const label = svg("text", { x: x(index), y: height - 6, "text-anchor": "middle" });
    const start = new Date(point.start);
    label.textContent = activity.bucket === "hour" ? start.getHours() + ":00" : (start.getMonth() + 1) + "/" + start.getDate();
    chart.append(label);
  });
  for (const [name, color] of series) {
    const line = points.map((point, index) => x(index) + "," + y(point[name])).join(" ");
    chart.append(svg("polyline", { points: line, fill: "none", stroke: color, "stroke-width": 2, "data-series": name }));
    points.forEach((point, index) => {
      const dot = svg("circle", { cx: x(index), cy: y(point[name]), r: 3, fill: color, class: "point",
                                  "data-series": name, "data-value": point[name], "data-start": point.start });
      const tip = svg("title", {});
      tip.textContent = name + ": " + point[name] + " from " + time(point.start);
      dot.append(tip);
      chart.append(dot);
    });
  }
  $("chart").replaceChildren(chart);
}

// The log, its projections, and the jobs that verify or rebuild them.
async function refreshLog() {
  try {
    const state = await api("log");
    $("log-records").textContent = state.records;
    $("log-head").textContent = state.headHash ?? "(empty log)";
    const verified = state.lastVerification;
    $("log-verified").textContent = verified
      ? (verified.intact ? "intact" : "DAMAGED: " + verified.problem) + ", " + verified.recordsChecked + " records, "
        + time(verified.time) + " by " + verified.admin
      : "never from the console";
    // Rows are updated in place, so a button is never replaced under the pointer.
    const body = $("projections");
    const names = new Set(state.projections.map((projection) => projection.name));
    for (const row of [...body.children]) if (!names.has(row.dataset.projection)) row.remove();
    for (const projection of state.projections) {
      let row = [...body.children].find((candidate) => candidate.dataset.projection === projection.name);
      if (!row) {
        const button = el("button", { type: "button", "data-projection": projection.name }, "Rebuild");
        button.addEventListener("click", () => startJob("projections/" + encodeURIComponent(projection.name) + "/rebuild", "rebuild-job", button));
        row = el("tr", { "data-projection": projection.name }, el("td", {}), el("td", {}), el("td", {}), el("td", {}), el("td", {}, button));
        body.append(row);
      }
      const cells = row.children;
      cells[0].replaceChildren(projection.name, projection.failure ? el("div", { class: "error" }, projection.failure) : "");
      cells[1].textContent = projection.checkpoint;
      cells[2].textContent = projection.lag;
      cells[3].textContent = projection.generation + (projection.rebuildingGeneration ? " (building " + projection.rebuildingGeneration + ")" : "");
    }
  } catch (error) {
    $("log-records").textContent = error.message;
  }
}

async function startJob(path, target, button) {
  button.disabled = true;
  const bar = el("progress", { max: 1, value: 0 });
  const text = el("div", { class: "job-state" }, "starting …");
  $(target).replaceChildren(bar, text);
  try {
    let job = await api(path, { method: "POST" });
    while (job.state === "running") {
      bar.max = Math.max(1, job.total);
      bar.value = job.done;
      text.textContent = job.kind + " running: " + job.done + (job.total ? " of " + job.total : "") + " records";
      await new Promise((resolve) => setTimeout(resolve, 250));
      job = await api("jobs/" + job.id);
    }
    bar.max = 1;
    bar.value = job.state === "finished" ? 1 : 0;
    text.textContent = job.kind + " " + job.state + ": " + job.result;
    text.dataset.state = job.state;
    if (job.state !== "finished") text.classList.add("error");
  } catch (error) {
    text.textContent = error.message;
    text.classList.add("error");
  }
  button.disabled = false;
  refreshLog();
  refreshAudit();
}

async function refreshAudit() {
  try {
    const entries = await api("audit");
    $("audit-rows").replaceChildren(...entries.slice(0, 50).map((entry) => el("tr", { "data-action": entry.action },
      el("td", {}, time(entry.time)), el("td", {}, entry.admin), el("td", {}, entry.action),
      el("td", { class: "mono" }, entry.accountId ?? entry.projection ?? entry.outcome ?? ""))));
  } catch (error) {
    $("audit-rows").replaceChildren(el("tr", {}, el("td", { class: "error", colspan: 4 }, error.message)));
  }
}

// Webhook subscriptions: their checkpoints and failures, and what an administrator does to them.
// The secret of a new subscription is shown once, here.
async function refreshWebhooks() {
  try {
    const state = await api("webhooks");
    $("webhook-runner").textContent = state.runner ? "delivered by " + state.runner.node : "";
    // Rows are made again only when something changed, so a button is not replaced under the pointer.
    const seen = JSON.stringify(state.subscriptions);
    if (seen === refreshWebhooks.last) return;
    refreshWebhooks.last = seen;
    $("webhook-rows").replaceChildren(...state.subscriptions.map(webhookRow));
  } catch (error) {
    refreshWebhooks.last = null;
    $("webhook-rows").replaceChildren(el("tr", {}, el("td", { class: "error", colspan: 7 }, error.message)));
  }
}

function webhookRow(subscription) {
  const path = "webhooks/" + encodeURIComponent(subscription.id);
  const act = (label, action, method, body) => {
    const button = el("button", { type: "button", "data-action": action }, label);
    button.addEventListener("click", async () => {
      button.disabled = true;
      try {
        await api(path + (action === "remove" ? "" : "/" + action), body === undefined ? { method }
          : { method, headers: { "Content-Type": "application/json" }, body: JSON.stringify(body()) });
        $("webhook-status").textContent = subscription.id + ": " + action + " done";
      } catch (error) {
        $("webhook-status").textContent = error.message;
      }
      refreshWebhooks();
    });
    return button;
  };
  const after = el("input", { type: "number", min: "0", value: "0", class: "replay-after", "aria-label": "replay after position" });
  const failure = subscription.failures > 0
    ? el("div", { class: "error" }, subscription.failures + " failed, at " + subscription.failingPosition + ": " + subscription.lastError)
    : "";
  return el("tr", { "data-webhook": subscription.id, "data-paused": subscription.paused },
    el("td", { class: "mono" }, subscription.url, subscription.paused ? el("span", { class: "badge" }, "paused") : ""),
    el("td", {}, subscription.eventTypes.join(" ") + (subscription.personalData ? " (with personal data)" : "")),
    el("td", {}, subscription.checkpoint), el("td", {}, subscription.behind ?? ""), el("td", {}, subscription.delivered),
    el("td", {}, subscription.failures, failure),
    el("td", {}, subscription.paused ? act("Resume", "resume", "POST") : act("Pause", "pause", "POST"),
      after, act("Replay", "replay", "POST", () => ({ after: Number(after.value) })), act("Remove", "remove", "DELETE")));
}

$("webhook-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  try {
    const added = await api("webhooks", { method: "POST", headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ url: $("webhook-url").value, eventTypes: $("webhook-types").value.split(/[\s,]+/).filter(Boolean),
                             personalData: $("webhook-personal").checked }) });
    $("webhook-status").replaceChildren("Added " + added.subscription.id + ". Its signing secret, shown only now: ",
      el("code", { id: "webhook-secret" }, added.secret));
  } catch (error) {
    $("webhook-status").textContent = error.message;
  }
  refreshWebhooks();
});

// The live tail: every new record, whoever appended it.
function followTail() {
  const source = new EventSource(location.origin + "/admin/api/tail");
  source.addEventListener("open", () => { $("tail-state").textContent = "live"; });
  source.addEventListener("error", () => { $("tail-state").textContent = "reconnecting"; });
  source.addEventListener("record", (message) => {
    const record = JSON.parse(message.data);
    const rows = $("tail-rows");
    if (rows.querySelector('tr[data-position="' + record.position + '"]')) return;
    rows.prepend(el("tr", { "data-position": record.position, "data-type": record.type, class: "fresh" },
      el("td", {}, record.position), el("td", {}, time(record.time)), el("td", {}, record.type),
      el("td", { class: "mono" }, record.stream)));
    while (rows.children.length > 200) rows.lastElementChild.remove();
    // The head hash and the projections' lag follow, at most twice a second.
    clearTimeout(followTail.pending);
    followTail.pending = setTimeout(refreshLog, 500);
  });
}

$("find-form").addEventListener("submit", (event) => {
  event.preventDefault();
  openAccount($("find-query").value.trim());
});
$("activity-bucket").addEventListener("change", refreshActivity);
$("verify-button").addEventListener("click", () => startJob("verify", "verify-job", $("verify-button")));

// Signing in and out: the form posts JSON; the session is an HttpOnly cookie this script
// never sees.
let started = false;
function startConsole(admin) {
  $("admin-name").textContent = admin;
  $("who").hidden = false;
  $("signin").hidden = true;
  $("console").hidden = false;
  if (started) return;
  started = true;
  refreshActivity();
  refreshLog();
  refreshAudit();
  refreshWebhooks();
  followTail();
  setInterval(refreshLog, 10000);
  setInterval(refreshWebhooks, 10000);
  setInterval(refreshActivity, 60000);
}
function showSignIn(message) {
  $("who").hidden = true;
  $("console").hidden = true;
  $("signin").hidden = false;
  $("signin-error").textContent = message;
}
$("signin-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  $("signin-button").disabled = true;
  try {
    const body = await api("session", { method: "POST", headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ name: $("signin-name").value, password: $("signin-password").value }) });
    $("signin-password").value = "";
    // After an ended session the page starts afresh (its tail had stopped).
    if (started) location.reload(); else startConsole(body.admin);
  } catch (error) {
    $("signin-error").textContent = error.status === 401 ? "Wrong name or password." : error.message;
  }
  $("signin-button").disabled = false;
});
$("signout-button").addEventListener("click", async () => {
  try { await api("session", { method: "DELETE" }); } catch (error) { /* the reload shows the form either way */ }
  location.reload();
});
api("whoami").then((body) => startConsole(body.admin), (error) => showSignIn(error.status === 401 ? "" : error.message));
