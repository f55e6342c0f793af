// The console API over fetch: JSON in and out; a refused request throws ApiError carrying the
// server's own {code, message} and, where the message names one, the field it is about.

export class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
    this.field = fieldOf(message);
  }
}

// "models[0].max_output_tokens: must be ..." (our rule checks) or "... at `$.base_url`" (msgspec).
export function fieldOf(message) {
  const rule = /^([A-Za-z_][\w]*(?:\[\d+\])?(?:\.[A-Za-z_]\w*(?:\[\d+\])?)*): /.exec(message || "");
  if (rule) return rule[1];
  const typed = /at `\$\.([^`]+)`/.exec(message || "");
  return typed ? typed[1] : null;
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
    throw new ApiError(response.status, "internal", `not a JSON answer (HTTP ${response.status})`);
  }
  if (!response.ok) {
    const code = (data && data.code) || "unknown";
    const message = (data && data.message) || `HTTP ${response.status}`;
    const error = new ApiError(response.status, code, message);
    if (response.status === 401) window.dispatchEvent(new CustomEvent("console-unauthenticated"));
    throw error;
  }
  return data;
}
