// The web search backend WebSearch runs on: off, a SearXNG instance (its URL), or the Tavily
// or Brave Search API (a key). The key is write-only: the page only learns whether one is set,
// and an empty key field keeps the stored key.
import { useEffect, useState } from "preact/hooks";
import { api } from "../api.js";
import { Field, FormError, html, invalid } from "../ui.js";

const BACKENDS = [
  ["", "Off (WebSearch is not offered to the model)"],
  ["searxng", "SearXNG instance"],
  ["tavily", "Tavily"],
  ["brave", "Brave Search"],
];
const KEYED = new Set(["tavily", "brave"]);

function formOf(settings) {
  return { backend: settings.backend || "", url: settings.url || "", key: "" };
}

export function WebSearchSettings() {
  const [shown, setShown] = useState(null);
  const [form, setForm] = useState(null);
  const [error, setError] = useState(null);
  const [saved, setSaved] = useState(false);
  useEffect(() => {
    api("GET", "/settings/web-search").then((s) => { setShown(s); setForm(formOf(s)); }, setError);
  }, []);

  async function save(event) {
    event.preventDefault();
    setSaved(false);
    setError(null);
    const body = {
      backend: form.backend || null,
      url: form.backend === "searxng" ? form.url : null,
      api_key: KEYED.has(form.backend) && form.key !== "" ? form.key : null,
    };
    try {
      const result = await api("PUT", "/settings/web-search", body);
      setShown(result);
      setForm(formOf(result));
      setSaved(true);
    } catch (err) {
      setError(err);
    }
  }

  if (!form) return html`<section class="panel"><h2>Web search</h2><${FormError} error=${error} /></section>`;
  // The stored key belongs to the stored backend only: another service never gets it.
  const keySet = shown.has_api_key && shown.backend === form.backend;
  return html`<form class="panel" noValidate onSubmit=${save} aria-label="Web search">
    <h2>Web search</h2>
    <div class="row">
      <${Field} label="Search backend" name="backend" error=${error}>
        <select name="backend" class=${invalid(error, "backend")} value=${form.backend}
          onChange=${(e) => setForm({ ...form, backend: e.target.value, key: "" })}>
          ${BACKENDS.map(([value, label]) => html`<option value=${value}>${label}</option>`)}
        </select>
      </${Field}>
    </div>
    ${form.backend === "searxng" && html`<div class="row">
      <${Field} label="SearXNG URL (its JSON format enabled)" name="url" error=${error}>
        <input name="url" type="url" placeholder="https://search.example.org" class=${invalid(error, "url")}
          value=${form.url} onInput=${(e) => setForm({ ...form, url: e.target.value })} />
      </${Field}>
    </div>`}
    ${KEYED.has(form.backend) && html`<div class="row">
      <${Field} label=${`API key (${keySet ? shown.key_unreadable || "set" : "not set"})`} name="api_key" error=${error}>
        <input name="api_key" type="password" autocomplete="off" class=${invalid(error, "api_key")}
          placeholder=${keySet ? "leave empty to keep the stored key" : "key"} value=${form.key}
          onInput=${(e) => setForm({ ...form, key: e.target.value })} />
      </${Field}>
    </div>`}
    <${FormError} error=${error} fields=${{
      backend: "Search backend",
      ...(form.backend === "searxng" ? { url: "SearXNG URL" } : {}),
      ...(KEYED.has(form.backend) ? { api_key: "API key" } : {}),
    }} labels=${{ url: "SearXNG URL", api_key: "API key" }} />
    ${saved && html`<div class="notice">Web search backend saved.</div>`}
    <div class="actions"><button class="primary" type="submit">Save web search</button></div>
  </form>`;
}
