// The providers and models the pages list, loaded together; ``reload`` after a change.
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
