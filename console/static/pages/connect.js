// Connect Cursor: this server's address, the steps to point Cursor at it, where Cursor's Auto
// runs, and whether a Cursor client has reached it yet.
import { useEffect, useState } from "preact/hooks";
import { api } from "../api.js";
import { FormError, html, when } from "../ui.js";

const REFRESH_MS = 3000;

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
        <li>Start Cursor with its backend pointed here: <code>cursor --test-backend-url=${url}</code></li>
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
  </div>`;
}
