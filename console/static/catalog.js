// The providers and models the pages list, loaded together (``reload`` after a change), and the
// provider types the server takes, with each type's reasoning efforts and whether its models can
// generate images: the server's own lists, so no page keeps a copy.
import { useEffect, useState } from "preact/hooks";
import { api } from "./api.js";

export function useCatalog(onError) {
  const [providers, setProviders] = useState(null); // null until the first answer
  const [models, setModels] = useState([]);
  async function reload() {
    try {
      const [p, m] = await Promise.all([api("GET", "/providers"), api("GET", "/models")]);
      setProviders(p);
      setModels(m);
    } catch (err) {
      onError(err);
    }
  }
  useEffect(() => { reload(); }, []);
  return { providers, models, reload };
}

// The types are fixed while the server runs: asked once per page load and shared by the pages.
// A refused answer (before a login, say) is forgotten, so the next page asks again.
let typesAnswer = null;

export function providerTypes() {
  if (typesAnswer === null) {
    typesAnswer = api("GET", "/provider-types").catch((err) => {
      typesAnswer = null;
      throw err;
    });
  }
  return typesAnswer;
}

// [{type, label, generates_images, reasoning_efforts}] in the server's order; null until known.
export function useProviderTypes(onError) {
  const [types, setTypes] = useState(null);
  useEffect(() => { providerTypes().then(setTypes, onError); }, []);
  return types;
}

export function typeInfo(types, type) {
  return (types || []).find((t) => t.type === type) || null;
}
