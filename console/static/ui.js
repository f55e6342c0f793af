// Small view helpers shared by the pages.
import { cloneElement, h, toChildArray } from "preact";
import { useEffect, useId, useRef } from "preact/hooks";
import htm from "htm";

export const html = htm.bind(h);

const CONTROLS = new Set(["input", "select", "textarea"]);

// The messages a refused save has for the field ``name`` (every one, the server may name several).
export function problemsAt(error, name) {
  return ((error && error.fields) || []).filter((p) => p.field === name).map((p) => p.message);
}

// A field: its label tied to its first control (``for``/``id``), and every message the refused
// save has for it below, which the control names as its description.
export function Field({ label, name, error, children }) {
  const id = useId();
  const messages = problemsAt(error, name);
  const errorId = `${id}-error`;
  let controlId = null;
  const tied = toChildArray(children).map((child) => {
    if (controlId !== null || !child || typeof child.type !== "string" || !CONTROLS.has(child.type)) return child;
    controlId = child.props.id || id;
    return cloneElement(child, {
      id: controlId,
      "aria-invalid": messages.length ? "true" : undefined,
      "aria-describedby": messages.length ? errorId : undefined,
    });
  });
  return html`<div class="field" data-field=${name}>
    ${label ? html`<label for=${controlId || undefined}>${label}</label>` : null}
    ${tied}
    ${messages.length
      ? html`<div class="error" role="alert" id=${errorId}>${messages.map((m) => html`<div>${m}</div>`)}</div>`
      : null}
  </div>`;
}

// A field id in words when no label on the form names it: "models[0].price_input_per_mtok" reads
// "Price input per mtok", "headers.X-Team" reads "Header X-Team".
export function fieldWords(field) {
  const header = /(?:^|\.)headers\.(.+)$/.exec(field);
  if (header) return `Header ${header[1]}`;
  const last = field.replace(/\[[^\]]*\]/g, "").split(".").filter(Boolean).pop() || field;
  const words = last.replace(/_/g, " ");
  return words.charAt(0).toUpperCase() + words.slice(1);
}

// A refused request's messages that no field of the form shows next to itself, each after the
// words of the field it names. ``fields``: the fields the form shows, as names or {name: label};
// ``labels``: words for fields it does not show.
export function FormError({ error, fields = [], labels: extra = {} }) {
  if (!error) return null;
  const labels = { ...extra, ...(Array.isArray(fields) ? {} : fields) };
  const shown = new Set(Array.isArray(fields) ? fields : Object.keys(fields));
  const problems = error.fields || [];
  if (!problems.length) return html`<div class="form-error" role="alert">${error.message}</div>`;
  const rest = problems.filter((p) => !shown.has(p.field));
  if (!rest.length) return null;
  return html`<div class="form-error" role="alert">${rest.map(
    // An entry without a field: the count of problems the server left out.
    (p) => html`<div>${p.field ? `${labels[p.field] || fieldWords(p.field)}: ` : ""}${p.message}</div>`,
  )}</div>`;
}

export function invalid(error, name) {
  return problemsAt(error, name).length ? "invalid" : "";
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

// Focus for a form or dialog that opens in the page: moved to its first control (or the one
// marked data-autofocus) when it opens, and back to what opened it when it closes, unless the
// user has put focus elsewhere. An opener that is gone by then (hidden while the form is open) is
// found again by its data-opener name. Returns the ref for the form's root element.
// The element focused last: an opener the same render removed (the page hides "Add provider"
// while its form is open) is no longer document.activeElement when the form's effect runs.
let lastFocused = null;
document.addEventListener("focusin", (event) => { lastFocused = event.target; });

export function useOpenedFocus() {
  const ref = useRef(null);
  useEffect(() => {
    const active = document.activeElement;
    const opener = active && active !== document.body ? active : lastFocused;
    const name = opener && opener.dataset ? opener.dataset.opener : undefined;
    const root = ref.current;
    const first = root && (root.querySelector("[data-autofocus]") || root.querySelector("input, select, textarea, button"));
    if (first) first.focus();
    return () =>
      setTimeout(() => {
        if (document.activeElement && document.activeElement !== document.body) return;
        if (opener && opener.isConnected && opener !== document.body) opener.focus();
        else if (name) document.querySelector(`[data-opener="${name}"]`)?.focus();
      }, 0);
  }, []);
  return ref;
}
