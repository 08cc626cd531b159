import { NoSuchModelError, type LanguageModelV3, type ProviderV3 } from '@ai-sdk/provider';
import { withoutTrailingSlash, type FetchFunction } from '@ai-sdk/provider-utils';
import { MailLanguageModel } from './mail-language-model';

export interface MAILProviderSettings {
  /** The MAIL server's URL. Default `http://localhost:8000`; a trailing slash is removed. */
  baseUrl?: string;
  /** An API key (role `user` or `admin`), sent as `Authorization: Bearer <authToken>`. */
  authToken?: string;
  /** Extra headers for every request. */
  headers?: Record<string, string>;
  /** A fetch implementation (tests, proxies, instrumentation). */
  fetch?: FetchFunction;
}

export interface MAILProvider extends ProviderV3 {
  (modelId?: string): LanguageModelV3;
  languageModel(modelId?: string): LanguageModelV3;
}

/** Creates a MAIL provider; its models are the server's swarm (the model id names it for display). */
export function createMAIL(options: MAILProviderSettings = {}): MAILProvider {
  const baseUrl = withoutTrailingSlash(options.baseUrl) ?? 'http://localhost:8000';
  const headers = () => ({
    ...(options.authToken ? { Authorization: `Bearer ${options.authToken}` } : {}),
    ...options.headers,
  });
  const languageModel = (modelId = 'mail') =>
    new MailLanguageModel(modelId, { provider: 'mail', baseUrl, headers, fetch: options.fetch });
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
