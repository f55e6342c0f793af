// Conversations, and for each run a timeline with one lane per kind: the run itself (its start,
// its end and EndStream code), each provider call (TTFB, TTFT, end), each tool exec (tool, wire
// ids, outcome), and each checkpoint from its submission to its publish (the KV SET → ACK wait).
// A turn that stalled shows where: the lane whose bar is long, or the one still open.
import { useEffect, useState } from "preact/hooks";
import { api } from "../api.js";
import { FormError, count, html, ms, when } from "../ui.js";

export function ConversationsPage() {
  const [pages, setPages] = useState([]);
  const [list, setList] = useState(null);
  const [error, setError] = useState(null);
  const before = pages[pages.length - 1] ?? null;
  useEffect(() => {
    const query = before ? `?limit=50&before=${encodeURIComponent(before)}` : "?limit=50";
    api("GET", `/conversations${query}`).then(setList, setError);
  }, [before]);
  return html`<div>
    <h1>Conversations</h1>
    <${FormError} error=${error} />
    <div class="row">
      ${pages.length > 0 && html`<button onClick=${() => setPages(pages.slice(0, -1))}>Newer</button>`}
      ${list && list.next_before && html`<button onClick=${() => setPages([...pages, list.next_before])}>Older</button>`}
    </div>
    ${list === null
      ? html`<p class="loading">Loading…</p>`
      : list.conversations.length === 0
        ? html`<p class="muted">No conversation yet: send a message in Cursor.</p>`
        : html`<div class="table-wrap"><table>
          <thead><tr><th>Conversation</th><th>Last activity</th><th class="num">Runs</th>
            <th class="num">Input tokens</th><th class="num">Output tokens</th></tr></thead>
          <tbody>${list.conversations.map(
            (c) => html`<tr data-conversation=${c.conversation_id}>
              <td><a href=${`#/conversations/${encodeURIComponent(c.conversation_id)}`}>${c.title || html`<span class="muted">${c.conversation_id}</span>`}</a></td>
              <td>${when(c.last_activity_ms)}</td><td class="num">${c.run_count}</td>
              <td class="num">${count(c.input_tokens)}</td><td class="num">${count(c.output_tokens)}</td></tr>`,
          )}</tbody></table></div>`}
  </div>`;
}

// Every span of a timeline as [lane, label, start, end, kind], end null while still open.
function spansOf(lanes) {
  const spans = [];
  for (const r of lanes.run) {
    spans.push(["run", `run ${r.code ?? "running"}`, r.started_at_ms, r.ended_at_ms, r.code === "ok" ? "ok" : r.code ? "bad" : "open"]);
  }
  for (const p of lanes.provider) {
    // A fallback's first attempt is where the call switched models: the failed attempts before
    // it show their errors.
    const place = p.chain_position > 0 ? `fallback ${p.chain_position} · attempt ${p.attempt}` : p.attempt > 1 ? `attempt ${p.attempt}` : "";
    const switched = p.chain_position > 0 && p.attempt === 1 ? "fell back to " : "";
    const failed = p.status === "failed" && p.error_message ? ` — ${p.error_message}` : "";
    const label = `${switched}${p.display_name}${place ? ` (${place})` : ""}: TTFB ${ms(p.ttfb_ms)}, TTFT ${ms(p.ttft_ms)}, ${p.status}${failed}`;
    spans.push(["provider", label, p.started_at_ms, p.ended_at_ms, p.status === "completed" ? "ok" : p.status === "running" ? "open" : "bad"]);
  }
  for (const t of lanes.tools) {
    const label = `${t.tool ?? "tool"} (exec ${t.wire_ids.join(", ") || "—"}): ${t.outcome ?? "pending"}`;
    spans.push(["tools", label, t.started_at_ms, t.ended_at_ms, t.outcome === "success" ? "ok" : t.outcome ? "bad" : "open"]);
  }
  for (const c of lanes.checkpoints) {
    const label = `checkpoint ${c.kind ?? ""} ${c.job_id ?? ""}: ${c.outcome ?? "waiting for ACKs"}`;
    spans.push(["checkpoints", label, c.submitted_at_ms, c.published_at_ms ?? c.ended_at_ms, c.outcome === "published" ? "ok" : c.outcome ? "bad" : "open"]);
  }
  return spans;
}

const LANES = ["run", "provider", "tools", "checkpoints"];
const COLORS = { ok: "#2f5bd3", bad: "#b3261e", open: "#8a5a00" };

function Timeline({ runId }) {
  const [timeline, setTimeline] = useState(null);
  const [error, setError] = useState(null);
  useEffect(() => {
    let current = true; // an answer for a run no longer chosen is dropped
    setTimeline(null);
    setError(null);
    api("GET", `/runs/${encodeURIComponent(runId)}/timeline`).then(
      (t) => current && setTimeline(t),
      (e) => current && setError(e),
    );
    return () => { current = false; };
  }, [runId]);
  if (error) return html`<${FormError} error=${error} />`;
  if (!timeline) return html`<p class="loading">Loading the timeline…</p>`;
  const spans = spansOf(timeline.lanes);
  const now = Date.now();
  const start = Math.min(...spans.map((s) => s[2]));
  const end = Math.max(...spans.map((s) => s[3] ?? now), start + 1);
  const x = (t) => `${((t - start) / (end - start)) * 100}%`;
  const width = (a, b) => `${Math.max(0.4, (((b ?? now) - a) / (end - start)) * 100)}%`;
  return html`<div class="panel" aria-label="Timeline">
    <h2>Run ${timeline.run_id} <span class="muted">${ms(end - start)} in all</span></h2>
    ${LANES.map((lane) => html`<div class="row" data-lane=${lane} style="align-items:center;flex-wrap:nowrap">
      <div style="width:90px;flex:none" class="muted">${lane}</div>
      <div style="position:relative;height:22px;flex:1;background:#f0f1f4;border-radius:4px">
        ${spans.filter((s) => s[0] === lane).map(
          ([, label, a, b, kind]) => html`<div data-span=${kind} title=${`${label} · +${ms(a - start)} → ${b == null ? "still open" : `+${ms(b - start)}`}`}
            style=${`position:absolute;top:3px;height:16px;left:${x(a)};width:${width(a, b)};background:${COLORS[kind]};border-radius:3px;opacity:.85`}></div>`,
        )}
      </div>
    </div>`)}
    <table style="margin-top:10px"><thead><tr><th>Lane</th><th>What</th><th class="num">Start</th><th class="num">End</th><th class="num">Took</th></tr></thead>
      <tbody>${spans
        .slice()
        .sort((p, q) => p[2] - q[2])
        .map(([lane, label, a, b]) => html`<tr data-row=${lane}><td>${lane}</td><td style="white-space:normal">${label}</td>
          <td class="num">+${ms(a - start)}</td><td class="num">${b == null ? "open" : `+${ms(b - start)}`}</td>
          <td class="num">${b == null ? "—" : ms(b - a)}</td></tr>`)}</tbody></table>
  </div>`;
}

export function ConversationPage({ id }) {
  const [detail, setDetail] = useState(null);
  const [error, setError] = useState(null);
  const [chosen, setChosen] = useState(null);
  useEffect(() => {
    let current = true;
    setDetail(null);
    setError(null);
    api("GET", `/conversations/${encodeURIComponent(id)}`).then(
      (d) => {
        if (!current) return;
        setDetail(d);
        setChosen(d.runs.length ? d.runs[0].run_id : null);
      },
      (e) => current && setError(e),
    );
    return () => { current = false; };
  }, [id]);
  if (error) return html`<div><h1>Conversation</h1><${FormError} error=${error} /></div>`;
  if (!detail) return html`<p class="loading">Loading…</p>`;
  return html`<div>
    <p><a href="#/conversations">← Conversations</a></p>
    <h1>${detail.title || detail.conversation_id}</h1>
    <div class="table-wrap"><table>
      <thead><tr><th>Run</th><th>Started</th><th>Status</th><th>End</th><th>Model</th><th></th></tr></thead>
      <tbody>${detail.runs.map(
        (r) => html`<tr data-run=${r.run_id} class=${r.run_id === chosen ? "active" : ""}>
          <td><code>${r.run_id}</code>${r.resumed ? html` <span class="badge">resumed</span>` : null}</td>
          <td>${when(r.started_at_ms)}</td><td><span class=${`badge ${r.status}`}>${r.status}</span></td>
          <td>${r.code ?? "—"}${r.message ? html` <span class="muted">${r.message}</span>` : null}</td>
          <td>${r.model ?? "—"}${r.asked != null && r.asked.split("/")[0] !== r.model
            ? html` <span class="muted" data-asked>asked for ${r.asked || "Auto (no id)"}</span>` : null}</td>
          <td><button onClick=${() => setChosen(r.run_id)} disabled=${r.run_id === chosen}>Timeline</button></td></tr>`,
      )}</tbody></table></div>
    ${chosen && html`<${Timeline} runId=${chosen} />`}
  </div>`;
}
