// The model forms' fields, shared by the editor and "Add a model by id" so both read and show
// them alike: their words, the typed text the number boxes hold, and the problems at them, the
// browser's own (a box it cannot read) and the server's (named ``models[0].field``).
import { useState } from "preact/hooks";
import { formError } from "../api.js";
import { PRICES } from "./model_prices.js";

// The model editor's fields in words, for the messages a refused save has for them: those it
// shows at their place, and the others.
export const MODEL_FIELDS = {
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
export const OTHER_MODEL_FIELDS = { model_id: "Model id", enabled: "Enabled", reasoning_enabled: "Reasoning" };

// The ModelInput the API takes, from a saved model record.
export function inputOf(model) {
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

// "models[0].max_output_tokens" -> "max_output_tokens": a one-model save names index 0; a
// fallback entry ("models[0].fallbacks[1]") is shown at the fallback list.
export function localError(error) {
  if (!error || !error.fields || !error.fields.length) return error;
  const fields = error.fields.map((p) => {
    const match = /^models\[\d+\]\.([a-z_]+)/.exec(p.field);
    return match ? { ...p, field: match[1] } : p;
  });
  // An Error's message is its own but not enumerable: copied by name, or the field shows none.
  return Object.assign(Object.create(Object.getPrototypeOf(error)), error, { message: error.message, fields, field: fields[0].field });
}

const NUMBER_FIELDS = ["max_output_tokens", "context_window_tokens", "sort_order", ...PRICES.map(([name]) => name)];

// The server's problems with the browser's in place of those at the boxes it could not read; a
// refusal that names no field (a conflict, an unreachable server) is kept, in its own words.
export function merged(error, unreadable) {
  if (!unreadable.length) return error;
  const ours = new Set(unreadable.map((p) => p.field));
  if (error && !(error.fields && error.fields.length)) return formError([...unreadable, { field: "", message: error.message }]);
  const theirs = ((error && error.fields) || []).filter((p) => !ours.has(p.field));
  return formError([...unreadable, ...theirs]);
}

// The input without the boxes the browser could not read, for a check-only save: each takes the
// server's default, and what the server says about it gives way to the browser's words.
export function withoutUnreadable(input, unreadable) {
  const body = { ...input };
  for (const { field } of unreadable) delete body[field];
  return body;
}

// Number fields are kept as the typed text ("1." stays "1." while a price is typed) and
// converted only when saved; empty is null.
export function textOf(input) {
  const form = { ...input };
  for (const name of NUMBER_FIELDS) form[name] = form[name] == null ? "" : String(form[name]);
  return form;
}

export function inputFrom(form) {
  const input = { ...form };
  for (const name of NUMBER_FIELDS) input[name] = form[name].trim() === "" ? null : Number(form[name]);
  return input;
}

const WHOLE_NUMBERS = new Set(["max_output_tokens", "context_window_tokens", "sort_order"]);

// What the browser already knows is not a number (typed text a number box cannot hold), in words.
export function unreadableNumbers(form, bad) {
  const problems = [];
  for (const name of NUMBER_FIELDS) {
    const text = form[name].trim();
    if (bad.has(name) || (text !== "" && !Number.isFinite(Number(text)))) problems.push({ field: name, message: "is not a number" });
    else if (WHOLE_NUMBERS.has(name) && text !== "" && !Number.isInteger(Number(text))) problems.push({ field: name, message: "must be a whole number" });
  }
  return problems;
}

// A form's number boxes: their typed text into the form, and which of them hold text the
// browser cannot read as a number (it reports such a box as empty, so only its validity says).
export function useNumberBoxes(form, setForm) {
  const [bad, setBad] = useState(new Set());
  const number = (name) => (e) => {
    const next = new Set(bad);
    e.target.validity && e.target.validity.badInput ? next.add(name) : next.delete(name);
    setBad(next);
    setForm({ ...form, [name]: e.target.value });
  };
  return { bad, number, clear: () => setBad(new Set()) };
}
