// "Add a model by id": a form for one model its provider does not list, which only ever adds
// (never overwrites a saved model), its empty prices filled in by the server.
import { useState } from "preact/hooks";
import { api, formError } from "../api.js";
import { Field, FormError, html, invalid } from "../ui.js";
import { localError, textOf, unreadableNumbers, useNumberBoxes } from "./model_fields.js";
import { PRICES, listedOf } from "./model_prices.js";

const BLANK_PRICES = Object.fromEntries(PRICES.map(([name]) => [name, ""]));
const BLANK_ADD = { model_id: "", display_name: "", max_output_tokens: "", images: false, ...BLANK_PRICES };
const ADD_FIELDS = ["model_id", "display_name", "max_output_tokens", ...PRICES.map(([name]) => name)];

// Add a model by its id, for a provider whose listing fails or lists nothing (or a model it
// does not list). Only a new id is added (the server refuses one already saved, so adding
// never overwrites it); prices left empty are filled in by the server: the provider listing's
// if its last discovery priced the id, else the price list's if it has the id (a router's
// maker/name id by its name), else unknown. The boxes show the list's prices as placeholders
// only for an id on the list exactly as typed (the server's rule is not repeated here).
export function AddById({ provider, saved, priceList, onSaved }) {
  const [open, setOpen] = useState(false);
  const [form, setForm] = useState(BLANK_ADD);
  const [error, setError] = useState(null);
  const [busy, setBusy] = useState(false);
  const listed = listedOf(priceList, form.model_id);
  const { bad, number, clear } = useNumberBoxes(form, setForm);

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
    // Only the prices typed: the server fills in the others (the listing's, the list's or unknown).
    for (const [name] of PRICES) if (form[name].trim() !== "") model[name] = Number(form[name]);
    setBusy(true);
    try {
      await api("POST", `/providers/${provider.id}/models`, { models: [model], only_new: true });
      setForm(BLANK_ADD);
      clear();
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
    <p class="muted" data-hint="empty-prices">Prices left empty are the provider listing's, if its last discovery (within the hour) priced this id, else the price list's, if it has any; type yours if they differ.</p>
    ${listed && priceList &&
    html`<p class="muted" data-hint="listed-price">The price list's prices for this id (${priceList.as_of}) are shown in grey.</p>`}
    <${FormError} error=${error} fields=${ADD_FIELDS} />
    <div class="actions">
      <button class="primary" type="submit" disabled=${busy}>Add model</button>
      <button type="button" onClick=${() => { setOpen(false); setError(null); }}>Cancel</button>
    </div>
  </form>`;
}
