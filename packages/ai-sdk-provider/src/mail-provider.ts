import { InvalidArgumentError, NoSuchModelError, type LanguageModelV3, type ProviderV3 } from '@ai-sdk/provider';
import { withoutTrailingSlash, type FetchFunction } from '@ai-sdk/provider-utils';
import { DEFAULT_MODEL_ID, MailLanguageModel } from './mail-language-model';
import { DEFAULT_RETRY_SETTINGS, type MailRetrySettings } from './mail-retry';

export interface MAILProviderSettings {
  /**
   * The MAIL server's URL, spelled as in every AI SDK provider. Default
   * `http://localhost:8000`; a trailing slash is removed.
   */
  baseURL?: string;
  /**
   * An alias of `baseURL`, kept for code written before it. Given both, they must name the
   * same URL (a trailing slash aside), or `createMAIL` throws `InvalidArgumentError`.
   */
  baseUrl?: string;
  /** An API key (role `user` or `admin`), sent as `Authorization: Bearer <authToken>`. */
  authToken?: string;
  /** Extra headers for every request. */
  headers?: Record<string, string>;
  /** A fetch implementation (tests, proxies, instrumentation). */
  fetch?: FetchFunction;
  /**
   * How many more times one request is sent after a lost connection or a 502/503/504, with
   * the same task id (a follow-up: the same `Idempotency-Key`), so the server runs it once.
   * Default 2. The provider retries by itself: the AI SDK's own `maxRetries` does not apply
   * to MAIL calls (the errors it sees are final, see `mail-retry.ts`).
   */
  maxRetries?: number;
  /** Milliseconds before the first retry, doubled for each next one; a `Retry-After` wins. Default 1000. */
  retryDelayMs?: number;
  /** How often one stream may reconnect (after a cut, or a closing event held back) before it gives up. Default 5. */
  maxReconnects?: number;
}

function count(name: string, value: number | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  if (!Number.isInteger(value) || value < 0) {
    throw new InvalidArgumentError({ argument: name, message: `${name} must be an integer >= 0, got ${value}` });
  }
  return value;
}

function serverUrl(options: MAILProviderSettings): string {
  const spelled = withoutTrailingSlash(options.baseURL);
  const alias = withoutTrailingSlash(options.baseUrl);
  if (spelled !== undefined && alias !== undefined && spelled !== alias) {
    throw new InvalidArgumentError({
      argument: 'baseURL',
      message: `baseURL (${spelled}) and its alias baseUrl (${alias}) name different servers: give one`,
    });
  }
  return spelled ?? alias ?? 'http://localhost:8000';
}

export interface MAILProvider extends ProviderV3 {
  (modelId?: string): LanguageModelV3;
  languageModel(modelId?: string): LanguageModelV3;
}

/**
 * Creates a MAIL provider; its models are the server's swarm (the model id names it for display).
 * Throws `InvalidArgumentError` for a negative retry setting, or `baseURL` and `baseUrl` that differ.
 */
export function createMAIL(options: MAILProviderSettings = {}): MAILProvider {
  const baseUrl = serverUrl(options);
  const headers = () => ({
    ...(options.authToken ? { Authorization: `Bearer ${options.authToken}` } : {}),
    ...options.headers,
  });
  const retries: MailRetrySettings = {
    maxRetries: count('maxRetries', options.maxRetries, DEFAULT_RETRY_SETTINGS.maxRetries),
    retryDelayMs: count('retryDelayMs', options.retryDelayMs, DEFAULT_RETRY_SETTINGS.retryDelayMs),
    maxReconnects: count('maxReconnects', options.maxReconnects, DEFAULT_RETRY_SETTINGS.maxReconnects),
  };
  const languageModel = (modelId = DEFAULT_MODEL_ID) =>
    new MailLanguageModel(modelId, { provider: 'mail', baseUrl, headers, fetch: options.fetch, retries });
  const provider = function (modelId?: string) {
    if (new.target) throw new Error('createMAIL(...) returns a function: call it without `new`.');
    return languageModel(modelId);
  } as unknown as MAILProvider;
  Object.assign(provider, {
    specificationVersion: 'v3' as const,
    languageModel,
    embeddingModel: (modelId: string) => {
      throw new NoSuchModelError({ modelId, modelType: 'embeddingModel' });
    },
    imageModel: (modelId: string) => {
      throw new NoSuchModelError({ modelId, modelType: 'imageModel' });
    },
  });
  return provider;
}

/** The default provider: `http://localhost:8000`, no key. */
export const mail = createMAIL();
