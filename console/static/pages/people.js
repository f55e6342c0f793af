// People: per user (the id read from the editor's login token, "anonymous" without one), the
// runs, calls, tokens and estimated cost over a range, from GET /console/api/people. Cost is
// the dashboard's rule: unknown-cost calls are counted apart, never priced at 0. A user's row
// links to the Calls page filtered to them.
import { useEffect, useState } from "preact/hooks";
import { api } from "../api.js";
import { FormError, count, html } from "../ui.js";

export const RANGES = [
  ["hour", "last hour"],
  ["day", "last day"],
  ["week", "last 7 days"],
  ["month", "last 30 days"],
];
const REFRESH_MS = 10000;

function usd(value) {
  return value == null ? "—" : `$${value.toFixed(value < 1 ? 4 : 2)}`;
}

// The users seen over the last 30 days, for the Calls and Dashboard user filters (none when
// the answer fails: the filter is then only "every user").
export function useUsers() {
  const [users, setUsers] = useState([]);
  useEffect(() => {
    let current = true;
    api("GET", "/people?range=month").then(
      (answer) => current && setUsers(answer.people.map((p) => p.user_id)),
      () => null,
    );
    return () => { current = false; };
  }, []);
  return users;
}

// A select of the users; "" is every user.
export function UserFilter({ value, onChange }) {
  const users = useUsers();
  const known = value && !users.includes(value) ? [value, ...users] : users;
  return html`<select aria-label="User" value=${value} onChange=${(e) => onChange(e.target.value)}>
    <option value="">every user</option>
    ${known.map((u) => html`<option value=${u}>${u}</option>`)}
  </select>`;
}

export function PeoplePage() {
  const [range, setRange] = useState("day");
  const [people, setPeople] = useState(null);
  const [error, setError] = useState(null);
  useEffect(() => {
    let stop = false;
    const load = () =>
      api("GET", `/people?range=${range}`).then(
        (answer) => { if (!stop) { setPeople(answer.people); setError(null); } },
        (err) => { if (!stop) setError(err); },
      );
    load();
    const timer = setInterval(load, REFRESH_MS);
    return () => { stop = true; clearInterval(timer); };
  }, [range]);
  return html`<div>
    <div class="row">
      <h1 style="margin:0;flex:1">People</h1>
      <select aria-label="Range" value=${range} onChange=${(e) => setRange(e.target.value)}>
        ${RANGES.map(([value, label]) => html`<option value=${value}>${label}</option>`)}
      </select>
    </div>
    <p class="muted">Who used the agent, read from the editor's login token (attribution, not
      authentication: the token is read, never verified and never kept).</p>
    <${FormError} error=${error} />
    ${people === null
      ? html`<p class="loading">Loading…</p>`
      : people.length === 0
        ? html`<p class="muted">No run in this range.</p>`
        : html`<div class="table-wrap"><table>
          <thead><tr><th>User</th><th class="num">Runs</th><th class="num">Calls</th><th class="num">Errors</th>
            <th class="num">Input</th><th class="num">Output</th><th class="num">Cache read</th>
            <th class="num">Cache write</th><th class="num">Est. cost</th><th class="num">Unknown-cost calls</th></tr></thead>
          <tbody>${people.map(
            (p) => html`<tr data-user=${p.user_id}>
              <td><a href=${`#/calls?user=${encodeURIComponent(p.user_id)}`}>${p.user_id}</a></td>
              <td class="num" data-runs>${count(p.runs)}</td><td class="num" data-calls>${count(p.calls)}</td>
              <td class="num">${count(p.errors)}</td>
              <td class="num">${count(p.tokens.input)}</td><td class="num">${count(p.tokens.output)}</td>
              <td class="num">${count(p.tokens.cache_read)}</td><td class="num">${count(p.tokens.cache_write)}</td>
              <td class="num" data-cost>${usd(p.cost_usd)}</td><td class="num">${count(p.unknown_cost_calls)}</td></tr>`,
          )}</tbody></table></div>`}
  </div>`;
}
