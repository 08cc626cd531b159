import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { join } from 'node:path';
import { mailBin } from './server';

/** Starts `python -m mail.testing.llm --port 0` (the scripted OpenAI-compatible server); its URL. */
export async function startLlmStub(): Promise<{ url: string; stop: () => Promise<void> }> {
  const python = join(mailBin(), '..', 'python');
  const child = spawn(python, ['-m', 'mail.testing.llm', '--port', '0'], { stdio: ['ignore', 'pipe', 'inherit'] });
  const killOnExit = () => child.kill('SIGKILL');
  process.once('exit', killOnExit);
  const exited = new Promise<void>((ok) => child.once('exit', () => ok()));
  const firstLine = await new Promise<string>((ok, fail) => {
    const lines = createInterface({ input: child.stdout! });
    lines.once('line', ok);
    child.once('exit', (code) => fail(new Error(`the LLM stub exited ${code}`)));
  });
  const url = /https?:\/\/\S+/.exec(firstLine)?.[0];
  if (!url) throw new Error(`no URL in the LLM stub's first line: ${firstLine}`);
  return {
    url: url.replace(/\/$/, '').replace(/\/v1$/, ''),
    stop: async () => {
      child.kill('SIGINT');
      await exited;
      process.removeListener('exit', killOnExit);
    },
  };
}
