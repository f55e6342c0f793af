// Connect Cursor: this server's address, the steps to point Cursor at it, where Cursor's Auto
// runs, whether a Cursor client has reached it yet, and what Cursor sent that is not known here.
import { useEffect, useState } from "preact/hooks";
import { api } from "../api.js";
import { FormError, html, when } from "../ui.js";

const REFRESH_MS = 3000;
const COPIED_MS = 2500;

// Put ``text`` on the clipboard: the Clipboard API where the page may use it (a secure context,
// which loopback is), else the selection copied the older way.
async function copyText(text) {
  if (navigator.clipboard && window.isSecureContext) {
    await navigator.clipboard.writeText(text);
    return;
  }
  const area = document.createElement("textarea");
  area.value = text;
  area.setAttribute("readonly", "");
  area.style.position = "fixed";
  area.style.opacity = "0";
  document.body.appendChild(area);
  area.select();
  const done = document.execCommand("copy");
  area.remove();
  if (!done) throw new Error("the browser refused to copy");
}

// A button that copies ``text`` and says so beside it for a moment (or why it could not).
function CopyButton({ text, label }) {
  const [said, setSaid] = useState("");
  useEffect(() => {
    if (!said) return undefined;
    const timer = setTimeout(() => setSaid(""), COPIED_MS);
    return () => clearTimeout(timer);
  }, [said]);
  const copy = () =>
    copyText(text).then(
      () => setSaid("Copied"),
      () => setSaid("Could not copy: select the text and copy it"),
    );
  return html`<span class="copy"><button type="button" onClick=${copy}>${label}</button>
    <span role="status" class="muted">${said}</span></span>`;
}

// Where Cursor's Auto goes now (the routing settings; changed under Settings > Routing).
function AutoSentence({ auto }) {
  if (!auto) return null;
  let text;
  if (auto.goes_to === "model") {
    text = `Auto runs on ${auto.display_name}`;
    if (auto.because === "first-enabled") text += " (your first enabled model)";
    if (!auto.enabled) text += ", which is disabled: enable it, or Auto's runs fail";
  } else {
    text = auto.because === "no-model" ? "No model is enabled: Auto goes to Cursor's backend" : "Auto goes to Cursor's backend";
  }
  return html`<p data-auto>${text}. <a href="#/settings">Change where Auto goes</a>.</p>`;
}

function times(count) {
  return count === 1 ? "once" : `${count} times`;
}

// One row of protocol drift as a sentence (the rows come the latest sighting first).
function DriftSentence({ row }) {
  const who = row.client_version ? html`Cursor <code>${row.client_version}</code>` : "Cursor";
  const since = html`${times(row.count)} since ${when(row.first_seen_ms)} (last ${when(row.last_seen_ms)})`;
  if (row.kind === "path") {
    return html`<li data-drift="path">${who}: relayed <code>${row.name}</code> upstream ${since} (not implemented here).</li>`;
  }
  if (row.kind === "enum") {
    return html`<li data-drift="enum">${who} sent <code>${row.message_type}</code> field <code>${row.name}</code> value ${row.value}, which has no name here, ${since}.</li>`;
  }
  return html`<li data-drift="field">${who} sent <code>${row.message_type}</code> field ${row.name}, not known here, ${since}.</li>`;
}

function DriftPanel({ drift }) {
  if (!drift || drift.length === 0) return null;
  return html`<div class="panel" aria-label="Protocol drift">
    <h2>What Cursor sent that this server does not know</h2>
    <p class="muted">Fields and enum values this server's schema does not name (it ignores them), and
      the requests it passed to Cursor's backend because it does not serve them. New ones after a Cursor
      update show what changed.</p>
    <ul>${drift.map((row) => html`<${DriftSentence} row=${row} />`)}</ul>
  </div>`;
}

export function ConnectPage() {
  const [status, setStatus] = useState(null);
  const [error, setError] = useState(null);
  useEffect(() => {
    const load = () => api("GET", "/connection").then((s) => { setStatus(s); setError(null); }, setError);
    load();
    const timer = setInterval(load, REFRESH_MS);
    return () => clearInterval(timer);
  }, []);
  const url = status ? status.backend_url : location.origin;
  return html`<div>
    <h1>Connect Cursor</h1>
    <${FormError} error=${error} />
    <div class="panel">
      <ol>
        <li>Start Cursor with its backend pointed here: <code data-command>cursor --test-backend-url=${url}</code>
          <div class="actions" style="margin-top:6px">
            <${CopyButton} text=${`cursor --test-backend-url=${url}`} label="Copy command" />
            <${CopyButton} text=${url} label="Copy URL" />
          </div></li>
        <li>Pick one of your enabled models in Cursor's model picker (or Auto) and send a message.</li>
      </ol>
      ${status && html`<${AutoSentence} auto=${status.auto} />`}
    </div>
    <div class="panel" aria-label="Cursor client status">
      ${status === null
        ? html`<p class="loading">Checking…</p>`
        : status.last_agent_request_ms == null
          ? html`<p><span class="badge">waiting</span> No Cursor client has reached this server yet.</p>`
          : html`<p><span class="badge ok">connected</span> Last agent request ${when(status.last_agent_request_ms)}
              (${status.agent_requests} in all)${status.client_version ? html`, client version <code>${status.client_version}</code>` : null}.</p>`}
      ${status && html`<p class="muted">This server listens on <code>${status.listen_address}</code>.</p>`}
    </div>
    ${status && html`<${DriftPanel} drift=${status.drift} />`}
  </div>`;
}
