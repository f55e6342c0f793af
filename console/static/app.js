// The console app: a hash router (#/providers, #/models, ...) so a reload of any page works, a
// side navigation, and the login form when the server asks for its console token. Each page
// lives in pages/ and talks to /console/api/ through api.js.
import { render } from "preact";
import { useEffect, useState } from "preact/hooks";
import { api } from "./api.js";
import { html } from "./ui.js";
import { ProvidersPage } from "./pages/providers.js";
import { ModelsPage } from "./pages/models.js";
import { CallsPage, CallDetailPage } from "./pages/calls.js";
import { SettingsPage } from "./pages/settings.js";
import { ConnectPage } from "./pages/connect.js";
import { DashboardPage } from "./pages/dashboard.js";
import { PeoplePage } from "./pages/people.js";
import { ConversationPage, ConversationsPage } from "./pages/conversations.js";
import { LoginPage } from "./pages/login.js";

// Each page: its path, its title in the navigation, and its view (given the path's arguments).
const PAGES = [
  {
    path: "dashboard",
    title: "Dashboard",
    view: (_args, query) =>
      html`<${DashboardPage} range=${query.get("range") || "day"} user=${query.get("user") || ""} />`,
  },
  { path: "providers", title: "Providers", view: () => html`<${ProvidersPage} />` },
  { path: "models", title: "Models", view: ([id]) => html`<${ModelsPage} providerId=${id || null} />` },
  {
    path: "calls",
    title: "Calls",
    view: ([id], query) =>
      id ? html`<${CallDetailPage} id=${id} />` : html`<${CallsPage} user=${query.get("user") || ""} />`,
  },
  { path: "people", title: "People", view: () => html`<${PeoplePage} />` },
  {
    path: "conversations",
    title: "Conversations",
    view: ([id]) => (id ? html`<${ConversationPage} id=${id} />` : html`<${ConversationsPage} />`),
  },
  { path: "settings", title: "Settings", view: () => html`<${SettingsPage} />` },
  { path: "connect", title: "Connect Cursor", view: () => html`<${ConnectPage} />` },
];

// The hash's path (its parts are the page and its arguments) and its query (#/calls?user=…).
function currentRoute() {
  const [path, search = ""] = location.hash.replace(/^#\/?/, "").split("?");
  const parts = (path || "providers").split("/");
  return { page: parts[0], args: parts.slice(1).map(decodeURIComponent), query: new URLSearchParams(search) };
}

function App() {
  const [route, setRoute] = useState(currentRoute());
  const [session, setSession] = useState(null);

  async function checkSession() {
    try {
      setSession(await api("GET", "/session"));
    } catch (error) {
      setSession({ auth_required: false, authenticated: true, error });
    }
  }

  useEffect(() => {
    checkSession();
    const onHash = () => setRoute(currentRoute());
    const onUnauthenticated = () => setSession({ auth_required: true, authenticated: false });
    window.addEventListener("hashchange", onHash);
    window.addEventListener("console-unauthenticated", onUnauthenticated);
    return () => {
      window.removeEventListener("hashchange", onHash);
      window.removeEventListener("console-unauthenticated", onUnauthenticated);
    };
  }, []);

  async function logout() {
    await api("POST", "/logout").catch(() => null);
    checkSession();
  }

  if (session === null) return html`<p class="loading">Loading the console…</p>`;
  if (session.auth_required && !session.authenticated) {
    return html`<${LoginPage} onLoggedIn=${checkSession} />`;
  }
  const page = PAGES.find((p) => p.path === route.page);
  const view = page
    ? page.view(route.args, route.query)
    : html`<div><h1>Not found</h1><p>No console page <code>${route.page}</code>.</p></div>`;
  return html`<div class="layout">
    <nav class="side" aria-label="Console">
      <div class="brand">cursor-server</div>
      ${PAGES.map(
        (p) => html`<a href=${`#/${p.path}`} class=${route.page === p.path ? "active" : ""}>${p.title}</a>`,
      )}
      ${session.auth_required && html`<a href="#" onClick=${(e) => { e.preventDefault(); logout(); }}>Log out</a>`}
    </nav>
    <main>${view}</main>
  </div>`;
}

const root = document.getElementById("app");
root.textContent = ""; // the static "Loading…" placeholder
render(html`<${App} />`, root);
