// The console app: a hash router (#/providers, #/models, ...) so a reload of any page works, and
// a side navigation. Each page lives in pages/ and talks to /console/api/ through api.js.
import { render } from "preact";
import { useEffect, useState } from "preact/hooks";
import { html } from "./ui.js";
import { ProvidersPage } from "./pages/providers.js";
import { ModelsPage } from "./pages/models.js";
import { CallsPage, CallDetailPage } from "./pages/calls.js";
import { SettingsPage } from "./pages/settings.js";

const PAGES = [
  { path: "providers", title: "Providers", view: ProvidersPage },
  { path: "models", title: "Models", view: ModelsPage },
  { path: "calls", title: "Calls", view: CallsPage },
  { path: "settings", title: "Settings", view: SettingsPage },
];

function currentRoute() {
  const parts = (location.hash.replace(/^#\/?/, "") || "providers").split("/");
  return { page: parts[0], args: parts.slice(1).map(decodeURIComponent) };
}

function App() {
  const [route, setRoute] = useState(currentRoute());
  useEffect(() => {
    const onHash = () => setRoute(currentRoute());
    window.addEventListener("hashchange", onHash);
    return () => window.removeEventListener("hashchange", onHash);
  }, []);
  let view;
  if (route.page === "calls" && route.args[0]) {
    view = html`<${CallDetailPage} id=${route.args[0]} />`;
  } else if (route.page === "models") {
    view = html`<${ModelsPage} providerId=${route.args[0] || null} />`;
  } else {
    const page = PAGES.find((p) => p.path === route.page);
    view = page
      ? html`<${page.view} />`
      : html`<div><h1>Not found</h1><p>No console page <code>${route.page}</code>.</p></div>`;
  }
  return html`<div class="layout">
    <nav class="side" aria-label="Console">
      <div class="brand">cursor-server</div>
      ${PAGES.map(
        (p) => html`<a href=${`#/${p.path}`} class=${route.page === p.path ? "active" : ""}>${p.title}</a>`,
      )}
    </nav>
    <main>${view}</main>
  </div>`;
}

const root = document.getElementById("app");
root.textContent = ""; // the static "Loading…" placeholder
render(html`<${App} />`, root);
