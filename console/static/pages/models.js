// Models: the table of every model (a provider's alone at #/models/<id>) with its checks and
// their verdict, edit, delete and image mark, and each provider's discovery panel. The forms live
// beside it: model_discovery.js, model_add.js, model_editor.js and the modules they share.
import { useEffect, useState } from "preact/hooks";
import { api } from "../api.js";
import { typeInfo, useCatalog, useProviderTypes } from "../catalog.js";
import { FormError, count, html, ms } from "../ui.js";
import { Discover } from "./model_discovery.js";
import { ModelEditor } from "./model_editor.js";
import { nameOf, notChat } from "./model_names.js";
import { PriceCell, usePriceList } from "./model_prices.js";

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
