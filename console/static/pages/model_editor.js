// The model editor: one saved model's settings, prices and ordered fallbacks. A box the browser cannot
// read is never sent: the rest is checked by the server (a check-only save, which writes
// nothing), so one pass shows the browser's problems and the server's together.
import { useState } from "preact/hooks";
import { api } from "../api.js";
import { Field, FormError, html, invalid, problemsAt, useOpenedFocus } from "../ui.js";
import {
  MODEL_FIELDS,
  OTHER_MODEL_FIELDS,
  inputFrom,
  inputOf,
  localError,
  merged,
  textOf,
  unreadableNumbers,
  useNumberBoxes,
  withoutUnreadable,
} from "./model_fields.js";
import { nameOf } from "./model_names.js";
import { PRICES } from "./model_prices.js";

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

// What the server says of a save it only checks: null when it would accept it, else its refusal
// with each field as the form names it.
async function checked(providerId, input) {
  try {
    await api("POST", `/providers/${providerId}/models?check=1`, { models: [input] });
    return null;
  } catch (err) {
    return localError(err);
  }
}

// ``efforts``: the reasoning efforts the server lists for the model's provider type.
export function ModelEditor({ model, models, providerType, efforts, onSaved, onCancel }) {
  const [form, setForm] = useState(textOf(inputOf(model)));
  // The "generates images" box: the kind is sent only when it changed, so an edit never
  // rewrites what the model is for.
  const [images, setImages] = useState(model.generates_images);
  const [error, setError] = useState(null);
  const focusRef = useOpenedFocus();
  const { bad, number } = useNumberBoxes(form, setForm);

  async function save(event) {
    event.preventDefault();
    setError(null);
    const unreadable = unreadableNumbers(form, bad);
    const input = inputFrom(form);
    if (images !== model.generates_images) input.kind = images ? "image" : "chat";
    if (unreadable.length) {
      // Not saved: the server checks the rest, and its problems show beside the browser's.
      setError(merged(await checked(model.provider_id, withoutUnreadable(input, unreadable)), unreadable));
      return;
    }
    try {
      await api("POST", `/providers/${model.provider_id}/models`, { models: [input] });
      onSaved();
    } catch (err) {
      setError(localError(err));
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
