// Checks an idempay receipt with nothing but the anchor the user pinned: step one, the Ed25519
// signature (WebCrypto); step two, the receipt's state as a leaf of the transparency log, by
// RFC 9162's inclusion proof against a tree head the anchor's keys signed. Everything the
// connector sends is checked here before anything is said about it.
"use strict";

const $ = (id) => document.getElementById(id);
const utf8 = new TextEncoder();
const PINNED = "idempay-pinned-anchor";

function fromBase64url(text) {
  if (!/^[A-Za-z0-9_-]*$/.test(text)) throw new Error("not base64url");
  let s = text.replace(/-/g, "+").replace(/_/g, "/");
  while (s.length % 4) s += "=";
  return Uint8Array.from(atob(s), (c) => c.charCodeAt(0));
}

function toBase64url(bytes) {
  return btoa(String.fromCharCode(...bytes)).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

const toHex = (bytes) => Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");

function fromHex(text) {
  if (!/^[0-9a-fA-F]{64}$/.test(text)) throw new Error("not a SHA-256 in hex");
  return Uint8Array.from(text.match(/../g), (h) => parseInt(h, 16));
}

async function sha256(...parts) {
  const all = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) { all.set(p, at); at += p.length; }
  return new Uint8Array(await crypto.subtle.digest("SHA-256", all));
}
const leafHash = (leaf) => sha256(Uint8Array.of(0), leaf);
const nodeHash = (left, right) => sha256(Uint8Array.of(1), left, right);
const same = (a, b) => a.length === b.length && a.every((x, i) => x === b[i]);

// The anchor's keys, each one's kid recomputed (RFC 7638): a mislabelled key is refused.
async function anchorKeys(text) {
  let set;
  try { set = JSON.parse(text); } catch { throw new Error("the pinned anchor is not JSON"); }
  if (!set || !Array.isArray(set.keys)) throw new Error("the pinned anchor is not a JWK Set");
  const keys = [];
  for (const k of set.keys) {
    if (k.kty !== "OKP" || k.crv !== "Ed25519" || typeof k.x !== "string") continue;
    const thumbprint = toBase64url(await sha256(utf8.encode(`{"crv":"Ed25519","kty":"OKP","x":"${k.x}"}`)));
    if (thumbprint !== k.kid) throw new Error(`the anchor's key ${k.kid} is not the key its x gives`);
    keys.push(k);
  }
  if (!keys.length) throw new Error("the pinned anchor holds no Ed25519 key");
  return keys;
}

// A compact JWS of that typ, verified under the anchor's key it names: its header and payload.
async function verifiedJws(token, keys, typ) {
  const parts = token.trim().split(".");
  if (parts.length !== 3) throw new Error("not a compact JWS (three parts separated by dots)");
  const decode = (p) => JSON.parse(new TextDecoder().decode(fromBase64url(p)));
  const header = decode(parts[0]);
  if (header.alg !== "EdDSA") throw new Error(`its algorithm is ${header.alg}, not EdDSA`);
  if (header.typ !== typ) throw new Error(`it is a "${header.typ}", not a "${typ}"`);
  const jwk = keys.find((k) => k.kid === header.kid);
  if (!jwk) throw new Error(`it is signed by key ${header.kid}, which your pinned anchor does not list`);
  const key = await crypto.subtle.importKey("jwk", { kty: "OKP", crv: "Ed25519", x: jwk.x }, { name: "Ed25519" },
                                            false, ["verify"]);
  const ok = await crypto.subtle.verify({ name: "Ed25519" }, key, fromBase64url(parts[2]),
                                        utf8.encode(parts[0] + "." + parts[1]));
  if (!ok) throw new Error(`the signature does not verify under key ${header.kid}: the text was changed`);
  return { kid: header.kid, payload: decode(parts[1]) };
}

// The log's leaf of a receipt: 0x01, the paymentId's length (2 bytes) and UTF-8, the chain's
// sequence number (8 bytes) and head hash, as docs/receipts.md defines it.
function leafOf(claims) {
  const id = utf8.encode(claims.paymentId);
  const head = fromHex(claims.auditHead);
  const leaf = new Uint8Array(1 + 2 + id.length + 8 + 32);
  const view = new DataView(leaf.buffer);
  leaf[0] = 1;
  view.setUint16(1, id.length);
  leaf.set(id, 3);
  view.setBigUint64(3 + id.length, BigInt(claims.auditSeq));
  leaf.set(head, 3 + id.length + 8);
  return leaf;
}

// RFC 9162 section 2.1.3.2.
async function verifyInclusion(index, size, leaf, proof, root) {
  let fn = BigInt(index), sn = BigInt(size) - 1n, r = leaf;
  if (fn > sn) return false;
  for (const p of proof) {
    if (sn === 0n) return false;
    if ((fn & 1n) === 1n || fn === sn) {
      r = await nodeHash(p, r);
      if ((fn & 1n) === 0n) {
        while (fn !== 0n && (fn & 1n) === 0n) { fn >>= 1n; sn >>= 1n; }
      }
    } else {
      r = await nodeHash(r, p);
    }
    fn >>= 1n; sn >>= 1n;
  }
  return sn === 0n && same(r, root);
}

function show(step, passed, html) {
  const box = $(step);
  box.classList.remove("pass", "fail");
  box.classList.add(passed ? "pass" : "fail");
  box.querySelector(".result").innerHTML = html;
}

const escape = (s) => String(s).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

function claimsTable(c) {
  const rows = [["payment", c.paymentId], ["merchant", c.merchant], ["state", c.state],
                ["authorized", `${c.authorized} ${c.currency}`], ["settled", c.settled], ["refunded", c.refunded],
                ["audit chain", `entry ${c.auditSeq}, hash ${c.auditHead}`],
                ["signed at", new Date(c.iat * 1000).toISOString()]];
  return "<table>" + rows.map(([k, v]) => `<tr><td>${k}</td><td class="mono">${escape(v)}</td></tr>`).join("") + "</table>";
}

async function fetchJson(url) {
  const answer = await fetch(url, { cache: "no-store" });
  return { status: answer.status, body: await answer.json().catch(() => null) };
}

async function stepTwo(claims, keys) {
  const base = $("server").value.trim().replace(/\/+$/, "");
  if (!base) throw new Error("name the connector to ask for the proof");
  const leaf = await leafHash(leafOf(claims));
  const proof = await fetchJson(`${base}/log/v1/proof/inclusion?leafHash=${toHex(leaf)}`);
  if (proof.status === 404) {
    throw new Error("the log holds no leaf for this receipt's state: the payment was cut from the log, or " +
                    "(if it changed seconds ago) is not in it yet — try again in a moment");
  }
  if (proof.status !== 200) throw new Error(`the connector answered ${proof.status} for the proof`);
  const { leafIndex, treeSize } = proof.body;
  const head = await fetchJson(`${base}/log/v1/tree-head?size=${treeSize}`);
  if (head.status !== 200) throw new Error(`the connector answered ${head.status} for the tree head`);
  const signers = new Set();
  let root = null;
  for (const token of head.body.signatures || []) {
    let signed;
    try { signed = await verifiedJws(token, keys, "idempay-tree-head+jws"); } catch { continue; }
    const p = signed.payload;
    if (p.log !== "idempay" || p.size !== treeSize) continue;
    if (root && p.root !== root) throw new Error("the tree head's signatures name different roots");
    root = p.root;
    signers.add(signed.kid);
  }
  const required = Math.max(1, parseInt($("quorum").value, 10) || 1);
  if (signers.size < required) {
    throw new Error(`the tree head of size ${treeSize} is signed by ${signers.size} key(s) of your anchor; ` +
                    `you require ${required}`);
  }
  const path = proof.body.proof.map(fromHex);
  if (!(await verifyInclusion(leafIndex, treeSize, leaf, path, fromHex(root)))) {
    throw new Error("the inclusion proof does not lead to the signed root: this state is not in that log");
  }
  return `Passed. This receipt's state is leaf ${leafIndex} of the transparency log of ${treeSize} leaves ` +
         `whose root <span class="mono">${escape(root)}</span> was signed by ${signers.size} key(s) of your anchor ` +
         `(${[...signers].map(escape).join(", ")}). Anyone holding a later tree head of that log can check that ` +
         `this leaf is still there.`;
}

async function check() {
  show("step1", false, "Checking…");
  show("step2", false, "Waiting for step one.");
  let keys, receipt;
  try {
    keys = await anchorKeys($("anchor").value);
    receipt = await verifiedJws($("receipt").value, keys, "idempay-receipt+jws");
  } catch (e) {
    show("step1", false, "Failed: " + escape(e.message));
    show("step2", false, "Not checked: step one failed, so nothing this receipt says can be relied on.");
    return;
  }
  show("step1", true, `Passed. Key ${escape(receipt.kid)} of your pinned anchor signed exactly this:` +
                      claimsTable(receipt.payload));
  show("step2", false, "Checking…");
  try {
    show("step2", true, await stepTwo(receipt.payload, keys));
  } catch (e) {
    show("step2", false, "Failed: " + escape(e.message));
  }
}

async function pinFromServer() {
  const base = $("server").value.trim().replace(/\/+$/, "");
  try {
    const answer = await fetchJson(`${base}/.well-known/jwks.json`);
    if (answer.status !== 200) throw new Error(`the connector answered ${answer.status}`);
    const text = JSON.stringify(answer.body);
    await anchorKeys(text);
    $("anchor").value = text;
    localStorage.setItem(PINNED, text);
    $("anchor-note").textContent = `pinned ${new Date().toISOString()}: keep a copy; later checks use it`;
  } catch (e) {
    $("anchor-note").textContent = "not pinned: " + e.message;
  }
}

$("verify").addEventListener("click", check);
$("fetch-anchor").addEventListener("click", pinFromServer);
$("anchor").addEventListener("change", () => localStorage.setItem(PINNED, $("anchor").value));
if (location.protocol.startsWith("http")) $("server").value = location.origin;
try { $("anchor").value = localStorage.getItem(PINNED) || ""; } catch { /* storage off: paste it */ }
