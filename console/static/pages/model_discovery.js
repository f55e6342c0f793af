// Discovery: list a provider's models, choose some and add them in one save; the provider's panel
// also holds "Add a model by id" for what its listing lacks.
import { useState } from "preact/hooks";
import { api } from "../api.js";
import { FormError, html } from "../ui.js";
import { AddById } from "./model_add.js";
import { MODEL_FIELDS, OTHER_MODEL_FIELDS } from "./model_fields.js";
import { notChat } from "./model_names.js";
import { usd } from "./model_prices.js";

export function Discover({ provider, saved, priceList, onSaved }) {
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
