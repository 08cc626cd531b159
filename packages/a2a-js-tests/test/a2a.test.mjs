// @a2a-js/sdk's client against a real `mail server` (the offline swarm) at A2A_URL, with the
// user key A2A_KEY: the card, send, stream, a follow-up in the same context, GetTask, a
// wrong key. Run by tests/test_a2a_js.py.
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { test } from "node:test";

import { Role, TaskState } from "@a2a-js/sdk";
import {
  ClientFactory,
  ClientFactoryOptions,
  JsonRpcTransportFactory,
  RestTransportFactory,
} from "@a2a-js/sdk/client";

const URL = process.env.A2A_URL;
const KEY = process.env.A2A_KEY;

function authed(key) {
  return (input, init = {}) => {
    const headers = new Headers(init.headers);
    headers.set("Authorization", `Bearer ${key}`);
    return fetch(input, { ...init, headers });
  };
}

async function client(key = KEY, preferred = undefined) {
  const fetchImpl = authed(key);
  const options = ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
    transports: [new JsonRpcTransportFactory({ fetchImpl }), new RestTransportFactory({ fetchImpl })],
    preferredTransports: preferred,
  });
  return new ClientFactory(options).createFromUrl(URL);
}

function message(text, contextId = "") {
  return {
    message: {
      messageId: randomUUID(),
      role: Role.ROLE_USER,
      parts: [{ content: { $case: "text", value: text } }],
      contextId,
      taskId: "",
      metadata: undefined,
      extensions: [],
      referenceTaskIds: [],
    },
    configuration: undefined,
    metadata: undefined,
    tenant: "",
  };
}

const text = (parts) => parts.map((p) => p.content?.value ?? "").join("");

test("the card names the swarm and streams", async () => {
  const card = await (await fetch(`${URL}/.well-known/agent-card.json`)).json();
  assert.equal(card.name, "offline");
  assert.equal(card.capabilities.streaming, true);
  assert.deepEqual(card.skills.map((s) => s.id), ["supervisor"]);
});

for (const transport of ["JSONRPC", "HTTP+JSON"]) {
  test(`sendMessage answers over ${transport}`, async () => {
    const a2a = await client(KEY, [transport]);
    const task = await a2a.sendMessage(message("What is 12*(3+4)?"));
    assert.equal(task.status.state, TaskState.TASK_STATE_COMPLETED);
    assert.match(text(task.artifacts[0].parts), /12\*\(3\+4\) = 84/);
    const read = await a2a.getTask({ id: task.id, historyLength: undefined, tenant: "" });
    assert.equal(read.id, task.id);
  });
}

test("sendMessageStream shows the agents' steps and ends with the answer", async () => {
  const a2a = await client();
  const events = [];
  for await (const event of a2a.sendMessageStream(message("Weather in Paris tomorrow?"))) {
    events.push(event);
  }
  const steps = events
    .filter((e) => e.payload?.$case === "statusUpdate")
    .map((e) => text(e.payload.value.status?.message?.parts ?? []));
  assert.ok(steps.includes("supervisor -> weather: Weather forecast"), steps.join(" | "));
  const last = events.at(-1).payload;
  assert.equal(last.$case, "statusUpdate");
  assert.equal(last.value.status.state, TaskState.TASK_STATE_COMPLETED);
  const answer = events.filter((e) => e.payload?.$case === "artifactUpdate").at(-1);
  assert.match(text(answer.payload.value.artifact.parts), /Forecast for Paris/);
});

test("a follow-up in the same context continues the task", async () => {
  const a2a = await client();
  const first = await a2a.sendMessage(message("What is 12*(3+4)?"));
  const second = await a2a.sendMessage(message("And 2+2?", first.contextId));
  assert.equal(second.contextId, first.contextId);
  assert.notEqual(second.id, first.id);
  assert.match(text(second.artifacts[0].parts), /2\+2 = 4/);
});

test("a wrong key is refused", async () => {
  const a2a = await client("wrong-key");
  await assert.rejects(a2a.sendMessage(message("hello")), /401/);
});
