// Providers: list, add from a preset, edit, delete, and each provider's key pool. A key is
// write-only: the page only ever knows whether one is set, and can replace or clear it. Custom
// header values are sealed like the key unless their "public" box is ticked; a sealed value
// reads back as null.
import { useEffect, useState } from "preact/hooks";
import { api } from "../api.js";
import { useCatalog, useProviderTypes } from "../catalog.js";
import { Field, FormError, html, invalid, problemsAt, useOpenedFocus, when } from "../ui.js";

// A stored secret that does not open under the server's key (a database moved without its
// key file) is named by the server, per field ("api_key", "headers.<name>").
function unreadableText(provider) {
  const fields = Object.keys(provider?.unreadable || {});
  return fields.length ? `${provider.unreadable[fields[0]]}: ${fields.join(", ")}` : null;
}

function keyState(provider) {
  return unreadableText(provider) || (provider?.has_api_key ? "set" : "not set");
}

function keyBadge(provider) {
  const unreadable = unreadableText(provider);
  if (unreadable) return html`<span class="badge bad">${unreadable}</span>`;
  return provider.has_api_key ? html`<span class="badge ok">set</span>` : html`<span class="badge">not set</span>`;
}

// UI presets: a name and base URL for a known service, each on one of the server's types. A preset
// whose type the server does not list is not offered.
export const PRESETS = [
  { id: "openai", label: "OpenAI", name: "OpenAI", type: "openai-responses", base_url: "https://api.openai.com/v1" },
  { id: "anthropic", label: "Anthropic", name: "Anthropic", type: "anthropic", base_url: "https://api.anthropic.com/v1" },
  { id: "deepseek", label: "DeepSeek", name: "DeepSeek", type: "openai-chat", base_url: "https://api.deepseek.com/v1" },
  { id: "openrouter", label: "OpenRouter", name: "OpenRouter", type: "openai-chat", base_url: "https://openrouter.ai/api/v1" },
  { id: "gemini-native", label: "Gemini", name: "Gemini", type: "gemini", base_url: "https://generativelanguage.googleapis.com/v1beta" },
  { id: "gemini", label: "Gemini (OpenAI-compatible)", name: "Gemini", type: "openai-chat", base_url: "https://generativelanguage.googleapis.com/v1beta/openai" },
  { id: "ollama", label: "Ollama (local)", name: "Ollama", type: "openai-chat", base_url: "http://127.0.0.1:11434/v1" },
  { id: "lmstudio", label: "LM Studio (local)", name: "LM Studio", type: "openai-chat", base_url: "http://127.0.0.1:1234/v1" },
  { id: "custom", label: "Custom", name: "", type: "openai-chat", base_url: "" },
];
// The form's fields in words, for the messages a refused save has for them.
const LABELS = {
  name: "Name",
  type: "Format",
  base_url: "Base URL",
  api_key: "API key",
  headers: "Custom headers",
  public_headers: "Public headers",
  prompt_cache_key: "Prompt cache key",
};
// An example address shown while the URL is empty (the Custom preset has none of its own).
const EXAMPLE_URL = "https://llm.example.com/v1";

function headerRows(provider) {
  const shown = new Set(provider?.public_headers || []);
  return Object.entries(provider?.headers || {}).map(([name, value]) => ({
    name,
    value: value ?? "",
    secret: value === null,
    public: shown.has(name),
  }));
}

// ``types``: the server's provider types, the form's only type choices.
function ProviderForm({ provider, types, onSaved, onCancel }) {
  const editing = provider && provider.id != null;
  const presets = PRESETS.filter((p) => types.some((t) => t.type === p.type));
  const [form, setForm] = useState({
    name: provider?.name ?? "",
    type: provider?.type ?? types[0]?.type ?? "",
    base_url: provider?.base_url ?? "",
    replay_reasoning: provider?.replay_reasoning ?? true,
    prompt_cache_key: provider?.prompt_cache_key ?? "auto",
  });
  const [key, setKey] = useState({ mode: editing ? "keep" : "set", value: "" });
  const [headers, setHeaders] = useState(headerRows(provider));
  const [error, setError] = useState(null);
  const [busy, setBusy] = useState(false);
  // A name the user typed is kept across presets; otherwise each preset brings its own.
  const [named, setNamed] = useState(editing);
  const focusRef = useOpenedFocus();
  const set = (name) => (event) => setForm({ ...form, [name]: event.target.value });

  function applyPreset(id) {
    const preset = presets.find((p) => p.id === id);
    if (preset) setForm({ ...form, name: named ? form.name : preset.name, type: preset.type, base_url: preset.base_url });
  }

  async function save(event) {
    event.preventDefault();
    const body = { ...form, headers: {}, public_headers: [] };
    for (const row of headers) {
      if (!row.name.trim()) continue;
      // A sealed header read back as null keeps its stored value unless a new one is typed.
      body.headers[row.name.trim()] = row.secret && row.value === "" ? null : row.value;
      if (row.public) body.public_headers.push(row.name.trim());
    }
    if (key.mode === "set") body.api_key = key.value;
    else if (key.mode === "clear") body.api_key = "";
    setBusy(true);
    setError(null);
    try {
      const saved = editing
        ? await api("PUT", `/providers/${provider.id}`, body)
        : await api("POST", "/providers", body);
      onSaved(saved);
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  }

  const headerProblems = (error?.fields || []).filter((p) => p.field === "headers" || p.field === "public_headers");
  return html`<form class="panel" noValidate onSubmit=${save} aria-label=${editing ? "Edit provider" : "Add provider"} ref=${focusRef}>
    <h2>${editing ? `Edit ${provider.name}` : "Add a provider"}</h2>
    ${!editing &&
    html`<div class="row"><${Field} label="Preset" name="preset">
      <select name="preset" onChange=${(e) => applyPreset(e.target.value)}>
        <option value="">Choose a preset…</option>
        ${presets.map((p) => html`<option value=${p.id}>${p.label}</option>`)}
      </select></${Field}></div>`}
    <div class="row">
      <${Field} label="Name" name="name" error=${error}>
        <input name="name" class=${invalid(error, "name")} value=${form.name}
          onInput=${(e) => { setNamed(e.target.value !== ""); set("name")(e); }} required />
      </${Field}>
      <${Field} label="Format" name="type" error=${error}>
        <select name="type" class=${invalid(error, "type")} value=${form.type} onChange=${set("type")}>
          ${types.map((t) => html`<option value=${t.type}>${t.label}</option>`)}
        </select>
      </${Field}>
    </div>
    <div class="row">
      <${Field} label="Base URL (include /v1)" name="base_url" error=${error}>
        <input name="base_url" class=${invalid(error, "base_url")} value=${form.base_url} onInput=${set("base_url")}
          placeholder=${EXAMPLE_URL} />
      </${Field}>
    </div>
    <div class="row">
      <${Field} label=${`API key (${keyState(provider)})`} name="api_key" error=${error}>
        ${editing &&
        html`<select name="api_key_mode" aria-label="What to do with the stored key" value=${key.mode} onChange=${(e) => setKey({ mode: e.target.value, value: "" })}>
          <option value="keep">Keep the stored key</option>
          <option value="set">Replace it</option>
          <option value="clear">Clear it</option>
        </select>`}
        ${key.mode === "set" &&
        html`<input name="api_key" type="password" autocomplete="off" class=${invalid(error, "api_key")}
          aria-label=${editing ? "New API key" : "API key"}
          placeholder=${editing ? "new key" : "key (leave empty for none)"} value=${key.value}
          onInput=${(e) => setKey({ mode: "set", value: e.target.value })} />`}
      </${Field}>
    </div>
    <h2>Custom headers</h2>
    ${headers.map(
      (row, index) => html`<div class="row header-row" data-field=${`headers.${row.name.trim()}`}>
        <input aria-label="Header name" placeholder="name" value=${row.name}
          onInput=${(e) => setHeaders(headers.map((r, i) => (i === index ? { ...r, name: e.target.value } : r)))} />
        <input aria-label="Header value" type=${row.public ? "text" : "password"} autocomplete="off"
          placeholder=${row.secret ? "(sealed, hidden)" : "value"} value=${row.value}
          onInput=${(e) => setHeaders(headers.map((r, i) => (i === index ? { ...r, value: e.target.value } : r)))} />
        <label title="A public value is stored in plaintext and shown here; every other value is sealed like the key">
          <input type="checkbox" aria-label="Header value is public" checked=${row.public}
            onChange=${(e) => setHeaders(headers.map((r, i) => (i === index ? { ...r, public: e.target.checked } : r)))} />
          public</label>
        <button type="button" onClick=${() => setHeaders(headers.filter((_, i) => i !== index))}>Remove</button>
        ${problemsAt(error, `headers.${row.name.trim()}`).map(
          (message) => html`<div class="error" role="alert">Header ${row.name.trim()}: ${message}</div>`,
        )}
      </div>`,
    )}
    ${headerProblems.map((p) => html`<div class="error" role="alert">${LABELS[p.field]}: ${p.message}</div>`)}
    <div class="actions">
      <button type="button" onClick=${() => setHeaders([...headers, { name: "", value: "", secret: false, public: false }])}>Add header</button>
    </div>
    ${types.find((t) => t.type === form.type)?.replay_reasoning && html`<div class="row">
      <label><input type="checkbox" name="replay_reasoning" checked=${form.replay_reasoning}
        onChange=${(e) => setForm({ ...form, replay_reasoning: e.target.checked })} />
        Send streamed reasoning back to this provider (OpenAI Chat <code>reasoning_content</code>)</label>
    </div>`}
    <div class="row">
      <${Field} label="Prompt cache key (OpenAI formats)" name="prompt_cache_key" error=${error}>
        <select name="prompt_cache_key" value=${form.prompt_cache_key} onChange=${set("prompt_cache_key")}>
          <option value="auto">Automatic: only to OpenAI's own API</option>
          <option value="on">Send (a compatible server that takes it)</option>
          <option value="off">Never send</option>
        </select>
      </${Field}>
    </div>
    <${FormError} error=${error} fields=${{ ...LABELS, ...Object.fromEntries(headers.map((r) => [`headers.${r.name.trim()}`, r.name])) }} />
    <div class="actions">
      <button class="primary" type="submit" disabled=${busy}>${editing ? "Save" : "Add provider"}</button>
      <button type="button" onClick=${onCancel}>Cancel</button>
    </div>
  </form>`;
}

function keyStateBadge(key) {
  if (key.unreadable) return html`<span class="badge bad">${key.unreadable}</span>`;
  if (key.state === "cooling") return html`<span class="badge bad">cooling until ${when(key.cooling_until_ms)}</span>`;
  return html`<span class="badge ok">healthy</span>`;
}

function lastError(key) {
  const error = key.last_error;
  if (!error) return html`<span class="muted">none</span>`;
  return html`<span title=${error.message}>HTTP ${error.http_status} at ${when(error.at_ms)}: ${error.message}</span>`;
}

// A provider's key pool: requests rotate over its healthy keys; a 429 or 401 cools a key. The
// state is the server instance's own (each instance learns its keys' health on its own).
function KeysPanel({ provider, onClose }) {
  const [keys, setKeys] = useState(null);
  const [error, setError] = useState(null);
  const [form, setForm] = useState({ label: "", api_key: "" });
  const [renaming, setRenaming] = useState(null); // {id, label}
  const base = `/providers/${provider.id}/keys`;
  const focusRef = useOpenedFocus();
  const load = () => api("GET", base).then(setKeys, setError);
  useEffect(() => { load(); }, [provider.id]);

  async function act(method, path, body) {
    setError(null);
    try {
      await api(method, path, body);
      return true;
    } catch (err) {
      setError(err);
      return false;
    } finally {
      load();
    }
  }
  async function add(event) {
    event.preventDefault();
    if (await act("POST", base, form)) setForm({ label: "", api_key: "" });
  }
  async function rename(event) {
    event.preventDefault();
    if (await act("PUT", `${base}/${renaming.id}`, { label: renaming.label })) setRenaming(null);
  }

  return html`<div class="panel" role="region" aria-label=${`Keys of ${provider.name}`} ref=${focusRef}>
    <h2>Keys of ${provider.name}</h2>
    <p class="muted">Requests rotate over the healthy keys; a key that answers 429 or 401 cools down
      (for the provider's Retry-After, else 60 s or 10 min) and the request goes on with another.
      The state shown is this server instance's.</p>
    ${keys === null
      ? html`<p class="loading">Loading…</p>`
      : html`<div class="table-wrap"><table>
        <thead><tr><th>Label</th><th>Key</th><th>State</th><th>Last error</th><th></th></tr></thead>
        <tbody>${keys.map(
          (k) => html`<tr data-key=${k.label}>
            <td>${renaming && renaming.id === k.id
              ? html`<form onSubmit=${rename} aria-label="Rename key"><input aria-label="New label" value=${renaming.label}
                  onInput=${(e) => setRenaming({ ...renaming, label: e.target.value })} />
                  <button type="submit">Save</button></form>`
              : html`${k.label}${k.main ? html` <span class="muted">(first)</span>` : null}`}</td>
            <td>${k.has_api_key ? html`<span class="badge ok">set</span>` : html`<span class="badge">not set</span>`}</td>
            <td class="key-state">${keyStateBadge(k)}</td>
            <td class="key-error">${lastError(k)}</td>
            <td><div class="actions">
              <button onClick=${() => setRenaming({ id: k.id, label: k.label })}>Rename</button>
              ${!k.main && html`<button class="danger" onClick=${() => act("DELETE", `${base}/${k.id}`)}>Delete</button>`}
            </div></td></tr>`,
        )}</tbody></table></div>`}
    <form noValidate onSubmit=${add} aria-label="Add key">
      <div class="row">
        <${Field} label="Label" name="label" error=${error}>
          <input name="key_label" class=${invalid(error, "label")} value=${form.label}
            onInput=${(e) => setForm({ ...form, label: e.target.value })} />
        </${Field}>
        <${Field} label="Key" name="api_key" error=${error}>
          <input name="pool_api_key" type="password" autocomplete="off" class=${invalid(error, "api_key")}
            value=${form.api_key} onInput=${(e) => setForm({ ...form, api_key: e.target.value })} />
        </${Field}>
      </div>
      <${FormError} error=${error} fields=${{ label: "Label", api_key: "Key" }} />
      <div class="actions">
        <button class="primary" type="submit">Add key</button>
        <button type="button" onClick=${onClose}>Close</button>
      </div>
    </form>
  </div>`;
}

function DeleteConfirm({ provider, models, onDone, onCancel }) {
  const [error, setError] = useState(null);
  const focusRef = useOpenedFocus();
  const mine = models.filter((m) => m.provider_id === provider.id);
  async function confirm() {
    try {
      await api("DELETE", `/providers/${provider.id}`);
      onDone();
    } catch (err) {
      setError(err);
    }
  }
  return html`<div class="panel" role="dialog" aria-label="Delete provider" ref=${focusRef}>
    <h2>Delete ${provider.name}?</h2>
    <p>${mine.length
      ? `Its ${mine.length} model${mine.length === 1 ? "" : "s"} go with it: ${mine.map((m) => m.display_name).join(", ")}.`
      : "It has no models."}${" "}Its call records stay on the Calls page.</p>
    <${FormError} error=${error} />
    <div class="actions">
      <button class="danger" onClick=${confirm}>${mine.length ? "Delete provider and models" : "Delete provider"}</button>
      <button onClick=${onCancel} data-autofocus>Cancel</button>
    </div>
  </div>`;
}

export function ProvidersPage() {
  const [editing, setEditing] = useState(null); // {} for a new one
  const [deleting, setDeleting] = useState(null);
  const [pooling, setPooling] = useState(null); // the provider whose keys are shown
  const [saved, setSaved] = useState(null); // the provider just saved, for its next step
  const [error, setError] = useState(null);
  const { providers, models, reload: load } = useCatalog(setError);
  const types = useProviderTypes(setError);

  return html`<div>
    <h1>Providers</h1>
    <${FormError} error=${error} />
    ${editing && types === null && html`<p class="loading">Loading…</p>`}
    ${editing && types !== null &&
    html`<${ProviderForm} key=${editing.id ?? "new"} provider=${editing} types=${types} onCancel=${() => setEditing(null)}
      onSaved=${(provider) => { setEditing(null); setSaved(provider); load(); }} />`}
    ${saved && !editing &&
    html`<div class="notice" role="status">Saved ${saved.name}. Next:
      <a href=${`#/models/${saved.id}`}>pick its models</a>.</div>`}
    ${deleting &&
    html`<${DeleteConfirm} provider=${deleting} models=${models} onCancel=${() => setDeleting(null)}
      onDone=${() => { setDeleting(null); load(); }} />`}
    ${pooling && html`<${KeysPanel} key=${pooling.id} provider=${pooling} onClose=${() => setPooling(null)} />`}
    ${!editing && html`<div class="actions" style="margin-bottom:12px">
      <button class="primary" data-opener="add-provider" onClick=${() => { setSaved(null); setEditing({}); }}>Add provider</button></div>`}
    ${providers === null
      ? html`<p class="loading">Loading…</p>`
      : providers.length === 0
        ? html`<p class="muted">No provider yet. Add one, then pick its models on the Models page.</p>`
        : html`<div class="table-wrap"><table>
          <thead><tr><th>Name</th><th>Format</th><th>Base URL</th><th>Key</th><th>Models</th><th></th></tr></thead>
          <tbody>${providers.map(
            (p) => html`<tr data-provider=${p.name}>
              <td>${p.name}</td><td>${p.type}</td><td>${p.base_url}</td>
              <td>${keyBadge(p)}</td>
              <td class="num">${models.filter((m) => m.provider_id === p.id).length}</td>
              <td><div class="actions">
                <a href=${`#/models/${p.id}`}>Models</a>
                <button onClick=${() => { setSaved(null); setEditing(p); }}>Edit</button>
                <button onClick=${() => setPooling(p)}>Keys</button>
                <button class="danger" onClick=${() => setDeleting(p)}>Delete</button>
              </div></td></tr>`,
          )}</tbody></table></div>`}
  </div>`;
}
