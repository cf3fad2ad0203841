// The operator console: plain DOM and fetch against /admin/v1/. The token lives in this tab's
// sessionStorage only. Every action form gets a fresh Idempotency-Key when it opens, so a
// double click or a resubmission of the same form is the same request to the connector.
"use strict";

const $ = (id) => document.getElementById(id);
let token = sessionStorage.getItem("idempay-operator-token") || "";
let me = null;
let current = null;       // the payment shown
let nextCursor = null;
let action = null;        // the open action form: { route, key }

function newKey() {
  if (crypto.randomUUID) return crypto.randomUUID();
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

async function api(method, path, body, key) {
  const headers = { Authorization: "Bearer " + token };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  if (key) headers["Idempotency-Key"] = key;
  const response = await fetch("/admin/v1/" + path, {
    method, headers, body: body === undefined ? undefined : JSON.stringify(body),
  });
  let data = null;
  try { data = await response.json(); } catch (e) { data = null; }
  return { status: response.status, data, replayed: response.headers.get("Idempotent-Replayed") === "true" };
}

function text(tag, value, cls) {
  const el = document.createElement(tag);
  el.textContent = value === undefined || value === null ? "" : String(value);
  if (cls) el.className = cls;
  return el;
}

function row(cells) {
  const tr = document.createElement("tr");
  for (const c of cells) tr.appendChild(c instanceof Node ? wrap(c) : text("td", c));
  return tr;
}

function wrap(node) {
  const td = document.createElement("td");
  td.appendChild(node);
  return td;
}

function when(ms) { return ms ? new Date(ms).toLocaleString() : ""; }

async function signIn(event) {
  event.preventDefault();
  token = $("token").value.trim();
  const r = await api("GET", "me");
  if (r.status !== 200) {
    $("sign-in-error").textContent = r.status === 429 ? "Too many attempts; wait and retry." : "That token is not accepted.";
    token = "";
    return;
  }
  sessionStorage.setItem("idempay-operator-token", token);
  enter(r.data);
}

function enter(who) {
  me = who;
  $("sign-in").hidden = true;
  $("console").hidden = false;
  $("who").hidden = false;
  $("who-name").textContent = who.name;
  $("who-role").textContent = who.role + " · " + who.merchants.join(", ");
  for (const b of document.querySelectorAll("#actions button")) b.hidden = who.role !== "act";
  search();
}

function signOut() {
  sessionStorage.removeItem("idempay-operator-token");
  location.reload();
}

async function search(event, more) {
  if (event) event.preventDefault();
  const id = $("search-id").value.trim();
  if (id) return show(id);
  const q = new URLSearchParams({ limit: "50" });
  if ($("search-merchant").value.trim()) q.set("merchant", $("search-merchant").value.trim());
  if ($("search-state").value) q.set("state", $("search-state").value);
  if (more && nextCursor) q.set("cursor", nextCursor);
  const r = await api("GET", "payments?" + q.toString());
  const body = document.querySelector("#results tbody");
  if (!more) body.textContent = "";
  if (r.status !== 200) {
    body.appendChild(row([(r.data && r.data.detail) || "search failed (" + r.status + ")"]));
    return;
  }
  for (const p of r.data.payments) {
    const tr = row([p.paymentId, p.merchant, text("span", p.state, "state"), p.paymentMethod,
                    p.authorized + " " + p.currency, p.settled, p.refunded, when(p.updatedAt)]);
    tr.className = "pick";
    tr.addEventListener("click", () => show(p.paymentId));
    body.appendChild(tr);
  }
  nextCursor = r.data.nextCursor;
  $("more").hidden = !nextCursor;
}

// A payment id as one path segment: percent-encoded (the API decodes each segment once).
// "." and ".." cannot be a segment at all (the URL parser resolves them away): no payment
// has such an id, and none is asked for.
function paymentPath(id) {
  return id === "." || id === ".." ? null : "payments/" + encodeURIComponent(id);
}

async function show(id) {
  const path = paymentPath(id);
  const r = path ? await api("GET", path) : { status: 404, data: { detail: "not a payment id" } };
  $("detail").hidden = false;
  $("detail-id").textContent = id;
  const facts = $("facts");
  facts.textContent = "";
  for (const table of ["#operations tbody", "#deliveries tbody"]) document.querySelector(table).textContent = "";
  $("timeline").textContent = "";
  $("action-form").hidden = true;
  action = null;
  if (r.status !== 200 || !r.data || !r.data.card) {
    current = null;  // nothing of the previous payment stays on the page, nor can be acted on
    facts.appendChild(text("dt", "error"));
    facts.appendChild(text("dd", (r.data && r.data.detail) || r.status));
    return;
  }
  const p = (current = r.data);
  for (const [k, v] of [["Merchant", p.merchant], ["State", p.state], ["Method", p.paymentMethod],
                        ["Authorized", p.authorized + " " + p.currency], ["Settled", p.settled], ["Refunded", p.refunded],
                        ["Card", p.card.bin ? p.card.bin + "…" + p.card.last4 : ""], ["TID", p.tid], ["NSU", p.nsu],
                        ["Callback URL", p.callbackUrl]]) {
    facts.appendChild(text("dt", k));
    facts.appendChild(text("dd", v));
  }
  const ops = document.querySelector("#operations tbody");
  for (const o of p.operations) ops.appendChild(row([o.requestId, o.kind, o.phase, o.amount, o.httpStatus]));
  const dl = document.querySelector("#deliveries tbody");
  for (const d of p.deliveries) {
    let replay = text("span", "");
    if (d.dead && me.role === "act") {
      replay = text("button", "Replay");
      replay.type = "button";
      const key = newKey();
      replay.addEventListener("click", () => act("POST", "deliveries/" + encodeURIComponent(d.deliveryId) + "/replay", {}, key));
    }
    dl.appendChild(row([d.deliveryId, d.dead ? "dead: " + d.deadReason : "pending", d.attempts, d.lastStatus || "",
                        d.lastError, replay]));
  }
  const timeline = $("timeline");
  for (const e of p.audit) {
    const li = document.createElement("li");
    li.appendChild(text("div", when(e.time) + (e.actor ? " · " + e.actor : ""), "when"));
    li.appendChild(text("span", e.kind.replace(/_/g, " "), "kind"));
    if (e.before !== e.after && e.after) li.appendChild(text("span", "  " + (e.before || "—") + " → " + e.after, "change"));
    if (e.detail) li.appendChild(text("div", e.detail));
    timeline.appendChild(li);
  }
}

function openAction(route) {
  if (!current) return;
  if (route === "reconcile") return act("POST", paymentPath(current.paymentId) + "/reconcile", {}, newKey());
  action = { route, key: newKey() };
  $("action-title").textContent = { refunds: "Refund", settlements: "Settle", cancellations: "Cancel" }[route] + " " + current.paymentId;
  $("action-value-label").hidden = route === "cancellations";
  $("action-value").value = route === "cancellations" ? "" : (route === "refunds" ? current.settled : current.authorized);
  $("action-reason").value = "";
  $("action-key").textContent = action.key;
  $("action-result").textContent = "";
  $("action-form").hidden = false;
}

async function submitAction(event) {
  event.preventDefault();
  if (!action) return;
  const body = { reason: $("action-reason").value };
  if (action.route !== "cancellations") body.value = Number($("action-value").value);
  await act("POST", paymentPath(current.paymentId) + "/" + action.route, body, action.key);
}

async function act(method, path, body, key) {
  const out = $("action-result");
  const r = await api(method, path, body, key);
  const detail = r.data ? (r.data.message || r.data.detail || r.data.status || r.data.code || "") : "";
  const replayed = r.replayed ? " (the same request again: its first answer)" : "";
  out.className = "result " + (r.status === 200 ? "ok" : "bad");
  out.textContent = r.status === 409 ? "Already in progress — the first click is being processed."
                                     : r.status + " " + detail + replayed;
  out.dataset.status = String(r.status);
  if (current) await show(current.paymentId);
}

document.addEventListener("DOMContentLoaded", async () => {
  $("sign-in-form").addEventListener("submit", signIn);
  $("sign-out").addEventListener("click", signOut);
  $("search-form").addEventListener("submit", (e) => search(e, false));
  $("more").addEventListener("click", () => search(null, true));
  for (const b of document.querySelectorAll("#actions button")) b.addEventListener("click", () => openAction(b.dataset.action));
  $("action-form").addEventListener("submit", submitAction);
  $("action-close").addEventListener("click", () => { $("action-form").hidden = true; action = null; });
  if (token) {
    const r = await api("GET", "me");
    if (r.status === 200) return enter(r.data);
    token = "";
  }
});
