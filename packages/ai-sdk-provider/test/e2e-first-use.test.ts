// End to end, as a new user meets the provider: the README's breakpoint example run as
// written against the `forecasts` swarm of the repository's swarms.json, a model id that
// names another swarm (a warning), who worked on a turn (`currentAgent`, `agentTrace`),
// and what `npm pack` ships.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { generateText, streamText } from 'ai';
import { createMAIL, type MAILProvider } from '../src/index';
import './helpers/quiet';
import { PACKAGE_DIR, REPO_DIR, startMailServer, type RunningServer } from './helpers/server';

const run = promisify(execFile);
const ROOT_SWARMS = join(REPO_DIR, 'swarms.json');

interface Trace {
  currentAgent?: string | null;
  agentTrace?: { agent: string; tools: string[] }[];
}
const traceOf = (metadata: unknown) => ((metadata as { mail?: Trace } | undefined)?.mail ?? {}) as Trace;

/** The `lang` code block of the README that follows the marker comment `<!-- run by ... -->` after `heading`. */
function readmeBlock(heading: string, lang = 'ts'): string {
  const readme = readFileSync(join(PACKAGE_DIR, 'README.md'), 'utf8');
  const section = readme.slice(readme.indexOf(heading));
  const marker = section.indexOf('<!-- run by test/e2e-first-use.test.ts -->');
  const match = new RegExp('```' + lang + '\\n([\\s\\S]*?)```').exec(section.slice(marker));
  assert.ok(marker >= 0 && match, `no tested ts block under ${heading}`);
  return match[1]!;
}

describe('the forecasts swarm of swarms.json', () => {
  let server: RunningServer;
  let mail: MAILProvider;
  before(async () => {
    server = await startMailServer({ swarm: 'forecasts', swarmSource: ROOT_SWARMS });
    mail = createMAIL({ baseURL: server.url, authToken: server.userKey });
  });
  after(async () => server?.stop());

  test("the README's breakpoint example runs as written", async () => {
    // the block, as a module of its own: only `mail` is given, as the README's Usage makes it
    const script = join(PACKAGE_DIR, 'test', `.readme-breakpoint-${process.pid}.mts`);
    const block = readmeBlock('## Breakpoint tools');
    writeFileSync(
      script,
      `import { createMAIL } from '../src/index';\n` +
        `const mail = createMAIL({ baseURL: process.env.MAIL_URL, authToken: process.env.MAIL_API_KEY });\n` +
        block,
    );
    try {
      const { stdout } = await run(process.execPath, ['--import', 'tsx', script], {
        cwd: PACKAGE_DIR,
        env: { ...process.env, MAIL_URL: server.url, MAIL_API_KEY: server.userKey },
        timeout: 60_000,
      });
      assert.equal(stdout.trim(), 'Forecast for Paris on tomorrow: rain, 12°C.');
    } finally {
      rmSync(script, { force: true });
    }
  });

  test('a model id naming another swarm gets a warning; the served swarm answers', async () => {
    const wrong = await generateText({ model: mail('no-such-swarm'), prompt: 'what is 6*7?' });
    assert.match(wrong.text, /42/);
    const messages = (wrong.warnings ?? []).map((w) => (w.type === 'other' ? w.message : ''));
    assert.equal(messages.length, 1);
    assert.match(messages[0]!, /model 'no-such-swarm' names a swarm the MAIL server at .* does not serve: it serves 'forecasts'/);
    const right = await generateText({ model: mail('forecasts'), prompt: 'what is 6*7?' });
    assert.deepEqual(right.warnings ?? [], []);
  });

  test('generateText: the finish names the current agent and a compact trace', async () => {
    const result = await generateText({ model: mail('forecasts'), prompt: 'what is 6*7?' });
    const trace = traceOf(result.providerMetadata);
    assert.equal(trace.currentAgent, 'supervisor');
    assert.deepEqual(trace.agentTrace, [
      { agent: 'supervisor', tools: ['send_request'] },
      { agent: 'math', tools: ['calculate_expression', 'send_response'] },
      { agent: 'supervisor', tools: ['task_complete'] },
    ]);
  });

  test('streamText: the same, and a pause names the agent that called the breakpoint tool', async () => {
    const done = streamText({ model: mail('forecasts'), prompt: 'what is 6*7?' });
    await done.consumeStream();
    const trace = traceOf(await done.providerMetadata);
    assert.equal(trace.currentAgent, 'supervisor');
    assert.deepEqual(trace.agentTrace?.map((s) => s.agent), ['supervisor', 'math', 'supervisor']);
    const paused = streamText({ model: mail('forecasts'), prompt: 'Weather in Oslo tomorrow?' });
    await paused.consumeStream();
    assert.equal(await paused.finishReason, 'tool-calls');
    const pausedTrace = traceOf(await paused.providerMetadata);
    assert.equal(pausedTrace.currentAgent, 'weather');
    assert.deepEqual(pausedTrace.agentTrace?.at(-1), { agent: 'weather', tools: ['get_weather_forecast'] });
  });
});

describe('npm pack', () => {
  test('ships ESM, CommonJS, their types and the README', async () => {
    const { stdout } = await run('npm', ['pack', '--dry-run', '--json'], { cwd: PACKAGE_DIR, timeout: 120_000 });
    // (prepack builds dist/ first, and tsup's lines come before npm's JSON)
    const [pack] = JSON.parse(stdout.slice(stdout.search(/^\[$/m))) as { files: { path: string }[] }[];
    const files = pack!.files.map((f) => f.path).sort();
    for (const file of ['README.md', 'package.json', 'dist/index.js', 'dist/index.cjs', 'dist/index.d.ts', 'dist/index.d.cts']) {
      assert.ok(files.includes(file), `${file} in ${files.join(', ')}`);
    }
    assert.ok(!files.some((f) => f.startsWith('src/') || f.startsWith('test')), files.join(', '));
    const manifest = JSON.parse(readFileSync(join(PACKAGE_DIR, 'package.json'), 'utf8')) as {
      scripts: Record<string, string>;
    };
    assert.equal(manifest.scripts.prepack, 'tsup', 'npm pack builds dist/ first');
  });
});

describe('the README quick start, typed as written', () => {
  let server: RunningServer;
  let home: string;
  before(async () => {
    await run('npm', ['run', 'build'], { cwd: PACKAGE_DIR, timeout: 120_000 }); // what npm pack ships
    // 1. `uv run mail server`: the offline swarm of swarms.json (here on a free port)
    server = await startMailServer({ swarm: 'offline', swarmSource: ROOT_SWARMS });
    home = mkdtempSync(join(tmpdir(), 'mail-quick-start-'));
    symlinkSync(server.dataDir, join(home, '.mail')); // the checkout's .mail/, where the keys are
  });
  after(async () => {
    await server?.stop();
    rmSync(home, { force: true, recursive: true });
  });

  test('the key, then the call, answer 42', async () => {
    const lines = readmeBlock('## Quick start', 'bash').trim().split('\n');
    assert.equal(lines.length, 4);
    assert.match(lines[0]!, /^uv run mail server\s/);
    // 2. the key, as exported
    const exported = await run('bash', ['-c', `${lines[1]}\nprintf %s "$MAIL_API_KEY"`], { cwd: home, timeout: 60_000 });
    assert.equal(exported.stdout, server.userKey);
    // 3. npm install: the package is not published; here it is this package, resolved by its
    // own name, and `ai` from its dependencies
    assert.match(lines[2]!, /^npm install ai @mail\/ai-sdk-provider\s/);
    // 4. the call, with the server's port instead of 8000
    const call = lines[3]!.replaceAll('http://127.0.0.1:8000', server.url);
    const answer = await run('bash', ['-c', call], {
      cwd: PACKAGE_DIR,
      env: { ...process.env, MAIL_API_KEY: server.userKey },
      timeout: 60_000,
    });
    assert.equal(answer.stdout.trim(), '6*7 = 42');
  });
});
