// How the models page's lists name a model: by its display name and provider, and with a badge
// when a turn cannot run on it (not a chat model).
import { html } from "../ui.js";

// A model's name as lists show it: its display name and provider.
export function nameOf(models, publicId) {
  const model = models.find((m) => m.public_id === publicId);
  return model ? `${model.display_name} (${model.provider_name})` : publicId;
}

// A model that a turn cannot run on, as lists label it.
export function notChat(kind) {
  return html`<span class="badge" data-kind=${kind}>${kind} · not a chat model</span>`;
}
