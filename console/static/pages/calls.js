// Calls: every provider call, newest first, refreshed every 2 s while the page is open (never
// with a request still out), and one call's detail: timings, usage, error, the redacted request and, in
// verbose mode, the answer put together from the response chunks and the raw chunks with their
// time offsets.
import { useEffect, useRef, useState } from "preact/hooks";
import { api } from "../api.js";
import { useCatalog } from "../catalog.js";
import { FormError, count, html, ms, when } from "../ui.js";
import { UserFilter } from "./people.js";

const REFRESH_MS = 2000;

// A call's estimated cost; "unknown" for a billed call whose model has no price for what it used
// (or reported no usage), never $0.
function cost(call) {
  if (call.cost_usd != null) return `$${call.cost_usd.toFixed(call.cost_usd < 1 ? 6 : 2)}`;
  const billed = call.http_status != null && call.http_status >= 200 && call.http_status < 300;
  return billed ? "unknown" : "—";
}

// An attempt's place in its call: "fallback 1 · attempt 2" (the model asked for is position 0),
// shown on every attempt of a call that made more than one (``attempts``: its records); "" for
// a call answered at its first attempt, or a record older than the columns.
function place(call) {
  if (call.chain_position == null) return "";
  if (call.attempts <= 1 && call.attempt <= 1 && call.chain_position === 0) return "";
  return [call.chain_position > 0 ? `fallback ${call.chain_position}` : "", `attempt ${call.attempt}`]
    .filter(Boolean).join(" · ");
}

// A console model test or check (made outside any run), marked apart from the editor's calls.
function TestMark({ call }) {
  return call.test ? html` <span class="badge" data-test title="A model test from the console">test</span>` : null;
}

// What the run asked for beside the model that answered: Cursor's id (``default`` is Auto),
// "this model" when it named the model itself, "—" outside a run (or before it was recorded).
export function askedFor(call) {
  const asked = call.asked_model_id;
  if (asked == null) return "—";
  const head = asked.split("/")[0];
  if (head === call.public_id) return "this model";
  if (["", "default", "auto"].includes(head.toLowerCase())) return `Auto (${asked || "no id"})`;
  return asked;
}

function Status({ value }) {
  return html`<span class=${`badge ${value}`}>${value}</span>`;
}

const RANGES = [
  ["", "any time"],
  ["3600000", "last hour"],
  ["86400000", "last day"],
  ["604800000", "last 7 days"],
  ["2592000000", "last 30 days"],
];
const STATUSES = ["", "completed", "failed", "cancelled", "running"];

function filterQuery(filters) {
  const query = new URLSearchParams();
  for (const name of ["provider_id", "model", "status", "conversation_id", "user"]) {
    if (filters[name]) query.set(name, filters[name]);
  }
  if (filters.range) query.set("since", String(Date.now() - Number(filters.range)));
  return query;
}

function Filters({ filters, onChange }) {
  // The filters' choices; without them the listing still works, so a failure only hides them.
  const { providers, models } = useCatalog(() => null);
  const set = (name) => (e) => onChange({ ...filters, [name]: e.target.value });
  // Typed freely, applied on Enter or when the field is left.
  const [conversation, setConversation] = useState(filters.conversation_id);
  const applyConversation = () =>
    conversation !== filters.conversation_id && onChange({ ...filters, conversation_id: conversation });
  return html`<div class="row" aria-label="Filters">
    <select aria-label="Provider" value=${filters.provider_id} onChange=${set("provider_id")}>
      <option value="">every provider</option>
      ${(providers || []).map((p) => html`<option value=${String(p.id)}>${p.name}</option>`)}
    </select>
    <select aria-label="Model" value=${filters.model} onChange=${set("model")}>
      <option value="">every model</option>
      ${models.map((m) => html`<option value=${m.public_id}>${m.display_name}</option>`)}
    </select>
    <select aria-label="Status" value=${filters.status} onChange=${set("status")}>
      ${STATUSES.map((s) => html`<option value=${s}>${s || "every status"}</option>`)}
    </select>
    <input aria-label="Conversation" placeholder="conversation id (Enter)" value=${conversation}
      onInput=${(e) => setConversation(e.target.value)}
      onKeyDown=${(e) => e.key === "Enter" && applyConversation()} onBlur=${applyConversation} />
    <${UserFilter} value=${filters.user} onChange=${(user) => onChange({ ...filters, user })} />
    <select aria-label="Time range" value=${filters.range} onChange=${set("range")}>
      ${RANGES.map(([value, label]) => html`<option value=${value}>${label}</option>`)}
    </select>
  </div>`;
}

// ``user``: the user filter it opens with (the People page links here with one).
export function CallsPage({ user = "" }) {
  const [filters, setFilters] = useState({ provider_id: "", model: "", status: "", conversation_id: "", user, range: "" });
  const [calls, setCalls] = useState(null);
  const [pages, setPages] = useState([]); // the `before` cursor of each page shown after the first
  const [next, setNext] = useState(null);
  const [error, setError] = useState(null);
  const [live, setLive] = useState(true);
  const before = pages[pages.length - 1] ?? null;
  const timer = useRef(null);

  const latest = useRef(0); // only the newest request's answer is shown
  const inFlight = useRef(false);

  // ``tick``: a refresh, skipped while a request is still out (so a slow server is never
  // asked faster than it answers); a change of filters or page always asks at once.
  async function load(tick = false) {
    if (tick && inFlight.current) return;
    inFlight.current = true;
    const mine = ++latest.current;
    try {
      const query = filterQuery(filters);
      query.set("limit", "50");
      if (before) query.set("before", String(before));
      const answer = await api("GET", `/calls?${query}`);
      if (mine !== latest.current) return; // filters or page changed meanwhile
      setCalls(answer.calls);
      setNext(answer.next_before);
      setError(null);
    } catch (err) {
      if (mine === latest.current) setError(err);
    } finally {
      if (mine === latest.current) inFlight.current = false;
    }
  }

  useEffect(() => {
    load();
    if (!live || before) return undefined;
    timer.current = setInterval(() => load(true), REFRESH_MS);
    return () => clearInterval(timer.current);
  }, [before, live, filters]);

  return html`<div>
    <h1>Calls</h1>
    <${Filters} filters=${filters} onChange=${(next) => { setPages([]); setFilters(next); }} />
    <div class="row" style="margin-bottom:10px">
      <label><input type="checkbox" checked=${live} onChange=${(e) => setLive(e.target.checked)} /> Live</label>
      ${pages.length > 0 && html`<button onClick=${() => setPages(pages.slice(0, -1))}>Newer</button>`}
      ${next && html`<button onClick=${() => setPages([...pages, next])}>Older</button>`}
    </div>
    <${FormError} error=${error} />
    ${calls === null
      ? html`<p class="loading">Loading…</p>`
      : calls.length === 0
        ? html`<p class="muted">No provider call yet. Run a turn in Cursor, or test a model on the Models page.</p>`
        : html`<div class="table-wrap"><table>
          <thead><tr><th>Time</th><th>Model</th><th>Status</th><th class="num">Est. cost</th><th>User</th><th>Provider</th><th>Key</th><th>Asked for</th>
            <th class="num">TTFB</th><th class="num">TTFT</th>
            <th class="num">Duration</th><th class="num">Input</th><th class="num">Output</th>
            <th class="num">Cache read</th><th class="num">Cache write</th><th class="num">Reasoning</th></tr></thead>
          <tbody>${calls.map(
            (c) => html`<tr data-call=${c.id}>
              <td><a href=${`#/calls/${c.id}`}>${when(c.started_at_ms)}</a></td>
              <td data-place=${place(c)}>${c.display_name}${place(c) && html` <span class="muted">${place(c)}</span>`}<${TestMark} call=${c} /></td>
              <td><${Status} value=${c.status} /></td>
              <td class="num" data-cost>${cost(c)}</td>
              <td data-user>${c.user_id ?? "—"}</td>
              <td>${c.provider_name}</td><td data-key-label>${c.key_label ?? "—"}</td><td data-asked>${askedFor(c)}</td>
              <td class="num">${ms(c.ttfb_ms)}</td><td class="num">${ms(c.ttft_ms)}</td>
              <td class="num">${ms(c.duration_ms)}</td>
              <td class="num">${count(c.input_tokens)}</td><td class="num">${count(c.output_tokens)}</td>
              <td class="num">${count(c.cache_read_tokens)}</td><td class="num">${count(c.cache_write_tokens)}</td>
              <td class="num">${count(c.reasoning_tokens)}</td></tr>`,
          )}</tbody></table></div>`}
  </div>`;
}

function pretty(text) {
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return text;
  }
}

// The answer the response chunks hold, put together by the server with the call's own decoder.
function Answer({ answer }) {
  return html`<section aria-label="Answer" data-answer>
    <h2>Answer${answer.complete ? "" : html` <span class="badge running">incomplete</span>`}</h2>
    ${answer.problem && html`<p class="muted">${answer.problem}</p>`}
    ${answer.thinking && html`<h3>Thinking</h3><pre class="wrap" data-thinking>${answer.thinking}</pre>`}
    ${answer.text ? html`<pre class="wrap" data-text>${answer.text}</pre>` : html`<p class="muted">No text.</p>`}
    ${answer.tool_calls.map(
      (t) => html`<h3>Tool call <code>${t.name}</code> <span class="muted">${t.call_id}</span></h3>
        <pre class="wrap" data-tool-call=${t.name}>${pretty(t.arguments)}</pre>`,
    )}
    ${answer.finish && html`<p class="muted">Finished: ${answer.finish}</p>`}
  </section>`;
}

export function CallDetailPage({ id }) {
  const [detail, setDetail] = useState(null);
  const [error, setError] = useState(null);
  useEffect(() => {
    let current = true;
    setDetail(null);
    setError(null);
    api("GET", `/calls/${encodeURIComponent(id)}`).then(
      (d) => current && setDetail(d),
      (e) => current && setError(e),
    );
    return () => { current = false; };
  }, [id]);
  if (error) return html`<div><h1>Call ${id}</h1><${FormError} error=${error} /></div>`;
  if (!detail) return html`<p class="loading">Loading…</p>`;
  const c = detail.call;
  const cards = [
    ["User", c.user_id ?? "—"],
    ["Asked for", askedFor(c)],
    ["Status", html`<${Status} value=${c.status} />`],
    ["Est. cost", html`<span data-cost>${cost(c)}</span>`],
    ["Place", c.chain_position == null ? "—" : c.chain_position === 0 ? `model asked for · attempt ${c.attempt}` : `fallback ${c.chain_position} · attempt ${c.attempt}`],
    ["TTFB", ms(c.ttfb_ms)],
    ["TTFT", ms(c.ttft_ms)],
    ["Duration", ms(c.duration_ms)],
    ["HTTP", c.http_status ?? "—"],
    ["Key", c.key_label ?? "—"],
    ["Finish", c.finish_reason ?? "—"],
    ["Input", count(c.input_tokens)],
    ["Output", count(c.output_tokens)],
    ["Cache read", count(c.cache_read_tokens)],
    ["Cache write", count(c.cache_write_tokens)],
    ["Reasoning", count(c.reasoning_tokens)],
  ];
  return html`<div>
    <p><a href="#/calls">← Calls</a></p>
    <h1>${c.display_name} <span class="muted">via ${c.provider_name}</span><${TestMark} call=${c} /></h1>
    <p class="muted">${when(c.started_at_ms)} · call ${c.id} · ${c.model_call_id}${c.run_id ? ` · run ${c.run_id}` : ""}</p>
    <div class="cards">${cards.map(([k, v]) => html`<div class="card"><div class="k">${k}</div><div class="v">${v}</div></div>`)}</div>
    ${c.error_message && html`<h2>Error</h2><div class="form-error" role="alert">${c.error_message}</div>`}
    <h2>Request</h2>
    ${detail.request
      ? html`<pre class="wrap">${pretty(detail.request.body)}</pre>`
      : html`<p class="muted">Not recorded: turn on verbose recording in Settings to keep requests and responses.</p>`}
    ${detail.answer && html`<${Answer} answer=${detail.answer} />`}
    ${detail.chunks.length > 0 &&
    html`<h2>Response chunks</h2><pre class="wrap" data-chunks>${detail.chunks.map((k) => `+${Math.round(k.offset_ms)} ms  ${k.text}`).join("")}</pre>`}
  </div>`;
}
