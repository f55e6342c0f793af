// Budgets: a default for everyone and overrides per user (the user id the People page shows),
// each with estimated USD per day and per month, turns per minute, runs at once and the models
// allowed. An empty box is no limit; no model selected is any model. A run over a limit ends
// in the editor with the limit's message; an override replaces the default as a whole.
import { useEffect, useState } from "preact/hooks";
import { api } from "../api.js";
import { useCatalog } from "../catalog.js";
import { Field, FormError, html, invalid } from "../ui.js";

const NUMBERS = [
  ["usd_per_day", "USD per day", "0.01"],
  ["usd_per_month", "USD per month", "0.01"],
  ["turns_per_minute", "Turns per minute", "1"],
  ["concurrent_runs", "Runs at once", "1"],
];

// A row of the form: numbers as the inputs hold them ("" is no limit), the models selected.
function rowOf(user, limits) {
  const row = { user, models: limits.allowed_models || [] };
  for (const [name] of NUMBERS) row[name] = limits[name] === null ? "" : String(limits[name]);
  return row;
}

function limitsOf(row) {
  const limits = { allowed_models: row.models.length ? row.models : null };
  for (const [name] of NUMBERS) limits[name] = row[name] === "" ? null : Number(row[name]);
  return limits;
}

function formOf(saved) {
  const overrides = Object.entries(saved.overrides).map(([user, limits]) => rowOf(user, limits));
  return { default: rowOf(null, saved.default), overrides, max: saved.max_overrides };
}

// The server names a user's limits by user id (overrides['alice'].usd_per_day); the table
// names its cells by row (overrides.0.usd_per_day).
function byRow(error, overrides) {
  if (!error || !error.fields) return error;
  const fields = error.fields.map((p) => {
    const match = /^overrides\[(['"])(.*)\1\]\.(.+)$/.exec(p.field);
    const index = match ? overrides.findIndex((row) => row.user.trim() === match[2]) : -1;
    return index < 0 ? p : { ...p, field: `overrides.${index}.${match[3]}` };
  });
  return Object.assign(Object.create(Object.getPrototypeOf(error)), error, { fields });
}

function LimitCells({ row, label, prefix, error, models, change }) {
  return html`${NUMBERS.map(
    ([name, title, step]) => html`<td><${Field} name=${`${prefix}.${name}`} error=${error}>
      <input type="number" min="0" step=${step} aria-label=${`${title}, ${label}`} value=${row[name]}
        class=${invalid(error, `${prefix}.${name}`)} placeholder="no limit"
        onInput=${(e) => change({ [name]: e.target.value })} />
    </${Field}></td>`,
  )}
  <td><select multiple aria-label=${`Allowed models, ${label}`}
    onChange=${(e) => change({ models: [...e.target.selectedOptions].map((o) => o.value) })}>
    ${models.map((m) => html`<option value=${m.public_id} selected=${row.models.includes(m.public_id)}>${m.display_name}</option>`)}
  </select></td>`;
}

export function BudgetSettings() {
  const [form, setForm] = useState(null);
  const [error, setError] = useState(null);
  const [saved, setSaved] = useState(false);
  const { models } = useCatalog(setError);
  useEffect(() => {
    api("GET", "/settings/budgets").then((s) => setForm(formOf(s)), setError);
  }, []);

  async function save(event) {
    event.preventDefault();
    setSaved(false);
    setError(null);
    const overrides = {};
    for (const row of form.overrides) overrides[row.user.trim()] = limitsOf(row);
    try {
      setForm(formOf(await api("PUT", "/settings/budgets", { default: limitsOf(form.default), overrides })));
      setSaved(true);
    } catch (err) {
      setError(byRow(err, form.overrides));
    }
  }

  if (!form) return html`<section class="panel"><h2>Budgets</h2><${FormError} error=${error} /></section>`;
  const setOverride = (index, change) =>
    setForm({ ...form, overrides: form.overrides.map((r, i) => (i === index ? { ...r, ...change } : r)) });
  const fields = { overrides: "Users" };
  for (const [name, title] of NUMBERS) {
    fields[`default.${name}`] = `${title}, everyone`;
    form.overrides.forEach((_, i) => { fields[`overrides.${i}.${name}`] = `${title}, user ${i + 1}`; });
  }
  return html`<form class="panel" noValidate onSubmit=${save} aria-label="Budgets">
    <h2>Budgets</h2>
    <p class="muted">Limits per person, by the user id the People page shows. A run over one ends in the
      editor with the limit's message ("daily budget of $5.00 reached; resets at 00:00 UTC"); a turn already
      running finishes. An empty box is no limit, no model selected is any model; a user's row replaces the
      default as a whole. Spend is the dashboard's estimated cost.</p>
    <div class="table-wrap"><table aria-label="Budgets table">
      <thead><tr><th>User</th>${NUMBERS.map(([, title]) => html`<th>${title}</th>`)}<th>Allowed models</th><th></th></tr></thead>
      <tbody>
        <tr data-budget="default"><td>Everyone (default)</td>
          <${LimitCells} row=${form.default} label="default" prefix="default" error=${error} models=${models}
            change=${(change) => setForm({ ...form, default: { ...form.default, ...change } })} />
          <td></td></tr>
        ${form.overrides.map(
          (row, i) => html`<tr data-budget=${i}>
            <td><input aria-label=${`User ${i + 1}`} value=${row.user} placeholder="alice@example.com"
              onInput=${(e) => setOverride(i, { user: e.target.value })} /></td>
            <${LimitCells} row=${row} label=${`user ${i + 1}`} prefix=${`overrides.${i}`} error=${error} models=${models}
              change=${(change) => setOverride(i, change)} />
            <td><button type="button" aria-label=${`Remove user ${i + 1}`}
              onClick=${() => setForm({ ...form, overrides: form.overrides.filter((_, j) => j !== i) })}>Remove</button></td>
          </tr>`,
        )}
      </tbody></table></div>
    <div class="row">
      <button type="button" disabled=${form.overrides.length >= form.max}
        onClick=${() => setForm({ ...form, overrides: [...form.overrides, rowOf("", {})] })}>Add a user</button>
    </div>
    <${FormError} error=${error} fields=${fields} />
    ${saved && html`<div class="notice">Budgets saved.</div>`}
    <div class="actions"><button class="primary" type="submit">Save budgets</button></div>
  </form>`;
}
