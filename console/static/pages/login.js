// The login form, shown when the server asks for its console token (a non-loopback address).
import { useState } from "preact/hooks";
import { api, formError } from "../api.js";
import { Field, FormError, html } from "../ui.js";

export function LoginPage({ onLoggedIn }) {
  const [token, setToken] = useState("");
  const [error, setError] = useState(null);
  async function login(event) {
    event.preventDefault();
    setError(null);
    if (token === "") {
      setError(formError([{ field: "token", message: "enter the console token" }]));
      return;
    }
    try {
      await api("POST", "/login", { token });
      onLoggedIn();
    } catch (err) {
      // A wrong token is the token field's problem; anything else (throttled, no answer) the form's.
      setError(err.status === 401 ? formError([{ field: "token", message: err.message }]) : err);
    }
  }
  return html`<main style="max-width:420px;margin:60px auto">
    <form class="panel" noValidate onSubmit=${login} aria-label="Log in">
      <h1>cursor-server console</h1>
      <p class="muted">This server asks for its console token (<code>CURSOR_CONSOLE_TOKEN</code>).</p>
      <${Field} label="Console token" name="token" error=${error}>
        <input name="token" type="password" autocomplete="current-password" value=${token}
          onInput=${(e) => setToken(e.target.value)} />
      </${Field}>
      <${FormError} error=${error} fields=${{ token: "Console token" }} />
      <div class="actions"><button class="primary" type="submit">Log in</button></div>
    </form>
  </main>`;
}
