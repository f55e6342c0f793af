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

const MINUTE_S = 60;
const HOUR_S = 60 * MINUTE_S;
const DAY_S = 24 * HOUR_S;
const MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
const two = (n) => String(n).padStart(2, "0");

// A time axis that fits its range: the tick steps it may use (seconds), each tick's label, and
// whether it counts UTC days. The days (7 and 30 days, the cost per day) are UTC days, as the
// server buckets them, and the chart says so; the times of day (last hour, last day) are the
// viewer's own clock, each tick found on the local calendar, so a DST change moves no tick.
const clock = (t) => { const d = new Date(t * 1000); return `${two(d.getHours())}:${two(d.getMinutes())}`; };
const utcDay = (t) => { const d = new Date(t * 1000); return `${MONTHS[d.getUTCMonth()]} ${d.getUTCDate()}`; };
const DAY_STEPS = [1, 2, 3, 5, 7, 10, 15].map((d) => d * DAY_S);
export const TIME_AXES = {
  hour: { steps: [5, 10, 15, 20, 30].map((m) => m * MINUTE_S), label: clock, utc: false },
  day: { steps: [1, 2, 3, 4, 6, 12].map((h) => h * HOUR_S), label: clock, utc: false },
  week: { steps: [1, 2, 7].map((d) => d * DAY_S), label: utcDay, utc: true },
  month: { steps: DAY_STEPS, label: utcDay, utc: true },
  days: { steps: DAY_STEPS, label: utcDay, utc: true },
};
const TICK_SPACE_PX = 64;
// Every zone's offset is a whole multiple of 5 minutes, as is every local step: the local
// ticks are among the multiples of 5 minutes since the epoch.
const GRID_S = 5 * MINUTE_S;

// Whether ``t`` is a multiple of ``step`` (under a day) on the viewer's clock.
function onLocalStep(t, step) {
  const d = new Date(t * 1000);
  return ((d.getHours() * HOUR_S + d.getMinutes() * MINUTE_S + d.getSeconds()) % step) === 0;
}

// Ticks in [min, max) at multiples of the smallest step that leaves each label room: UTC days
// counted from the epoch, or the times of day the viewer's clock shows at a multiple of the
// step (each tick its own offset: two 01:00 the night the clock goes back, none at 02:00 the
// night it skips).
export function timeTicks(axis, min, max, widthPx) {
  const room = Math.max(1, Math.floor(widthPx / TICK_SPACE_PX));
  const step = axis.steps.find((s) => (max - min) / s <= room) ?? axis.steps[axis.steps.length - 1];
  const ticks = [];
  if (axis.utc) {
    for (let t = Math.ceil(min / step) * step; t < max; t += step) ticks.push(t);
    return ticks;
  }
  for (let t = Math.ceil(min / GRID_S) * GRID_S; t < max; t += GRID_S) {
    if (onLocalStep(t, step)) ticks.push(t);
  }
  return ticks;
}

// One uPlot chart, rebuilt when its data changes; `series` are {label, color, values, bars};
// `xs` are the starts of buckets `step` ms long and `span` ([first, end), ms) the x range:
// the span itself, never uPlot's guess from the data (one point would spread it over years),
// so the charts of one range share one x range and their ticks line up. Each point is drawn
// at the middle of its bucket. `axis` names a TIME_AXES entry; the chart says whether its
// times are UTC. The drawn tick labels are kept in data-ticks (data-axis: of which axis), the
// x range in data-range (seconds, "min|max"), the points in data-points.
function Chart({ title, xs, span, step, axis, series, label, controls = null }) {
  const box = useRef(null);
  const time = TIME_AXES[axis];
  useEffect(() => {
    if (!box.current) return undefined;
    const width = Math.max(200, box.current.clientWidth);
    const options = {
      width,
      height: 200,
      series: [{}, ...series.map((s) => ({
        label: s.label,
        stroke: s.color,
        fill: s.bars ? s.color + "99" : undefined,
        width: s.bars ? 0 : 2,
        paths: s.bars ? uPlot.paths.bars({ size: [0.8, 40] }) : undefined,
        points: s.bars ? { show: false } : { show: true, size: 6, fill: s.color },
        spanGaps: !s.bars,
      }))],
      axes: [
        {
          splits: (u, _i, min, max) => {
            if (box.current) box.current.dataset.range = `${min}|${max}`;
            return timeTicks(time, min, max, u.bbox.width / devicePixelRatio);
          },
          values: (_u, ticks) => {
            const labels = ticks.map(time.label);
            if (box.current) Object.assign(box.current.dataset, { axis, ticks: labels.join("|") });
            return labels;
          },
        },
        { label, size: 60 },
      ],
      scales: { x: { time: true, range: [span[0] / 1000, span[1] / 1000] } },
    };
    const middles = xs.map((x) => (x + step / 2) / 1000);
    const chart = new uPlot(options, [middles, ...series.map((s) => s.values)], box.current);
    return () => chart.destroy();
  }, [xs, series]);
  return html`<div class="panel" aria-label=${title}>
    <div class="panel-head"><h2>${title}</h2>${controls}</div>
    <p class="muted" data-zone>${time.utc ? "Days in UTC" : "Your local time"}</p>
    <div ref=${box} data-chart=${title} data-points=${xs.length}></div>
  </div>`;
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

const RANGE_NAMES = RANGES.map(([value]) => value);

// The dashboard's URL: its range (and user filter) in the hash's query, so a reload keeps them.
function dashboardHash(range, user) {
  const query = new URLSearchParams({ range });
  if (user) query.set("user", user);
  return `#/dashboard?${query}`;
}

// ``range`` and ``user``: from the URL (#/dashboard?range=week&user=…); a choice here changes the URL.
export function DashboardPage({ range: asked = "day", user = "" }) {
  const range = RANGE_NAMES.includes(asked) ? asked : "day";
  const [tokensOf, setTokensOf] = useState("");
  const [stats, setStats] = useState(null);
  const [error, setError] = useState(null);
  const go = (nextRange, nextUser) => { location.hash = dashboardHash(nextRange, nextUser); };
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
    <${UserFilter} value=${user} onChange=${(next) => go(range, next)} />
    <select aria-label="Range" value=${range} onChange=${(e) => go(e.target.value, user)}>
      ${RANGES.map(([value, label]) => html`<option value=${value}>${label}</option>`)}
    </select>
  </div>`;
  // An answer for another range or user (the choice just changed) is not shown for this one.
  if (!stats || stats.range !== range || (stats.user ?? "") !== user) {
    return html`<div>${header}<${FormError} error=${error} /><p class="loading">Loading…</p></div>`;
  }

  const buckets = stats.buckets;
  const xs = buckets.map((b) => b.start_ms);
  const span = [stats.start_ms, stats.end_ms];
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
  const dayStarts = days.map((d) => d.start_ms);
  const tokensSelect = html`<select aria-label="Tokens of" value=${tokensOf} onChange=${(e) => setTokensOf(e.target.value)}>
    <option value="">every model</option>
    ${models.map((id) => html`<option value=${id}>${stats.models[id].display_name}</option>`)}
  </select>`;
  return html`<div class="dashboard">
    ${header}
    <${FormError} error=${error} />
    <div class="cards" style="margin:12px 0">
      <div class="card"><div class="k">Calls</div><div class="v" data-card="calls">${count(calls)}</div></div>
      <div class="card"><div class="k">Error rate</div><div class="v" data-card="errors">${calls ? percent(errors / calls) : "n/a"}</div></div>
      <div class="card"><div class="k">Cache-hit rate</div><div class="v" data-card="cache">${percent(stats.cache_hit_rate.overall)}</div></div>
      <div class="card"><div class="k">Estimated cost</div><div class="v" data-card="cost">${usd(stats.cost.total_usd)}</div></div>
      <div class="card"><div class="k">Calls of unknown cost</div><div class="v" data-card="unknown-cost">${count(stats.cost.unknown_cost_calls)}</div></div>
    </div>
    <${Chart} title="Calls and errors" label="calls" xs=${xs} span=${span} step=${stats.bucket_ms} axis=${range} series=${[
      { label: "calls", color: "#2f5bd3", values: buckets.map((b) => b.calls), bars: true },
      { label: "errors", color: "#b3261e", values: buckets.map((b) => b.errors), bars: true },
    ]} />
    <${Chart} title="Time to first token" label="ms" xs=${stats.ttft.map((p) => p.start_ms)} span=${span}
      step=${stats.ttft_bucket_ms} axis=${range} series=${[
      { label: "p50", color: "#1e7a3a", values: stats.ttft.map((p) => p.p50_ms) },
      { label: "p95", color: "#8a5a00", values: stats.ttft.map((p) => p.p95_ms) },
    ]} />
    <${Chart} title="Tokens" label="tokens" xs=${xs} span=${span} step=${stats.bucket_ms} axis=${range}
      series=${stackedTokens(buckets, tokensOf)} controls=${tokensSelect} />
    <${Chart} title="Estimated cost per day" label="USD" xs=${dayStarts} axis="days" step=${stats.cost.day_ms}
      span=${[dayStarts[0], dayStarts[dayStarts.length - 1] + stats.cost.day_ms]} series=${costSeries} />
    <div class="panel" aria-label="Per model">
      <h2>Per model</h2>
      ${models.length === 0
        ? html`<p class="muted">No call in this range.</p>`
        : html`<div class="table-wrap"><table><thead><tr><th>Model</th><th>Provider</th><th class="num">Cache-hit rate</th><th class="num">Cost</th><th class="num">Unknown-cost calls</th></tr></thead>
          <tbody>${models.map((id) => {
            const usdTotal = days.reduce((sum, d) => (d.models[id] && d.models[id].usd != null ? (sum ?? 0) + d.models[id].usd : sum), null);
            const unknown = days.reduce((n, d) => n + (d.models[id] ? d.models[id].unknown_cost_calls : 0), 0);
            const label = stats.models[id];
            return html`<tr data-model=${id}><td>${label.display_name}${label.deleted ? html` <span class="muted">(deleted)</span>` : null}</td>
              <td>${label.provider_name}</td><td class="num">${percent(stats.cache_hit_rate.models[id])}</td>
              <td class="num">${usd(usdTotal)}</td><td class="num">${count(unknown)}</td></tr>`;
          })}</tbody></table></div>`}
    </div>
  </div>`;
}
