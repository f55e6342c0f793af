// Routing: where Cursor's Auto runs (the first enabled model, one model, or Cursor's backend)
// and the table that runs Cursor's own model ids (exact, or a pattern with `*`) on your models,
// checked in order: exact ids first, then the patterns top to bottom. A refused save shows the
// server's message next to the field it names (`auto.public_id`, `routes[2].pattern`, …).
import { useEffect, useState } from "preact/hooks";
import { api } from "../api.js";
import { useCatalog } from "../catalog.js";
import { Field, FormError, html, invalid } from "../ui.js";

const FIRST = "first-enabled";
const CURSOR = "cursor";

// The Auto select's value: a model's public id, or one of the two kinds above.
function autoValue(auto) {
  return auto.kind === "model" ? auto.public_id : auto.kind;
}

function autoOf(value) {
  return value === FIRST || value === CURSOR ? { kind: value, public_id: null } : { kind: "model", public_id: value };
}

function ModelOptions({ models }) {
  return models.map((m) => html`<option value=${m.public_id}>${m.display_name}${m.enabled ? "" : " (disabled)"}</option>`);
}

export function RoutingSettings() {
  const [form, setForm] = useState(null);
  const [error, setError] = useState(null);
  const [saved, setSaved] = useState(false);
  const { models } = useCatalog(setError);
  useEffect(() => {
    api("GET", "/settings/routing").then(
      (s) => setForm({ auto: autoValue(s.auto), routes: s.routes, max: s.max_routes }),
      setError,
    );
  }, []);

  async function save(event) {
    event.preventDefault();
    setSaved(false);
    setError(null);
    try {
      const s = await api("PUT", "/settings/routing", { auto: autoOf(form.auto), routes: form.routes });
      setForm({ auto: autoValue(s.auto), routes: s.routes, max: s.max_routes });
      setSaved(true);
    } catch (err) {
      setError(err);
    }
  }

  if (!form) return html`<section class="panel"><h2>Routing</h2><${FormError} error=${error} /></section>`;
  const setRoute = (index, change) =>
    setForm({ ...form, routes: form.routes.map((r, i) => (i === index ? { ...r, ...change } : r)) });
  const move = (index, by) => {
    const routes = [...form.routes];
    [routes[index], routes[index + by]] = [routes[index + by], routes[index]];
    setForm({ ...form, routes });
  };
  const add = () => setForm({ ...form, routes: [...form.routes, { pattern: "", public_id: models[0]?.public_id || "" }] });
  const fields = { "auto.public_id": "When Cursor asks for Auto", routes: "Routing table" };
  form.routes.forEach((_, i) => {
    fields[`routes[${i}].pattern`] = `Pattern ${i + 1}`;
    fields[`routes[${i}].public_id`] = `Model ${i + 1}`;
  });
  return html`<form class="panel" noValidate onSubmit=${save} aria-label="Routing">
    <h2>Routing</h2>
    <div class="row">
      <${Field} label="When Cursor asks for Auto" name="auto.public_id" error=${error}>
        <select name="auto" class=${invalid(error, "auto.public_id")} value=${form.auto}
          onChange=${(e) => setForm({ ...form, auto: e.target.value })}>
          <option value=${FIRST}>First enabled model (default)</option>
          <${ModelOptions} models=${models} />
          <option value=${CURSOR}>Cursor's backend</option>
        </select>
      </${Field}>
    </div>
    <p class="muted">Cursor's own model ids run on your models: an exact id (<code>claude-4.5-sonnet</code>) or a
      pattern with <code>*</code> (<code>gpt-5*</code>). Exact ids are matched first, then the patterns from the top.
      An id no row matches goes to Cursor's backend.</p>
    <div class="table-wrap"><table aria-label="Routing table">
      <thead><tr><th>Cursor model id or pattern</th><th>Runs on</th><th></th></tr></thead>
      <tbody>${form.routes.map(
        (route, i) => html`<tr data-route=${i}>
          <td><${Field} name=${`routes[${i}].pattern`} error=${error}>
            <input aria-label=${`Pattern ${i + 1}`} class=${invalid(error, `routes[${i}].pattern`)} value=${route.pattern}
              placeholder="claude-4.5-sonnet or gpt-5*" onInput=${(e) => setRoute(i, { pattern: e.target.value })} />
          </${Field}></td>
          <td><${Field} name=${`routes[${i}].public_id`} error=${error}>
            <select aria-label=${`Model ${i + 1}`} class=${invalid(error, `routes[${i}].public_id`)} value=${route.public_id}
              onChange=${(e) => setRoute(i, { public_id: e.target.value })}>
              <${ModelOptions} models=${models} />
            </select>
          </${Field}></td>
          <td><div class="row">
            <button type="button" aria-label=${`Move ${i + 1} up`} disabled=${i === 0} onClick=${() => move(i, -1)}>↑</button>
            <button type="button" aria-label=${`Move ${i + 1} down`} disabled=${i === form.routes.length - 1} onClick=${() => move(i, 1)}>↓</button>
            <button type="button" aria-label=${`Remove ${i + 1}`}
              onClick=${() => setForm({ ...form, routes: form.routes.filter((_, j) => j !== i) })}>Remove</button>
          </div></td></tr>`,
      )}</tbody></table></div>
    <div class="row">
      <button type="button" onClick=${add} disabled=${form.routes.length >= form.max || models.length === 0}>Add a row</button>
    </div>
    <${FormError} error=${error} fields=${fields} />
    ${saved && html`<div class="notice">Routing saved.</div>`}
    <div class="actions"><button class="primary" type="submit">Save routing</button></div>
  </form>`;
}
