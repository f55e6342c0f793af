// Small view helpers shared by the pages.
import { h } from "preact";
import htm from "htm";

export const html = htm.bind(h);

export function Field({ label, name, error, children }) {
  return html`<div class="field" data-field=${name}>
    <label>${label}</label>
    ${children}
    ${error && error.field === name ? html`<div class="error" role="alert">${error.message}</div>` : null}
  </div>`;
}

// A refused request's message, unless a field of the form shows it next to itself.
export function FormError({ error, fields = [] }) {
  if (!error || (error.field && fields.includes(error.field))) return null;
  return html`<div class="form-error" role="alert">${error.message}</div>`;
}

export function invalid(error, name) {
  return error && error.field === name ? "invalid" : "";
}

export function ms(value) {
  return value == null ? "—" : `${Math.round(value)} ms`;
}

export function count(value) {
  return value == null ? "—" : Number(value).toLocaleString("en-US");
}

export function when(msEpoch) {
  if (msEpoch == null) return "—";
  const d = new Date(msEpoch);
  return d.toISOString().replace("T", " ").slice(0, 19) + " UTC";
}
