import { APICallError } from '@ai-sdk/provider';
import { delay, isAbortError } from '@ai-sdk/provider-utils';
import { RETRYABLE_STATUS_CODES } from './mail-error';

/*
 * Why the provider retries by itself, and hands the AI SDK only final errors.
 *
 * A MAIL server answers a repeated `POST /message` as the first one, and never runs it twice,
 * when the repeat carries the same idempotency handle: the `task_id` of a new task, the
 * `Idempotency-Key` header of a follow-up (docs/http-api.md, "Retries"). So every attempt of
 * one user-level call must send the same id and key. The AI SDK retries `doGenerate` and
 * `doStream` itself (`maxRetries`, on `APICallError.isRetryable`, which provider-utils also
 * sets for network failures), by calling them again: each call would draw a new id. Keeping
 * the id across those calls would need an object the SDK passes unchanged to every attempt,
 * and there is none that holds in both versions: `ai` 6 passes the same `prompt` array to each
 * attempt of a step, but `ai` 7 runs a LanguageModelV3 through its V4 adapter
 * (`asLanguageModelV4`), which builds a new options object and a new prompt array
 * (`convertV4PromptToV3`) on every call; `providerOptions` and `abortSignal` may be undefined,
 * and middleware may rebuild the options too. So the provider draws the id and the key once
 * per `doGenerate`/`doStream` call, retries inside that call with the same body and headers
 * ({@link withRetries}), and what it throws when it gives up is never retryable
 * ({@link finalError}): the SDK does not send the request again under a new id. When it gives
 * up on a request the server may have taken, the caller cancels the task.
 */

/** How the provider retries: `createMAIL` settings, with these defaults. */
export interface MailRetrySettings {
  /** More attempts of one request after a lost connection or a 502/503/504 (default 2). */
  maxRetries: number;
  /** Milliseconds before the first retry, doubled for each next one (default 1000); a `Retry-After` wins. */
  retryDelayMs: number;
  /** How often one stream may reconnect (after a cut, or a closing event held back) before it gives up (default 5). */
  maxReconnects: number;
}

export const DEFAULT_RETRY_SETTINGS: MailRetrySettings = { maxRetries: 2, retryDelayMs: 1000, maxReconnects: 5 };

/** The longest `Retry-After` honoured, in milliseconds. */
const MAX_RETRY_AFTER_MS = 60_000;

function causes(error: unknown): unknown[] {
  const chain: unknown[] = [];
  let current: unknown = error;
  while (current instanceof Error && !chain.includes(current)) {
    chain.push(current);
    current = current.cause;
  }
  return chain;
}

/** No connection was made: the server cannot have seen the request. */
function neverSent(error: APICallError): boolean {
  return causes(error).some((e) => (e as { code?: unknown }).code === 'ECONNREFUSED');
}

/**
 * Whether the server may have taken a request that failed with `error`: no answer came (a
 * dropped connection) or a 502/503/504 came instead (a 503 may name the task whose answer
 * the server holds back).
 */
export function mayHaveArrived(error: unknown): boolean {
  if (!APICallError.isInstance(error)) return false;
  if (error.statusCode === undefined) return !neverSent(error);
  return RETRYABLE_STATUS_CODES.includes(error.statusCode);
}

/** Milliseconds before retry number `retry` (1, 2, ...): the answer's `Retry-After`, else the backoff. */
export function retryDelay(error: unknown, retry: number, initialMs: number): number {
  const header = APICallError.isInstance(error) ? error.responseHeaders?.['retry-after'] : undefined;
  if (header !== undefined) {
    const seconds = Number(header);
    const ms = Number.isFinite(seconds) ? seconds * 1000 : Date.parse(header) - Date.now();
    if (Number.isFinite(ms)) return Math.min(Math.max(ms, 0), MAX_RETRY_AFTER_MS);
  }
  return initialMs * 2 ** (retry - 1);
}

/** `error` as the provider surfaces it: an `APICallError` that is no longer retryable (see above). */
export function finalError(error: unknown): unknown {
  if (!APICallError.isInstance(error) || !error.isRetryable) return error;
  return new APICallError({
    message: error.message,
    url: error.url,
    requestBodyValues: error.requestBodyValues,
    statusCode: error.statusCode,
    responseHeaders: error.responseHeaders,
    responseBody: error.responseBody,
    cause: error.cause,
    data: error.data,
    isRetryable: false,
  });
}

/**
 * `attempt()`, again after a retryable failure (a lost connection, a 502/503/504), at most
 * `maxRetries` more times. An abort ends it at once. When it gives up, `giveUp(error)` runs
 * first (it cancels the task when the request may have arrived); then the error is thrown,
 * no longer retryable.
 */
export async function withRetries<T>(
  attempt: () => Promise<T>,
  options: {
    settings: MailRetrySettings;
    abortSignal?: AbortSignal;
    giveUp?: (error: unknown) => Promise<void>;
  },
): Promise<T> {
  const { maxRetries, retryDelayMs } = options.settings;
  for (let retry = 1; ; retry++) {
    try {
      return await attempt();
    } catch (error) {
      if (isAbortError(error) || options.abortSignal?.aborted) throw error;
      if (retry <= maxRetries && APICallError.isInstance(error) && error.isRetryable) {
        await delay(retryDelay(error, retry, retryDelayMs), { abortSignal: options.abortSignal });
        continue;
      }
      await options.giveUp?.(error);
      throw finalError(error);
    }
  }
}
