// The dashboard: for a chosen range, what GET /console/api/stats aggregates in SQL (never the
// calls themselves): calls and errors, TTFT p50/p95, tokens by kind, cache-hit rate, and the
// estimated cost per day by model. A cache-hit rate nobody reported is "n/a", never 0 %; a call
// whose cost is unknown is counted apart, never priced at 0. A user filter narrows it to one
// user's calls.
import { useEffect, useRef, useState } from "preact/hooks";
import uPlot from "uplot";
import { api } from "../api.js";
import { FormError, count, html } from "../ui.js";
import { UserFilter } from "./people.js";

const RANGES = [
  ["hour", "last hour"],
  ["day", "last day"],
  ["week", "last 7 days"],
  ["month", "last 30 days"],
];
const KINDS = [
  ["input", "input", "#2f5bd3"],
  ["output", "output", "#1e7a3a"],
  ["cache_read", "cache read", "#8a5a00"],
  ["cache_write", "cache write", "#b3261e"],
];
const PALETTE = ["#2f5bd3", "#1e7a3a", "#8a5a00", "#b3261e", "#6a3fb5", "#0b7f86", "#c2185b"];
const REFRESH_MS = 10000;

function percent(rate) {
  return rate == null ? "n/a" : `${(rate * 100).toFixed(1)} %`;
}

function usd(value) {
  return value == null ? "—" : `$${value.toFixed(value < 1 ? 4 : 2)}`;
}

// One uPlot chart, rebuilt when its data changes; `series` are {label, color, values, bars}.
function Chart({ title, xs, series, label }) {
  const box = useRef(null);
  useEffect(() => {
    if (!box.current) return undefined;
    const width = Math.max(320, box.current.clientWidth);
    const options = {
      width,
      height: 200,
      series: [{}, ...series.map((s) => ({
        label: s.label,
        stroke: s.color,
        fill: s.bars ? s.color + "99" : undefined,
        width: s.bars ? 0 : 2,
        paths: s.bars ? uPlot.paths.bars({ size: [0.8, 40] }) : undefined,
        spanGaps: !s.bars,
      }))],
      axes: [{}, { label, size: 60 }],
      scales: { x: { time: true } },
    };
    const chart = new uPlot(options, [xs.map((x) => x / 1000), ...series.map((s) => s.values)], box.current);
    return () => chart.destroy();
  }, [xs, series]);
  return html`<div class="panel" aria-label=${title}><h2>${title}</h2><div ref=${box} data-chart=${title}></div></div>`;
}

// Stacked token kinds of one model (or all, when ``model`` is empty): each series is the sum of
// its kind and the kinds drawn before it.
function stackedTokens(buckets, model) {
  let below = buckets.map(() => 0);
  return KINDS.map(([key, label, color]) => {
    const values = buckets.map((b, i) => {
      const counts = model ? [b.tokens[model] || {}] : Object.values(b.tokens);
      const sum = counts.reduce((total, t) => total + (t[key] || 0), 0);
      return below[i] + sum;
    });
    below = values;
    return { label: `${label} (stacked)`, color, values, bars: true };
  }).reverse(); // the tallest first, so each shorter bar is drawn over it
}

export function DashboardPage() {
  const [range, setRange] = useState("day");
  const [tokensOf, setTokensOf] = useState("");
  const [user, setUser] = useState("");
  const [stats, setStats] = useState(null);
  const [error, setError] = useState(null);
  useEffect(() => {
    let stop = false;
    const load = () =>
      api("GET", `/stats?${new URLSearchParams(user ? { range, user } : { range })}`).then(
        (answer) => { if (!stop) { setStats(answer); setError(null); } },
        (err) => { if (!stop) setError(err); },
      );
    load();
    const timer = setInterval(load, REFRESH_MS);
    return () => { stop = true; clearInterval(timer); };
  }, [range, user]);

  const header = html`<div class="row">
    <h1 style="margin:0;flex:1">Dashboard</h1>
    <${UserFilter} value=${user} onChange=${setUser} />
    <select aria-label="Range" value=${range} onChange=${(e) => setRange(e.target.value)}>
      ${RANGES.map(([value, label]) => html`<option value=${value}>${label}</option>`)}
    </select>
  </div>`;
  if (!stats) return html`<div>${header}<${FormError} error=${error} /><p class="loading">Loading…</p></div>`;

  const buckets = stats.buckets;
  const xs = buckets.map((b) => b.start_ms);
  const calls = buckets.reduce((n, b) => n + b.calls, 0);
  const errors = buckets.reduce((n, b) => n + b.errors, 0);
  const models = Object.keys(stats.models);
  const days = stats.cost.days;
  const costSeries = models.map((id, i) => ({
    label: stats.models[id].display_name,
    color: PALETTE[i % PALETTE.length],
    values: days.map((d) => (d.models[id] ? d.models[id].usd : null)),
    bars: true,
  }));
  return html`<div>
    ${header}
    <${FormError} error=${error} />
    <div class="cards" style="margin:12px 0">
      <div class="card"><div class="k">Calls</div><div class="v" data-card="calls">${count(calls)}</div></div>
      <div class="card"><div class="k">Error rate</div><div class="v" data-card="errors">${calls ? percent(errors / calls) : "n/a"}</div></div>
      <div class="card"><div class="k">Cache-hit rate</div><div class="v" data-card="cache">${percent(stats.cache_hit_rate.overall)}</div></div>
      <div class="card"><div class="k">Estimated cost</div><div class="v" data-card="cost">${usd(stats.cost.total_usd)}</div></div>
      <div class="card"><div class="k">Calls of unknown cost</div><div class="v" data-card="unknown-cost">${count(stats.cost.unknown_cost_calls)}</div></div>
    </div>
    <${Chart} title="Calls and errors" label="calls" xs=${xs} series=${[
      { label: "calls", color: "#2f5bd3", values: buckets.map((b) => b.calls), bars: true },
      { label: "errors", color: "#b3261e", values: buckets.map((b) => b.errors), bars: true },
    ]} />
    <${Chart} title="Time to first token" label="ms" xs=${xs} series=${[
      { label: "p50", color: "#1e7a3a", values: buckets.map((b) => b.ttft_p50_ms) },
      { label: "p95", color: "#8a5a00", values: buckets.map((b) => b.ttft_p95_ms) },
    ]} />
    <div class="row" style="margin:0">
      <select aria-label="Tokens of" value=${tokensOf} onChange=${(e) => setTokensOf(e.target.value)}>
        <option value="">tokens of every model</option>
        ${models.map((id) => html`<option value=${id}>tokens of ${stats.models[id].display_name}</option>`)}
      </select>
    </div>
    <${Chart} title="Tokens" label="tokens" xs=${xs} series=${stackedTokens(buckets, tokensOf)} />
    <${Chart} title="Estimated cost per day" label="USD" xs=${days.map((d) => d.start_ms)} series=${costSeries} />
    <div class="panel" aria-label="Per model">
      <h2>Per model</h2>
      ${models.length === 0
        ? html`<p class="muted">No call in this range.</p>`
        : html`<table><thead><tr><th>Model</th><th>Provider</th><th class="num">Cache-hit rate</th><th class="num">Cost</th><th class="num">Unknown-cost calls</th></tr></thead>
          <tbody>${models.map((id) => {
            const usdTotal = days.reduce((sum, d) => (d.models[id] && d.models[id].usd != null ? (sum ?? 0) + d.models[id].usd : sum), null);
            const unknown = days.reduce((n, d) => n + (d.models[id] ? d.models[id].unknown_cost_calls : 0), 0);
            const label = stats.models[id];
            return html`<tr data-model=${id}><td>${label.display_name}${label.deleted ? html` <span class="muted">(deleted)</span>` : null}</td>
              <td>${label.provider_name}</td><td class="num">${percent(stats.cache_hit_rate.models[id])}</td>
              <td class="num">${usd(usdTotal)}</td><td class="num">${count(unknown)}</td></tr>`;
          })}</tbody></table>`}
    </div>
  </div>`;
}
