import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, existsSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
export const PACKAGE_DIR = resolve(here, '..', '..');
export const REPO_DIR = resolve(PACKAGE_DIR, '..', '..');
export const FIXTURES_DIR = join(PACKAGE_DIR, 'test', 'fixtures');

/** The `mail` executable: `$MAIL_BIN`, else the repository's venv. */
export function mailBin(): string {
  const bin = process.env.MAIL_BIN ?? join(REPO_DIR, '.venv', 'bin', 'mail');
  if (!existsSync(bin)) {
    throw new Error(`no mail executable at ${bin}: run \`uv sync\` in ${REPO_DIR} or set MAIL_BIN`);
  }
  return bin;
}

export async function freePort(): Promise<number> {
  return new Promise((ok, fail) => {
    const server = createServer();
    server.unref();
    server.on('error', fail);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => ok(port));
    });
  });
}

/** Polls `check` every 50 ms until it returns a value other than undefined, or fails at the deadline. */
export async function pollUntil<T>(what: string, check: () => Promise<T | undefined>, seconds = 20): Promise<T> {
  const deadline = Date.now() + seconds * 1000;
  let last: unknown;
  while (Date.now() < deadline) {
    try {
      const value = await check();
      if (value !== undefined) return value;
    } catch (error) {
      last = error;
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`${what}: not within ${seconds}s${last ? ` (last error: ${String(last)})` : ''}`);
}

export interface RunningServer {
  url: string;
  userKey: string;
  adminKey: string;
  dataDir: string;
  log: () => string;
  stop: () => Promise<void>;
}

const MAIL_ENV = [
  'MAIL_CONFIG_PATH', 'MAIL_DATA_DIR', 'MAIL_LOG_LEVEL', 'SWARM_NAME', 'SWARM_SOURCE',
  'SWARM_REGISTRY_FILE', 'BASE_URL', 'AUTH_ENDPOINT', 'TOKEN_INFO_ENDPOINT', 'DATABASE_URL',
  'MAIL_SERVER_OVERRIDES',
];

/**
 * Starts `mail server` on a free port with a temporary data directory (the registry file
 * inside it, so the checkout stays clean) and the swarm `swarm` of `test/fixtures/swarms.json`
 * (or of `swarmSource`), and waits for `GET /health`.
 */
export async function startMailServer(options: {
  swarm: string;
  swarmSource?: string;
  env?: Record<string, string>;
}): Promise<RunningServer> {
  const dataDir = mkdtempSync(join(tmpdir(), 'mail-ai-sdk-'));
  const port = await freePort();
  const env: Record<string, string | undefined> = { ...process.env };
  for (const name of MAIL_ENV) delete env[name];
  Object.assign(env, {
    MAIL_DATA_DIR: dataDir,
    SWARM_REGISTRY_FILE: join(dataDir, 'registry.json'),
    MAIL_LOG_LEVEL: 'WARNING',
    PYTHONPATH: [join(FIXTURES_DIR, 'py'), process.env.PYTHONPATH].filter(Boolean).join(':'),
    ...options.env,
  });
  const args = [
    'server', '--host', '127.0.0.1', '--port', String(port), '--no-reload', '--no-debug',
    '-s', options.swarmSource ?? join(FIXTURES_DIR, 'swarms.json'), '-n', options.swarm,
  ];
  const child: ChildProcess = spawn(mailBin(), args, { cwd: dataDir, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout?.on('data', (b: Buffer) => (output += b.toString()));
  child.stderr?.on('data', (b: Buffer) => (output += b.toString()));
  const exited = new Promise<void>((ok) => child.once('exit', () => ok()));
  const killOnExit = () => child.kill('SIGKILL'); // never leave a server behind a killed test run
  process.once('exit', killOnExit);
  const url = `http://127.0.0.1:${port}`;
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGINT');
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(timer);
    }
    process.removeListener('exit', killOnExit);
    rmSync(dataDir, { recursive: true, force: true });
  };
  try {
    await pollUntil('mail server healthy', async () => {
      if (child.exitCode !== null) throw new Error(`mail server exited ${child.exitCode}:\n${output}`);
      const response = await fetch(`${url}/health`);
      return response.ok ? true : undefined;
    }, 60);
    const credentials = JSON.parse(readFileSync(join(dataDir, 'credentials.json'), 'utf8')) as {
      keys: { role: string; key: string }[];
    };
    const key = (role: string) => credentials.keys.find((k) => k.role === role)!.key;
    return { url, userKey: key('user'), adminKey: key('admin'), dataDir, log: () => output, stop };
  } catch (error) {
    await stop();
    throw new Error(`${String(error)}\n--- server output ---\n${output}`);
  }
}

/** `GET /task?task_id=` with the user key: the task, or undefined on 404. */
export async function getTask(server: RunningServer, taskId: string): Promise<Record<string, unknown> | undefined> {
  const response = await fetch(`${server.url}/task?task_id=${encodeURIComponent(taskId)}`, {
    headers: { Authorization: `Bearer ${server.userKey}` },
  });
  if (response.status === 404) return undefined;
  if (!response.ok) throw new Error(`GET /task: ${response.status} ${await response.text()}`);
  return (await response.json()) as Record<string, unknown>;
}
