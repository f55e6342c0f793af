// Settings: whether calls keep their full request and response (verbose), whether the metrics
// show each user's totals, how many call records are kept, the web search backend, where Cursor's Auto and model ids run, and the
// budgets and limits per person.
import { useEffect, useState } from "preact/hooks";
import { api, formError } from "../api.js";
import { Field, FormError, html, invalid } from "../ui.js";
import { BudgetSettings } from "./budget_settings.js";
import { RoutingSettings } from "./routing_settings.js";
import { WebSearchSettings } from "./web_search_settings.js";

export function SettingsPage() {
  const [form, setForm] = useState(null);
  const [error, setError] = useState(null);
  const [saved, setSaved] = useState(false);
  useEffect(() => {
    api("GET", "/settings/observability").then(setForm, setError);
  }, []);

  async function save(event) {
    event.preventDefault();
    setSaved(false);
    setError(null);
    if (!Number.isInteger(form.retained_calls) || form.retained_calls < 1) {
      setError(formError([{ field: "retained_calls", message: "must be a whole number, at least 1" }]));
      return;
    }
    try {
      setForm(await api("PUT", "/settings/observability", form));
      setSaved(true);
    } catch (err) {
      setError(err);
    }
  }

  if (!form) return html`<div><h1>Settings</h1><${FormError} error=${error} /></div>`;
  return html`<div>
    <h1>Settings</h1>
    <form class="panel" noValidate onSubmit=${save} aria-label="Recording settings">
      <div class="row">
        <label><input type="checkbox" name="verbose" checked=${form.verbose}
          onChange=${(e) => setForm({ ...form, verbose: e.target.checked })} />
          Verbose recording: keep each call's redacted request and raw response</label>
      </div>
      <div class="row">
        <label><input type="checkbox" name="metrics_per_user" checked=${form.metrics_per_user}
          onChange=${(e) => setForm({ ...form, metrics_per_user: e.target.checked })} />
          Metrics per person: <code>/metrics</code> shows each user's runs, calls, tokens and cost</label>
      </div>
      <div class="row">
        <${Field} label="Call records kept" name="retained_calls" error=${error}>
          <input name="retained_calls" type="number" min="1" class=${invalid(error, "retained_calls")} value=${form.retained_calls}
            onInput=${(e) => setForm({ ...form, retained_calls: e.target.value === "" ? null : Number(e.target.value) })} />
        </${Field}>
      </div>
      <${FormError} error=${error} fields=${{ retained_calls: "Call records kept" }}
        labels=${{ verbose: "Verbose recording", metrics_per_user: "Metrics per person" }} />
      ${saved && html`<div class="notice">Saved.</div>`}
      <div class="actions"><button class="primary" type="submit">Save</button></div>
    </form>
    <${RoutingSettings} />
    <${BudgetSettings} />
    <${WebSearchSettings} />
  </div>`;
}
