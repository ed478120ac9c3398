import { BatchlineError } from '../errors.js';

/**
 * 413 for a body over the route's limit, naming the flag that sets it: an image past the 1 MB
 * of `/v1/infer` was refused without a word of `--body-limit-bytes`, while `/v2` took it.
 */
export function bodyTooLarge(limit: number | string, url: string | undefined, uncompressed = false): BatchlineError {
  const flag = url?.startsWith('/v2/') === true ? '--oip-body-limit-bytes' : '--body-limit-bytes';
  return new BatchlineError(
    'PAYLOAD_TOO_LARGE',
    `${limit} bytes${uncompressed ? ' uncompressed' : ''} (${flag} sets the limit)`,
  );
}
