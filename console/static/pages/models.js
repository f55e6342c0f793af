// Models: discover a provider's models and add the chosen ones in one save; edit or delete one.
import { useEffect, useState } from "preact/hooks";
import { api, formError } from "../api.js";
import { typeInfo, useCatalog, useProviderTypes } from "../catalog.js";
import { Field, FormError, count, html, invalid, ms, problemsAt, useOpenedFocus } from "../ui.js";

// The model editor's fields in words, for the messages a refused save has for them: those it
// shows at their place, and the others.
const MODEL_FIELDS = {
  display_name: "Display name",
  max_output_tokens: "Max output tokens",
  context_window_tokens: "Context window (tokens)",
  reasoning_effort: "Effort",
  sort_order: "Order",
  price_input_per_mtok: "Input price",
  price_output_per_mtok: "Output price",
  price_cache_read_per_mtok: "Cache read price",
  price_cache_write_per_mtok: "Cache write price",
  fallbacks: "Fallback models",
};
const OTHER_MODEL_FIELDS = { model_id: "Model id", enabled: "Enabled", reasoning_enabled: "Reasoning" };

// The ModelInput the API takes, from a saved model record.
function inputOf(model) {
  return {
    model_id: model.model_id,
    display_name: model.display_name,
    enabled: model.enabled,
    max_output_tokens: model.max_output_tokens,
    context_window_tokens: model.context_window_tokens,
    reasoning_enabled: model.reasoning_enabled,
    reasoning_effort: model.reasoning_effort,
    sort_order: model.sort_order,
    price_input_per_mtok: model.price_input_per_mtok,
    price_output_per_mtok: model.price_output_per_mtok,
    price_cache_read_per_mtok: model.price_cache_read_per_mtok,
    price_cache_write_per_mtok: model.price_cache_write_per_mtok,
    fallbacks: model.fallbacks || [],
  };
}

// A model's name as lists show it: its display name and provider.
function nameOf(models, publicId) {
  const model = models.find((m) => m.public_id === publicId);
  return model ? `${model.display_name} (${model.provider_name})` : publicId;
}

// The ordered fallback models of the model being edited: a call that fails before its first
// token after its retries goes to the first, then the next. Add from a select, order, remove.
function FallbackList({ model, models, value, error, onChange }) {
  const candidates = models.filter((m) => m.public_id !== model.public_id && !value.includes(m.public_id));
  const move = (index, by) => {
    const next = [...value];
    [next[index], next[index + by]] = [next[index + by], next[index]];
    onChange(next);
  };
  return html`<div class="field" data-field="fallbacks">
    <label>Fallback models <span class="muted">(tried in this order when this model fails before answering: connection errors, 429, 5xx, timeouts)</span></label>
    <ol aria-label="Fallback models">${value.map(
      (id, index) => html`<li data-fallback=${id}>${nameOf(models, id)}${" "}
        <button type="button" aria-label=${`Move ${nameOf(models, id)} up`} disabled=${index === 0} onClick=${() => move(index, -1)}>↑</button>
        <button type="button" aria-label=${`Move ${nameOf(models, id)} down`} disabled=${index === value.length - 1} onClick=${() => move(index, 1)}>↓</button>
        <button type="button" aria-label=${`Remove fallback ${nameOf(models, id)}`} onClick=${() => onChange(value.filter((other) => other !== id))}>Remove</button>
      </li>`,
    )}</ol>
    ${value.length === 0 && html`<p class="muted">None: a failed call ends the turn.</p>`}
    ${problemsAt(error, "fallbacks").map((message) => html`<div class="error" role="alert">${message}</div>`)}
    <select name="add_fallback" aria-label="Add a fallback model" value=""
      onChange=${(e) => { if (e.target.value) onChange([...value, e.target.value]); }}>
      <option value="">add a fallback…</option>
      ${candidates.map((m) => html`<option value=${m.public_id}>${m.display_name} (${m.provider_name})${m.enabled ? "" : " — disabled, skipped"}</option>`)}
    </select>
  </div>`;
}
const PRICES = [
  ["price_input_per_mtok", "Input"],
  ["price_output_per_mtok", "Output"],
  ["price_cache_read_per_mtok", "Cache read"],
  ["price_cache_write_per_mtok", "Cache write"],
];

// A price in USD per million tokens as the pages show it; null is unknown.
function usd(value) {
  return value == null ? "—" : `$${Number(value).toLocaleString("en-US", { maximumFractionDigits: 4 })}`;
}

// The shipped price list (its source, date and prices by model id), read once per page.
function usePriceList(onError) {
  const [list, setList] = useState(null);
  useEffect(() => {
    api("GET", "/price-list").then(setList, onError);
  }, []);
  return list;
}

// What a model's prices are and where they came from, for its row of the table.
function PriceCell({ model, priceList }) {
  const known = PRICES.some(([name]) => model[name] != null);
  if (!known) return html`<td data-prices="none"><span class="muted">unknown</span></td>`;
  // The date of the list the prices were read from, which may be older than the shipped one.
  const from = model.price_source === "list"
    ? html` <span class="badge" title=${priceList ? `Filled in from the price list: ${priceList.source}` : "Filled in from the price list"}>price list, ${model.price_list_as_of}</span>`
    : model.price_source === "provider"
      ? html` <span class="badge" title="Filled in from the provider's own model listing when the model was added">from provider</span>`
      : null;
  return html`<td data-prices=${model.price_source || "user"}>
    in ${usd(model.price_input_per_mtok)} · out ${usd(model.price_output_per_mtok)}${from}
    <div class="muted">cache read ${usd(model.price_cache_read_per_mtok)} · write ${usd(model.price_cache_write_per_mtok)}</div>
  </td>`;
}

// A model that a turn cannot run on, as lists label it.
function notChat(kind) {
  return html`<span class="badge" data-kind=${kind}>${kind} · not a chat model</span>`;
}

// The image model (GenerateImage's): one at most, marked or unmarked from its row.
function useImageModel(onError) {
  const [imageModel, setImageModel] = useState(null);
  async function reload() {
    try {
      setImageModel((await api("GET", "/settings/image-model")).public_id);
    } catch (err) {
      onError(err);
    }
  }
  async function mark(publicId) {
    try {
      setImageModel((await api("PUT", "/settings/image-model", { public_id: publicId })).public_id);
    } catch (err) {
      onError(err);
    }
  }
  useEffect(() => { reload(); }, []);
  return { imageModel, reloadImageModel: reload, markImageModel: mark };
}

// Only an image model (its kind) on a provider type with an images API (the server says
// which) can be marked.
function ImageCell({ model, generatesImages, imageModel, onMark }) {
  if (model.public_id === imageModel) {
    return html`<span class="badge ok">image model</span>
      <button aria-label=${`Unmark: stop generating images with ${model.display_name}`} onClick=${() => onMark(null)}>Unmark</button>`;
  }
  if (!generatesImages || !model.generates_images) return html`<span class="muted">—</span>`;
  return html`<button aria-label=${`Use for images: generate images with ${model.display_name}`} onClick=${() => onMark(model.public_id)}>Use for images</button>`;
}

// "models[0].max_output_tokens" -> "max_output_tokens": a one-model save names index 0; a
// fallback entry ("models[0].fallbacks[1]") is shown at the fallback list.
function localError(error) {
  if (!error || !error.fields || !error.fields.length) return error;
  const fields = error.fields.map((p) => {
    const match = /^models\[\d+\]\.([a-z_]+)/.exec(p.field);
    return match ? { ...p, field: match[1] } : p;
  });
  // An Error's message is its own but not enumerable: copied by name, or the field shows none.
  return Object.assign(Object.create(Object.getPrototypeOf(error)), error, { message: error.message, fields, field: fields[0].field });
}

function Discover({ provider, saved, priceList, onSaved }) {
  const [found, setFound] = useState(null);
  const [chosen, setChosen] = useState(new Set());
  const [filter, setFilter] = useState("");
  const [error, setError] = useState(null);
  const [busy, setBusy] = useState(false);
  const known = new Set(saved.map((m) => m.model_id));

  async function discover() {
    setBusy(true);
    setError(null);
    try {
      const answer = await api("POST", `/providers/${provider.id}/models/discover`);
      setFound(answer.models);
      setChosen(new Set());
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  }

  async function add() {
    const byId = new Map((found || []).map((m) => [m.id, m]));
    const models = [...chosen].map((id, index) => ({
      model_id: id,
      display_name: id,
      kind: byId.get(id).kind,
      // Anthropic needs max_output_tokens before a model can be enabled: add it disabled. A
      // model that is not a chat model is added disabled too: Cursor's picker is for chat.
      enabled: provider.type !== "anthropic" && byId.get(id).chat,
      sort_order: saved.length + index,
    }));
    setBusy(true);
    setError(null);
    try {
      await api("POST", `/providers/${provider.id}/models`, { models });
      setFound(null);
      onSaved();
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  }

  const shown = (found || []).filter((m) => m.id.toLowerCase().includes(filter.toLowerCase()));
  const chatIds = (found || []).filter((m) => m.chat && !known.has(m.id)).map((m) => m.id);
  return html`<div class="panel" role="region" aria-label=${`Discover ${provider.name}`}>
    <div class="row">
      <strong>${provider.name}</strong><span class="muted">${provider.type} · ${provider.base_url}</span>
      <button onClick=${discover} disabled=${busy}>Discover models</button>
    </div>
    <${FormError} error=${error} labels=${{ ...MODEL_FIELDS, ...OTHER_MODEL_FIELDS }} />
    ${found &&
    html`<div>
      <div class="row" style="margin:10px 0">
        <input aria-label="Filter models" placeholder="filter" value=${filter} onInput=${(e) => setFilter(e.target.value)} />
        <span class="muted">${found.length} found, ${chosen.size} chosen</span>
        <button onClick=${() => setChosen(new Set(chatIds))} disabled=${busy || chatIds.length === 0}>Choose all chat models</button>
        <button class="primary" onClick=${add} disabled=${busy || chosen.size === 0}>Add ${chosen.size} model${chosen.size === 1 ? "" : "s"}</button>
      </div>
      ${found.length === 0 &&
      html`<p class="muted" data-hint="nothing-listed">The provider lists no models: add one by its id below.</p>`}
      <div style="max-height:260px;overflow:auto">
        ${shown.map(
          (m) => html`<label style="display:block;padding:2px 0" data-discovered=${m.id}>
            <input type="checkbox" name="discovered" value=${m.id} disabled=${known.has(m.id)} checked=${chosen.has(m.id) || known.has(m.id)}
              onChange=${(e) => {
                const next = new Set(chosen);
                e.target.checked ? next.add(m.id) : next.delete(m.id);
                setChosen(next);
              }} />
            ${" "}${m.id}${known.has(m.id) ? html` <span class="muted">(added)</span>` : null}
            ${!m.chat && html` ${notChat(m.kind)}`}
            ${m.prices &&
            html` <span class="muted" data-listed-price=${m.price_source}>${m.price_source === "provider" ? "from provider" : "price list"}: in ${usd(m.prices.price_input_per_mtok)} · out ${usd(m.prices.price_output_per_mtok)}</span>`}
          </label>`,
        )}
      </div>
      <p class="muted">Models that are not chat models (embeddings, speech, transcription, moderation, images, …) are listed but not chosen by "Choose all chat models"; one added is added disabled, out of Cursor's model picker.</p>
      ${provider.type === "anthropic" &&
      html`<p class="muted">Anthropic models are added disabled: set their max output tokens, then enable them.</p>`}
    </div>`}
    <${AddById} provider=${provider} saved=${saved} priceList=${priceList} onSaved=${onSaved} />
  </div>`;
}

// The price list's entry for a model id exactly as typed or listed, or null: only to show the
// list's prices; which prices a new model gets is the server's rule (it fills them in).
function listedOf(priceList, modelId) {
  return (priceList && priceList.models[modelId.trim()]) || null;
}

const BLANK_PRICES = Object.fromEntries(PRICES.map(([name]) => [name, ""]));
const BLANK_ADD = { model_id: "", display_name: "", max_output_tokens: "", images: false, ...BLANK_PRICES };
const ADD_FIELDS = ["model_id", "display_name", "max_output_tokens", ...PRICES.map(([name]) => name)];

// Add a model by its id, for a provider whose listing fails or lists nothing (or a model it
// does not list). Only a new id is added (the server refuses one already saved, so adding
// never overwrites it); prices left empty are the price list's for a listed id (the server
// fills them in; the boxes show them as placeholders), or unknown.
function AddById({ provider, saved, priceList, onSaved }) {
  const [open, setOpen] = useState(false);
  const [form, setForm] = useState(BLANK_ADD);
  // Number boxes whose text the browser cannot read as a number (it reports them as empty).
  const [bad, setBad] = useState(new Set());
  const [error, setError] = useState(null);
  const [busy, setBusy] = useState(false);
  const listed = listedOf(priceList, form.model_id);
  const number = (name) => (e) => {
    const next = new Set(bad);
    e.target.validity && e.target.validity.badInput ? next.add(name) : next.delete(name);
    setBad(next);
    setForm({ ...form, [name]: e.target.value });
  };

  async function add(event) {
    event.preventDefault();
    setError(null);
    const modelId = form.model_id.trim();
    const problems = unreadableNumbers(textOf(form), bad);
    if (saved.some((m) => m.model_id === modelId)) {
      problems.unshift({ field: "model_id", message: `this provider already has the model ${modelId}: edit it in the models table instead` });
    }
    if (problems.length) {
      setError(formError(problems));
      return;
    }
    const maxOutput = form.max_output_tokens.trim() === "" ? null : Number(form.max_output_tokens);
    const model = {
      model_id: form.model_id,
      display_name: form.display_name.trim() || modelId || form.model_id,
      max_output_tokens: maxOutput,
      // Anthropic needs max_output_tokens before a model can be enabled; an image model is
      // not offered in Cursor's picker.
      enabled: !form.images && (provider.type !== "anthropic" || maxOutput != null),
      sort_order: saved.length,
    };
    // Unticked, the server reads what the model is for from its name.
    if (form.images) model.kind = "image";
    // Only the prices typed: none typed, the server fills in the list's (or unknown).
    for (const [name] of PRICES) if (form[name].trim() !== "") model[name] = Number(form[name]);
    setBusy(true);
    try {
      await api("POST", `/providers/${provider.id}/models`, { models: [model], only_new: true });
      setForm(BLANK_ADD);
      setBad(new Set());
      setOpen(false);
      onSaved();
    } catch (err) {
      setError(localError(err));
    } finally {
      setBusy(false);
    }
  }

  if (!open) {
    return html`<div class="row" style="margin-top:8px">
      <button onClick=${() => setOpen(true)} aria-label=${`Add a model by id to ${provider.name}`}>Add a model by id</button>
    </div>`;
  }
  return html`<form noValidate onSubmit=${add} aria-label=${`Add a model to ${provider.name} by id`} style="margin-top:8px">
    <div class="row">
      <${Field} label="Model id (as the provider names it)" name="model_id" error=${error}>
        <input name="model_id" aria-label="Model id" placeholder="e.g. gpt-4o, llama3.1:8b" class=${invalid(error, "model_id")}
          value=${form.model_id} onInput=${(e) => setForm({ ...form, model_id: e.target.value })} />
      </${Field}>
      <${Field} label="Display name (empty: the id)" name="display_name" error=${error}>
        <input name="display_name" aria-label="Display name" class=${invalid(error, "display_name")}
          value=${form.display_name} onInput=${(e) => setForm({ ...form, display_name: e.target.value })} />
      </${Field}>
      <${Field} label=${provider.type === "anthropic" ? "Max output tokens (empty: added disabled)" : "Max output tokens"} name="max_output_tokens" error=${error}>
        <input name="max_output_tokens" aria-label="Max output tokens" type="number" min="1" class=${invalid(error, "max_output_tokens")}
          value=${form.max_output_tokens} onInput=${number("max_output_tokens")} />
      </${Field}>
    </div>
    <div class="row">
      ${PRICES.map(([name, label]) => html`<${Field} label=${`${label}, USD per million tokens`} name=${name} error=${error}>
        <input name=${name} aria-label=${`${label} price, USD per million tokens`} type="number" step="any" class=${invalid(error, name)}
          placeholder=${listed && listed[name] != null ? String(listed[name]) : ""}
          value=${form[name]} onInput=${number(name)} />
      </${Field}>`)}
    </div>
    <label><input type="checkbox" name="images" checked=${form.images}
      onChange=${(e) => setForm({ ...form, images: e.target.checked })} /> It generates images (an image model for GenerateImage, not a chat model)</label>
    ${listed && priceList &&
    html`<p class="muted" data-hint="listed-price">Prices left empty are the price list's (${priceList.as_of}), shown in grey; type yours if they differ.</p>`}
    <${FormError} error=${error} fields=${ADD_FIELDS} />
    <div class="actions">
      <button class="primary" type="submit" disabled=${busy}>Add model</button>
      <button type="button" onClick=${() => { setOpen(false); setError(null); }}>Cancel</button>
    </div>
  </form>`;
}

const NUMBER_FIELDS = ["max_output_tokens", "context_window_tokens", "sort_order", ...PRICES.map(([name]) => name)];

// A number box the browser cannot read still goes to the server, as a value the server's rules
// always refuse (an order past the 32-bit range, a count or price below zero), so the one answer
// names every other problem too; the box then shows the browser's own words, not the server's.
const REFUSED_NUMBER = { sort_order: 2 ** 31 };

function withRefused(input, unreadable) {
  const body = { ...input };
  for (const { field } of unreadable) body[field] = REFUSED_NUMBER[field] ?? -1;
  return body;
}

// The server's problems with the browser's in place of those at the boxes it could not read.
function merged(error, unreadable) {
  if (!unreadable.length) return error;
  const ours = new Set(unreadable.map((p) => p.field));
  const theirs = ((error && error.fields) || []).filter((p) => !ours.has(p.field));
  return formError([...unreadable, ...theirs]);
}

// Number fields are kept as the typed text ("1." stays "1." while a price is typed) and
// converted only when saved; empty is null.
function textOf(input) {
  const form = { ...input };
  for (const name of NUMBER_FIELDS) form[name] = form[name] == null ? "" : String(form[name]);
  return form;
}

function inputFrom(form) {
  const input = { ...form };
  for (const name of NUMBER_FIELDS) input[name] = form[name].trim() === "" ? null : Number(form[name]);
  return input;
}

const WHOLE_NUMBERS = new Set(["max_output_tokens", "context_window_tokens", "sort_order"]);

// What the browser already knows is not a number (typed text a number box cannot hold), in words.
function unreadableNumbers(form, bad) {
  const problems = [];
  for (const name of NUMBER_FIELDS) {
    const text = form[name].trim();
    if (bad.has(name) || (text !== "" && !Number.isFinite(Number(text)))) problems.push({ field: name, message: "is not a number" });
    else if (WHOLE_NUMBERS.has(name) && text !== "" && !Number.isInteger(Number(text))) problems.push({ field: name, message: "must be a whole number" });
  }
  return problems;
}

// ``efforts``: the reasoning efforts the server lists for the model's provider type.
function ModelEditor({ model, models, providerType, efforts, onSaved, onCancel }) {
  const [form, setForm] = useState(textOf(inputOf(model)));
  // The "generates images" box: the kind is sent only when it changed, so an edit never
  // rewrites what the model is for.
  const [images, setImages] = useState(model.generates_images);
  const [error, setError] = useState(null);
  // Number boxes whose text the browser cannot read as a number (it reports them as empty).
  const [bad, setBad] = useState(new Set());
  const focusRef = useOpenedFocus();
  const number = (name) => (e) => {
    const next = new Set(bad);
    e.target.validity && e.target.validity.badInput ? next.add(name) : next.delete(name);
    setBad(next);
    setForm({ ...form, [name]: e.target.value });
  };

  async function save(event) {
    event.preventDefault();
    setError(null);
    const unreadable = unreadableNumbers(form, bad);
    const input = withRefused(inputFrom(form), unreadable);
    try {
      if (images !== model.generates_images) input.kind = images ? "image" : "chat";
      await api("POST", `/providers/${model.provider_id}/models`, { models: [input] });
      if (unreadable.length) setError(formError(unreadable)); // never reached: the server refuses
      else onSaved();
    } catch (err) {
      setError(merged(localError(err), unreadable));
    }
  }

  return html`<form class="panel" noValidate onSubmit=${save} aria-label="Edit model" ref=${focusRef}>
    <h2>${model.model_id} <span class="muted">(${model.public_id})</span></h2>
    <div class="row">
      <${Field} label="Display name" name="display_name" error=${error}>
        <input name="display_name" class=${invalid(error, "display_name")} value=${form.display_name}
          onInput=${(e) => setForm({ ...form, display_name: e.target.value })} />
      </${Field}>
      <${Field} label="Order" name="sort_order" error=${error}>
        <input name="sort_order" type="number" class=${invalid(error, "sort_order")} value=${form.sort_order} onInput=${number("sort_order")} />
      </${Field}>
    </div>
    <div class="row">
      <${Field} label=${providerType === "anthropic" ? "Max output tokens (required)" : "Max output tokens"} name="max_output_tokens" error=${error}>
        <input name="max_output_tokens" type="number" min="1" class=${invalid(error, "max_output_tokens")}
          value=${form.max_output_tokens} onInput=${number("max_output_tokens")} />
      </${Field}>
      <${Field} label="Context window (tokens)" name="context_window_tokens" error=${error}>
        <input name="context_window_tokens" type="number" min="1" class=${invalid(error, "context_window_tokens")}
          value=${form.context_window_tokens} onInput=${number("context_window_tokens")} />
        ${!form.context_window_tokens &&
        html`<span class="muted" data-hint="no-compaction">Empty: long conversations are never compacted automatically (at 80 % of the window).</span>`}
      </${Field}>
    </div>
    <div class="row">
      <label><input type="checkbox" name="enabled" checked=${form.enabled}
        onChange=${(e) => setForm({ ...form, enabled: e.target.checked })} /> Enabled (offered in Cursor's model picker)</label>
      <label><input type="checkbox" name="generates_images" checked=${images}
        onChange=${(e) => setImages(e.target.checked)} /> It generates images (not a chat model)</label>
      <label><input type="checkbox" name="reasoning_enabled" checked=${form.reasoning_enabled}
        onChange=${(e) => setForm({ ...form, reasoning_enabled: e.target.checked })} /> Reasoning</label>
      <${Field} label="Effort" name="reasoning_effort" error=${error}>
        <select name="reasoning_effort" class=${invalid(error, "reasoning_effort")} value=${form.reasoning_effort ?? ""}
          disabled=${!form.reasoning_enabled} title=${form.reasoning_enabled ? undefined : "Turn reasoning on to choose an effort"}
          onChange=${(e) => setForm({ ...form, reasoning_effort: e.target.value || null })}>
          <option value="">provider default</option>
          ${efforts.map((effort) => html`<option value=${effort}>${effort}</option>`)}
        </select>
      </${Field}>
    </div>
    <h2>Prices, USD per million tokens <span class="muted">(empty: unknown, so such calls count as unknown cost)</span></h2>
    ${model.price_source === "list" &&
    html`<p class="muted" data-hint="price-source">From the price list (${model.price_list_as_of}); a price you change here is yours, and the list never replaces it.</p>`}
    ${model.price_source === "provider" &&
    html`<p class="muted" data-hint="price-source">From the provider's own model listing, read when the model was added; a price you change here is yours, and the listing never replaces it.</p>`}
    <div class="row">
      ${PRICES.map(([name, label]) => html`<${Field} label=${label} name=${name} error=${error}>
        <input name=${name} type="number" step="any" class=${invalid(error, name)}
          value=${form[name]} onInput=${number(name)} />
      </${Field}>`)}
    </div>
    <${FallbackList} model=${model} models=${models} value=${form.fallbacks} error=${error}
      onChange=${(fallbacks) => setForm({ ...form, fallbacks })} />
    <${FormError} error=${error} fields=${MODEL_FIELDS} labels=${OTHER_MODEL_FIELDS} />
    <div class="actions">
      <button class="primary" type="submit">Save model</button>
      <button type="button" onClick=${onCancel}>Cancel</button>
    </div>
  </form>`;
}

// The verdict of a model test or of its tools-and-reasoning check, as the API gives it.
function CheckResult({ result }) {
  if (!result) return null;
  const { model, kind, answer, error } = result;
  if (error) return html`<div class="panel" role="region" aria-label="Check result"><${FormError} error=${error} /></div>`;
  if (kind === "test") {
    return html`<div class="panel" role="region" aria-label="Check result">
      <h2>Test of ${model.display_name}: ${answer.ok ? html`<span class="badge ok">passed</span>` : html`<span class="badge bad">failed</span>`}</h2>
      ${answer.ok
        ? html`<div class="cards">
            <div class="card"><div class="k">TTFT</div><div class="v">${ms(answer.ttft_ms)}</div></div>
            <div class="card"><div class="k">Total</div><div class="v">${ms(answer.total_ms)}</div></div>
            <div class="card"><div class="k">Input</div><div class="v">${count(answer.usage && answer.usage.input_tokens)}</div></div>
            <div class="card"><div class="k">Output</div><div class="v">${count(answer.usage && answer.usage.output_tokens)}</div></div>
          </div>
          <p>Answer: <q data-answer>${answer.answer}</q></p>`
        : html`<div class="form-error" role="alert">${answer.error}</div>`}
      ${answer.call_id != null && html`<p><a href=${`#/calls/${answer.call_id}`}>The call's record</a></p>`}
    </div>`;
  }
  return html`<div class="panel" role="region" aria-label="Check result">
    <h2>Tools and reasoning, ${model.display_name}: ${answer.ok ? html`<span class="badge ok">passed</span>` : html`<span class="badge bad">failed</span>`}</h2>
    <table><tbody>${answer.steps.map(
      (step) => html`<tr data-step=${step.name}><td>${step.name}</td>
        <td>${step.ok ? html`<span class="badge ok">ok</span>` : html`<span class="badge bad">failed</span>`}</td>
        <td style="white-space:normal">${step.detail}</td></tr>`,
    )}</tbody></table>
  </div>`;
}

export function ModelsPage({ providerId }) {
  const [editing, setEditing] = useState(null);
  const [error, setError] = useState(null);
  const [check, setCheck] = useState(null);
  const [checking, setChecking] = useState(null);

  async function runCheck(model, kind) {
    const path = kind === "test" ? "test" : "check-tools";
    setChecking(`${model.public_id}:${kind}`);
    setCheck(null);
    try {
      const answer = await api("POST", `/models/${model.public_id}/${path}`);
      setCheck({ model, kind, answer });
    } catch (err) {
      setCheck({ model, kind, error: err });
    } finally {
      setChecking(null);
    }
  }

  const { providers, models, reload: loadCatalog } = useCatalog(setError);
  const types = useProviderTypes(setError);
  const { imageModel, reloadImageModel, markImageModel } = useImageModel(setError);
  const priceList = usePriceList(setError);
  // A deleted model stops being the image model: both are read again after a change.
  const load = () => { loadCatalog(); reloadImageModel(); };
  async function mark(publicId) {
    setError(null);
    await markImageModel(publicId);
  }

  async function remove(model) {
    if (!window.confirm(`Delete the model ${model.display_name}? Its call records stay.`)) return;
    try {
      await api("DELETE", `/models/${model.public_id}`);
      load();
    } catch (err) {
      setError(err);
    }
  }

  if (providers === null || types === null) return html`<div><h1>Models</h1><${FormError} error=${error} /><p class="loading">Loading…</p></div>`;
  const shownProviders = providerId ? providers.filter((p) => String(p.id) === String(providerId)) : providers;
  const typeOf = (id) => (providers.find((p) => p.id === id) || {}).type;
  const infoOf = (id) => typeInfo(types, typeOf(id));
  return html`<div>
    <h1>Models</h1>
    <${FormError} error=${error} />
    ${providers.length === 0 && html`<p class="muted">Add a provider first, on the <a href="#/providers">Providers</a> page.</p>`}
    ${shownProviders.map(
      (p) => html`<${Discover} provider=${p} saved=${models.filter((m) => m.provider_id === p.id)} priceList=${priceList} onSaved=${load} />`,
    )}
    ${editing &&
    html`<${ModelEditor} key=${editing.public_id} model=${editing} models=${models} providerType=${typeOf(editing.provider_id)}
      efforts=${infoOf(editing.provider_id)?.reasoning_efforts || []}
      onCancel=${() => setEditing(null)} onSaved=${() => { setEditing(null); load(); }} />`}
    <${CheckResult} result=${check} />
    ${models.length > 0 &&
    html`<div class="table-wrap"><table>
      <thead><tr><th>Model</th><th>Provider</th><th>Public id</th><th>Enabled</th><th title="USD per million tokens">Prices per Mtok</th>
        <th class="num">Max output</th><th class="num">Context</th><th>Reasoning</th><th>Fallbacks</th><th>Images</th><th></th></tr></thead>
      <tbody>${models
        .filter((m) => !providerId || String(m.provider_id) === String(providerId))
        .map(
          (m) => html`<tr data-model=${m.model_id}>
            <td>${m.display_name}${m.display_name !== m.model_id ? html` <span class="muted">${m.model_id}</span>` : null}${m.chat ? null : html` ${notChat(m.kind)}`}</td>
            <td>${m.provider_name}</td><td><code>${m.public_id}</code></td>
            <td>${m.enabled ? html`<span class="badge ok">on</span>` : html`<span class="badge">off</span>`}</td>
            <${PriceCell} model=${m} priceList=${priceList} />
            <td class="num">${m.max_output_tokens ?? "—"}</td><td class="num" data-context=${m.context_window_tokens ? "set" : "unset"}>${m.context_window_tokens ??
              html`<span class="muted" title="Without a context window the conversation is never compacted automatically, only when the provider refuses a request for its length">— never compacted automatically</span>`}</td>
            <td>${m.reasoning_enabled ? m.reasoning_effort || "on" : "off"}</td>
            <td data-fallbacks=${(m.fallbacks || []).join(" ")}>${(m.fallbacks || []).length
              ? (m.fallbacks || []).map((id) => nameOf(models, id)).join(" → ")
              : html`<span class="muted">—</span>`}</td>
            <td data-image=${m.public_id === imageModel ? "marked" : ""}><${ImageCell} model=${m}
              generatesImages=${Boolean(infoOf(m.provider_id)?.generates_images)}
              imageModel=${imageModel} onMark=${mark} /></td>
            <td><div class="actions">
              <button onClick=${() => runCheck(m, "test")} disabled=${checking !== null}>
                ${checking === `${m.public_id}:test` ? "Testing…" : "Test"}</button>
              <button onClick=${() => runCheck(m, "tools")} disabled=${checking !== null}>
                ${checking === `${m.public_id}:tools` ? "Checking…" : "Tools and reasoning"}</button>
              <button onClick=${() => setEditing(m)}>Edit</button>
              <button class="danger" onClick=${() => remove(m)}>Delete</button>
            </div></td></tr>`,
        )}</tbody></table></div>
      ${priceList && html`<p class="muted" data-price-list>Prices marked "price list" were filled in from ${priceList.source}, each with the date of the list it came from (the list shipped now is of ${priceList.as_of}); prices marked "from provider" were read from the provider's own model listing when the model was added (preferred over the list); edit a model to set your own.</p>`}
      <p class="muted">The image model (an image model of an OpenAI-compatible provider, such as gpt-image-1) makes the images the agent's GenerateImage asks for; with none marked, the agent is not offered that tool.</p>`}
  </div>`;
}
