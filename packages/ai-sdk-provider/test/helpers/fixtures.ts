import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { LanguageModelV3StreamPart } from '@ai-sdk/provider';
import { MailStreamMapper, type MailStreamOptions } from '../../src/mail-stream-transformer';
import { parseMailEventStream, type MailSseEvent } from '../../src/mail-sse';
import { FIXTURES_DIR } from './server';

export function fixtureBytes(name: string): Uint8Array {
  return new Uint8Array(readFileSync(join(FIXTURES_DIR, name)));
}

/** A byte stream of `bytes`, in chunks of `chunkSize` bytes (to exercise reassembly). */
export function byteStream(bytes: Uint8Array, chunkSize = bytes.length): ReadableStream<Uint8Array> {
  return new ReadableStream({
    start(controller) {
      for (let i = 0; i < bytes.length; i += chunkSize) controller.enqueue(bytes.slice(i, i + chunkSize));
      controller.close();
    },
  });
}

/** Server-sent events written by hand, in the server's framing (CRLF, compact JSON). */
export function sse(events: { event: string; id?: number; data: unknown }[]): Uint8Array {
  const text = events
    .map((e) => `${e.id !== undefined ? `id: ${e.id}\r\n` : ''}event: ${e.event}\r\ndata: ${JSON.stringify(e.data)}\r\n\r\n`)
    .join('');
  return new TextEncoder().encode(text);
}

export async function readAll<T>(stream: ReadableStream<T>): Promise<T[]> {
  const out: T[] = [];
  const reader = stream.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return out;
    out.push(value);
  }
}

export async function parseEvents(bytes: Uint8Array, chunkSize?: number): Promise<MailSseEvent[]> {
  return readAll(parseMailEventStream(byteStream(bytes, chunkSize)));
}

/** The parts the mapper makes of `bytes` (the start parts included). */
export async function mapEvents(
  bytes: Uint8Array,
  options: Partial<MailStreamOptions> = {},
  chunkSize?: number,
): Promise<LanguageModelV3StreamPart[]> {
  const mapper = new MailStreamMapper({ taskId: 't1', modelId: 'mail', warnings: [], ...options });
  const parts = mapper.start();
  for (const event of await parseEvents(bytes, chunkSize)) parts.push(...mapper.handle(event));
  if (!mapper.closed) parts.push(...mapper.fail(new Error('cut')));
  return parts;
}

export function types(parts: LanguageModelV3StreamPart[]): string[] {
  return parts.map((p) => p.type);
}

export function textOf(parts: LanguageModelV3StreamPart[]): string {
  return parts.map((p) => (p.type === 'text-delta' ? p.delta : '')).join('');
}

export function reasoningOf(parts: LanguageModelV3StreamPart[]): string {
  return parts.map((p) => (p.type === 'reasoning-delta' ? p.delta : '')).join('');
}
