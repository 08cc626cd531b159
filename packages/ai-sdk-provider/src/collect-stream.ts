import type {
  LanguageModelV3Content,
  LanguageModelV3FinishReason,
  LanguageModelV3StreamPart,
  LanguageModelV3Usage,
  SharedV3ProviderMetadata,
  SharedV3Warning,
} from '@ai-sdk/provider';

export interface CollectedStream {
  content: LanguageModelV3Content[];
  finishReason: LanguageModelV3FinishReason;
  usage: LanguageModelV3Usage | undefined;
  providerMetadata: SharedV3ProviderMetadata | undefined;
  responseId: string | undefined;
  warnings: SharedV3Warning[];
}

/** Reads a stream of parts to the end and assembles the content `doGenerate` returns. */
export async function collectStream(stream: ReadableStream<LanguageModelV3StreamPart>): Promise<CollectedStream> {
  const content: LanguageModelV3Content[] = [];
  const open = new Map<string, { type: 'text' | 'reasoning'; text: string; providerMetadata?: SharedV3ProviderMetadata }>();
  const result: CollectedStream = {
    content,
    finishReason: { unified: 'other', raw: undefined },
    usage: undefined,
    providerMetadata: undefined,
    responseId: undefined,
    warnings: [],
  };
  const reader = stream.getReader();
  for (;;) {
    const { done, value: part } = await reader.read();
    if (done) return result;
    switch (part.type) {
      case 'text-start':
      case 'reasoning-start': {
        const block = { type: part.type === 'text-start' ? ('text' as const) : ('reasoning' as const), text: '', providerMetadata: part.providerMetadata };
        open.set(`${block.type}:${part.id}`, block);
        content.push(block);
        break;
      }
      case 'text-delta':
        open.get(`text:${part.id}`)!.text += part.delta;
        break;
      case 'reasoning-delta':
        open.get(`reasoning:${part.id}`)!.text += part.delta;
        break;
      case 'tool-call':
      case 'tool-result':
        content.push(part);
        break;
      case 'stream-start':
        result.warnings = part.warnings;
        break;
      case 'response-metadata':
        result.responseId = part.id;
        break;
      case 'finish':
        result.finishReason = part.finishReason;
        result.usage = part.usage;
        result.providerMetadata = part.providerMetadata;
        break;
      case 'error':
        throw part.error;
    }
  }
}
