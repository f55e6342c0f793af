// A model's prices: the four per-million-token prices, how the pages show one, the shipped price
// list (read once per page) and its entry for a model id, and the table's price cell with where
// the prices came from.
import { useEffect, useState } from "preact/hooks";
import { api } from "../api.js";
import { html } from "../ui.js";

export const PRICES = [
  ["price_input_per_mtok", "Input"],
  ["price_output_per_mtok", "Output"],
  ["price_cache_read_per_mtok", "Cache read"],
  ["price_cache_write_per_mtok", "Cache write"],
];

// A price in USD per million tokens as the pages show it; null is unknown.
export function usd(value) {
  return value == null ? "—" : `$${Number(value).toLocaleString("en-US", { maximumFractionDigits: 4 })}`;
}

// The shipped price list (its source, date and prices by model id), read once per page.
export function usePriceList(onError) {
  const [list, setList] = useState(null);
  useEffect(() => {
    api("GET", "/price-list").then(setList, onError);
  }, []);
  return list;
}

// What a model's prices are and where they came from, for its row of the table.
export function PriceCell({ model, priceList }) {
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

// The price list's entry for a model id exactly as typed or listed, or null: only to show the
// list's prices; which prices a new model gets is the server's rule (it fills them in).
export function listedOf(priceList, modelId) {
  return (priceList && priceList.models[modelId.trim()]) || null;
}
