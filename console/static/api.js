// The console API over fetch: JSON in and out; a refused request throws ApiError carrying the
// server's own {code, message} and every field it names, each with its own message ("fields").

export class ApiError extends Error {
  constructor(status, code, message, fields) {
    super(message);
    this.status = status;
    this.code = code;
    // [{field, message}]: the server's list, else the one field a refusal's message names.
    if (Array.isArray(fields) && fields.length) this.fields = fields;
    else this.fields = status === 422 ? fieldsOf(message) : [];
    this.field = this.fields.length ? this.fields[0].field : null;
  }
}

// A refusal found before sending: [{field, message}] in words, shown like the server's.
export function formError(fields) {
  return new ApiError(0, "invalid_argument", fields.map((p) => `${p.field}: ${p.message}`).join("; "), fields);
}

// "models[0].max_output_tokens: must be ..." (our rule checks) or "... at `$.base_url`" (msgspec).
export function fieldOf(message) {
  const rule = /^([A-Za-z_][\w]*(?:\[\d+\])?(?:\.[A-Za-z_]\w*(?:\[\d+\])?)*): /.exec(message || "");
  if (rule) return rule[1];
  const typed = /at `\$\.([^`]+)`/.exec(message || "");
  return typed ? typed[1] : null;
}

function fieldsOf(message) {
  const field = fieldOf(message);
  if (!field) return [];
  const text = message.startsWith(`${field}: `) ? message.slice(field.length + 2) : message;
  return [{ field, message: text }];
}

export async function api(method, path, body) {
  const init = { method, headers: {}, credentials: "same-origin" };
  // Every mutation is JSON, body or not: the server refuses any other (a CSRF guard).
  if (method !== "GET") init.headers["Content-Type"] = "application/json";
  if (body !== undefined) init.body = JSON.stringify(body);
  let response;
  try {
    response = await fetch(`/console/api${path}`, init);
  } catch (error) {
    throw new ApiError(0, "unavailable", `the server did not answer (${error.message})`);
  }
  if (response.status === 204) return null;
  const text = await response.text();
  let data = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    throw new ApiError(response.status, "internal", `the server's answer could not be read (HTTP ${response.status})`);
  }
  if (!response.ok) {
    const code = (data && data.code) || "unknown";
    const message = (data && data.message) || `HTTP ${response.status}`;
    const error = new ApiError(response.status, code, message, data && data.fields);
    if (response.status === 401) window.dispatchEvent(new CustomEvent("console-unauthenticated"));
    throw error;
  }
  return data;
}
