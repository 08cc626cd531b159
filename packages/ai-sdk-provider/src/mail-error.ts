import { createJsonErrorResponseHandler } from '@ai-sdk/provider-utils';
import { mailErrorSchema, type MailErrorData } from './mail-api-types';

/** Status codes worth retrying: a peer swarm, the task store or a peer's answer timed out. */
export const RETRYABLE_STATUS_CODES = [502, 503, 504];

function detailText(error: MailErrorData): string {
  const { detail } = error;
  if (typeof detail === 'string') return detail;
  return JSON.stringify(detail);
}

/** Turns a MAIL `{"detail"}` error answer into an `APICallError` with that detail as its message. */
export const mailFailedResponseHandler = createJsonErrorResponseHandler({
  errorSchema: mailErrorSchema,
  errorToMessage: detailText,
  isRetryable: (response) => RETRYABLE_STATUS_CODES.includes(response.status),
});
