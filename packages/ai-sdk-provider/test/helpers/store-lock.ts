import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { mailBin } from './server';

const HOLD = [
  'import sqlite3, sys',
  'conn = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=10)',
  'conn.execute("BEGIN IMMEDIATE")',
  'print("locked", flush=True)',
  'sys.stdin.read()',
  'conn.execute("ROLLBACK")',
].join('\n');

/**
 * Another process takes the write lock of the SQLite file at `path` (as `sqlite3 mail.db
 * VACUUM` would), so the server's writes wait, then fail, until `release()`: its store fails
 * for real. Resolves once the lock is held.
 */
export async function lockSqlite(path: string): Promise<{ release: () => Promise<void> }> {
  const python = join(mailBin(), '..', 'python');
  const child = spawn(python, ['-c', HOLD, path], { stdio: ['pipe', 'pipe', 'inherit'] });
  const killOnExit = () => child.kill('SIGKILL');
  process.once('exit', killOnExit);
  const exited = new Promise<void>((ok) => child.once('exit', () => ok()));
  await new Promise<void>((ok, fail) => {
    createInterface({ input: child.stdout! }).once('line', () => ok());
    child.once('exit', (code) => fail(new Error(`the SQLite lock holder exited ${code}`)));
  });
  return {
    release: async () => {
      child.stdin!.end();
      await exited;
      process.removeListener('exit', killOnExit);
    },
  };
}
