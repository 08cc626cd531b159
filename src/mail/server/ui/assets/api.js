// The one data layer: every request to the server and every event stream goes through here.
// Streams are read with fetch() (EventSource cannot send Authorization) and parsed below.

const KEY_ITEM = "mail.apiKey";
const KEYLESS_ITEM = "mail.keyless";

export class ApiError extends Error {
  constructor(status, detail, refused = false) {
    super(refused ? `This key was refused (${status}): ${detail}` : `${status}: ${detail}`);
    this.status = status;
    this.detail = detail;
  }
}

export const session = {
  get key() { return localStorage.getItem(KEY_ITEM); },
  get keyless() { return localStorage.getItem(KEYLESS_ITEM) === "1"; },
  useKey(key) { localStorage.setItem(KEY_ITEM, key); localStorage.removeItem(KEYLESS_ITEM); },
  useKeyless() { localStorage.removeItem(KEY_ITEM); localStorage.setItem(KEYLESS_ITEM, "1"); },
  clear() { localStorage.removeItem(KEY_ITEM); localStorage.removeItem(KEYLESS_ITEM); },
  get signedIn() { return Boolean(this.key) || this.keyless; },
};

function headers(extra = {}) {
  const h = { Accept: "application/json", ...extra };
  if (session.key) h.Authorization = `Bearer ${session.key}`;
  return h;
}

async function failure(response) {
  let detail = response.statusText || "request failed";
  try {
    const body = await response.json();
    if (body && body.detail !== undefined) {
      detail = typeof body.detail === "string" ? body.detail : JSON.stringify(body.detail);
    }
  } catch { /* not JSON: keep the status text */ }
  return new ApiError(response.status, detail, response.status === 401);
}

async function call(method, path, body, extraHeaders = {}) {
  const init = { method, headers: headers(extraHeaders) };
  if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  let response;
  try {
    response = await fetch(path, init);
  } catch (e) {
    throw new ApiError(0, `the server cannot be reached (${e.message})`);
  }
  if (!response.ok) throw await failure(response);
  return response;
}

const json = async (method, path, body) => (await call(method, path, body)).json();

// --- server-sent events ----------------------------------------------------------------

/** An incremental SSE parser: feed() text, get back complete events {event, data, id}. */
export class SSEParser {
  constructor() { this.buffer = ""; this.fields = { data: [] }; }

  feed(text) {
    let input = this.buffer + text;
    // a trailing "\r" may be the first half of "\r\n": keep it for the next chunk
    const carry = input.endsWith("\r") ? "\r" : "";
    if (carry) input = input.slice(0, -1);
    const out = [];
    const lines = input.split(/\r\n|\r|\n/);
    this.buffer = lines.pop() + carry;
    for (const line of lines) {
      const event = this.line(line);
      if (event) out.push(event);
    }
    return out;
  }

  line(line) {
    if (line === "") {
      const { event, data, id } = this.fields;
      this.fields = { data: [] };
      if (!data.length && !event) return null;
      return { event: event || "message", data: data.join("\n"), id: id ?? null };
    }
    if (line.startsWith(":")) return null;
    const colon = line.indexOf(":");
    const name = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (name === "data") this.fields.data.push(value);
    else if (name === "event" || name === "id") this.fields[name] = value;
    return null;
  }
}

const CLOSING = new Set(["task_complete", "task_error"]);
export const isClosing = (event) => CLOSING.has(event.event) && event.id === null;

/** Read an SSE response; calls onEvent({event, data (parsed), id}); returns the closing event. */
async function readEvents(response, onEvent) {
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  const parser = new SSEParser();
  let closing = null;
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    for (const raw of parser.feed(value)) {
      let data;
      try { data = JSON.parse(raw.data); } catch { data = raw.data; }
      const event = { event: raw.event, data, id: raw.id };
      if (event.event === "ping") continue;
      onEvent(event);
      if (isClosing(event)) closing = event;
    }
  }
  return closing;
}

// --- MAP Mail: JSON-RPC on POST /map, map/event notifications on GET /map/events ----------

/** A JSON-RPC error answered by POST /map: code (10010: MAP Mail is off), message, data. */
export class MapError extends Error {
  constructor(code, message, data) {
    super(`${code}: ${message}`);
    this.code = code;
    this.data = data;
  }
}
export const MAIL_NOT_ENABLED = 10010;

let rpcId = 0;
async function rpc(method, params = {}) {
  const answer = await json("POST", "/map", { jsonrpc: "2.0", id: ++rpcId, method, params });
  if (answer.error) throw new MapError(answer.error.code, answer.error.message, answer.error.data);
  return answer.result;
}

/** End a subscription; keepalive lets it go out while the page unloads. */
function unsubscribe(subscriptionId, keepalive = false) {
  const body = JSON.stringify({ jsonrpc: "2.0", method: "map/unsubscribe", params: { subscriptionId } });
  fetch("/map", { method: "POST", keepalive, headers: headers({ "Content-Type": "application/json" }), body })
    .catch(() => { /* the server ends it when it stops */ });
}

/** Every page of a paged mail/* method's `name` list. */
async function allPages(method, params, name) {
  const out = [];
  let cursor;
  do {
    const page = await rpc(method, cursor ? { ...params, cursor } : params);
    out.push(...page[name]);
    cursor = page.nextCursor;
  } while (cursor);
  return out;
}

const map = {
  /** Whether the server offers MAP Mail to this caller (false on any failure). */
  async mailEnabled() {
    if (session.keyless) return false; // /map needs a key
    try { return Boolean((await rpc("map/connect")).capabilities?.mail?.enabled); } catch { return false; }
  },

  /** The (oldest) conversation bound to the task, or null: mail/list's filter.taskId. */
  async taskConversation(taskId) {
    const found = await rpc("mail/list", { filter: { taskId }, limit: 1 });
    return found.conversations[0] ?? null;
  },

  /** mail/get with the participants and threads: {conversation, participants, threads}. */
  conversation: (conversationId) => rpc("mail/get", { conversationId, include: { participants: true, threads: true } }),

  /** The turns the caller sees, in order; only those after fromTurnId when given. */
  turns(conversationId, fromTurnId) {
    const params = { conversationId, limit: 1000 };
    if (fromTurnId) params.fromTurnId = fromTurnId;
    return allPages("mail/replay", params, "turns");
  },

  /**
   * Follow a conversation's mail.* events: map/subscribe, then GET /map/events; onEvent gets
   * each {id, type, timestamp, data}. onOpen() runs after each subscription (events from then
   * on are kept for the stream), so it can catch up on what a dropped stream missed. Ends
   * (and unsubscribes) when the signal aborts or the page goes away.
   */
  async follow(conversationId, onEvent, { signal, onOpen, retries = 5 } = {}) {
    for (let attempt = 0; !signal?.aborted; attempt++) {
      let sub = null;
      const leave = () => unsubscribe(sub.subscriptionId, true);
      try {
        sub = await rpc("map/subscribe", { filter: { mail: { conversationId } } });
        addEventListener("pagehide", leave);
        await onOpen?.();
        const response = await fetch(sub.events, { headers: headers({ Accept: "text/event-stream" }), signal });
        if (!response.ok) throw await failure(response);
        attempt = 0;
        await readEvents(response, (e) => { if (e.data?.params?.event) onEvent(e.data.params.event); });
      } catch (e) {
        if (signal?.aborted) return;
        if (e instanceof MapError || (e instanceof ApiError && e.status !== 0) || attempt >= retries) throw e;
      } finally {
        removeEventListener("pagehide", leave);
        if (sub) unsubscribe(sub.subscriptionId);
      }
      if (signal?.aborted) return;
      await new Promise((resolve) => setTimeout(resolve, 500 * (attempt + 1)));
    }
  },
};

// --- the routes ------------------------------------------------------------------------

export const api = {
  map,
  root: () => json("GET", "/"),
  whoami: () => (session.keyless
    ? Promise.resolve({ id: "ui-dev-user", role: "user", keyless: true })
    : json("GET", "/whoami")),
  agents: () => json("GET", "/ui/agents"),
  swarms: () => json("GET", "/swarms"),
  cancel: (taskId) => json("POST", `/tasks/${encodeURIComponent(taskId)}/cancel`),

  /** Whether the server lets this browser in without a key (debug mode, loopback): the
   * page says so when it is served, so no request is needed. */
  keylessAllowed() {
    return document.querySelector('meta[name="mail-keyless"]')?.content === "true";
  },

  /** One page of the caller's tasks: {tasks: [{task_id, title, state, start_time}], next_cursor}. */
  async tasks(limit, cursor) {
    if (session.keyless) {
      const all = await json("GET", "/ui/tasks");
      const tasks = all.map((t) => ({ ...t, state: t.is_running ? "running" : (t.completed ? "completed" : "paused") }));
      return { tasks, next_cursor: null };
    }
    const q = new URLSearchParams({ limit: String(limit), events: "false" });
    if (cursor) q.set("cursor", cursor);
    return json("GET", `/tasks?${q}`);
  },

  /**
   * Send a message, streamed: onEvent gets each event (token_delta included); resolves to
   * the closing event's data {response, status, task_id}.
   */
  async send(message, onEvent, signal) {
    const body = { ...message, stream: true, show_events: true };
    const path = session.keyless ? "/ui/message" : "/message";
    const init = { method: "POST", headers: headers({ "Content-Type": "application/json", Accept: "text/event-stream" }), body: JSON.stringify(body), signal };
    let response;
    try { response = await fetch(path, init); } catch (e) {
      throw new ApiError(0, `the server cannot be reached (${e.message})`);
    }
    if (!response.ok) throw await failure(response);
    const closing = await readEvents(response, onEvent);
    if (!closing) throw new ApiError(0, "the stream ended before the task's answer");
    return closing.data;
  },

  /**
   * Replay a task's events then follow it live until its turn ends, reconnecting with
   * Last-Event-ID after a dropped connection. Resolves to the closing event's data.
   */
  async follow(taskId, onEvent, { signal, retries = 5 } = {}) {
    if (session.keyless) return this.replayKeyless(taskId, onEvent);
    let last = null;
    for (let attempt = 0; ; attempt++) {
      const extra = { Accept: "text/event-stream" };
      if (last !== null) extra["Last-Event-ID"] = last;
      try {
        const response = await fetch(`/tasks/${encodeURIComponent(taskId)}/events`, { headers: headers(extra), signal });
        if (!response.ok) throw await failure(response);
        const closing = await readEvents(response, (event) => {
          if (event.id !== null) last = event.id;
          onEvent(event);
        });
        if (closing) return closing.data;
      } catch (e) {
        if (e instanceof ApiError || signal?.aborted || attempt >= retries) throw e;
      }
      if (signal?.aborted) return null;
      await new Promise((resolve) => setTimeout(resolve, 500 * (attempt + 1)));
    }
  },

  async replayKeyless(taskId, onEvent) {
    const task = await json("GET", `/ui/task/${encodeURIComponent(taskId)}`);
    for (const e of task.events) onEvent({ event: e.event, data: e.data, id: e.id });
    return null;
  },
};
