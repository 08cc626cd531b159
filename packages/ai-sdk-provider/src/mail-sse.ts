import { EventSourceParserStream } from '@ai-sdk/provider-utils';

/** One server-sent event of a MAIL stream, its data parsed as JSON. */
export interface MailSseEvent {
  /** The event name (`new_message`, `task_complete`, `token_delta`, `ping`, ...). */
  event: string;
  /** The sequence number of a stored event; undefined for closing, ping and token events. */
  id?: number;
  /** The parsed `data` (the raw string when it is not JSON). */
  data: unknown;
}

function parseData(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/** Parses a MAIL `text/event-stream` body (CRLF or LF framing) into events. */
export function parseMailEventStream(body: ReadableStream<Uint8Array>): ReadableStream<MailSseEvent> {
  return body
    .pipeThrough(new TextDecoderStream() as unknown as TransformStream<Uint8Array, string>)
    .pipeThrough(new EventSourceParserStream())
    .pipeThrough(
      new TransformStream({
        transform(message, controller) {
          const seq = message.id !== undefined && message.id !== '' ? Number(message.id) : undefined;
          controller.enqueue({
            event: message.event ?? 'message',
            id: seq !== undefined && Number.isFinite(seq) ? seq : undefined,
            data: parseData(message.data),
          });
        },
      }),
    );
}
