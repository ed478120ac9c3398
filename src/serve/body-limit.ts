import { BatchlineError } from '../errors.js';

/** The Open Inference Protocol's inference route, whose limit is `--oip-body-limit-bytes`. */
const OIP_INFER = /^\/v2\/models\/[^/?]+(\/versions\/[^/?]+)?\/infer(\?|$)/;
/** Shared-memory registrations: a small fixed limit no flag changes. */
const SHARED_MEMORY = /^\/v2\/(system|cuda)sharedmemory\//;

/**
 * 413 for a body over the route's limit, naming the flag that sets it: an image past the 1 MB
 * of `/v1/infer` was refused without a word of `--body-limit-bytes`, while `/v2` took it.
 */
export function bodyTooLarge(limit: number | undefined, url: string | undefined, uncompressed = false): BatchlineError {
  const flag =
    url !== undefined && SHARED_MEMORY.test(url)
      ? undefined
      : url !== undefined && OIP_INFER.test(url)
        ? '--oip-body-limit-bytes'
        : '--body-limit-bytes';
  const size = limit === undefined ? 'its limit' : `${limit} bytes`;
  return new BatchlineError(
    'PAYLOAD_TOO_LARGE',
    `${size}${uncompressed ? ' uncompressed' : ''}${flag === undefined ? '' : ` (${flag} sets the limit)`}`,
  );
}
