import { describe, expect, it } from 'vitest';
import { inferRouteOf } from '../../src/bench/default-body.js';
import { grpcModelOf } from '../../src/bench/target-url.js';

describe('the model a target URL names, percent-decoded as it is meant', () => {
  it('decodes an escape, and keeps a % that starts none as it is (decodeURIComponent threw: a stack trace)', () => {
    expect(grpcModelOf(new URL('grpc://127.0.0.1:9/models/my%20model/versions/2'))).toEqual({
      name: 'my model',
      version: '2',
    });
    expect(grpcModelOf(new URL('grpc://127.0.0.1:9/models/50%off'))).toEqual({ name: '50%off', version: '' });
    expect(inferRouteOf(new URL('http://127.0.0.1:9/models/50%off/predict'))).toMatchObject({ model: '50%off' });
    expect(inferRouteOf(new URL('http://127.0.0.1:9/v2/models/a%2Fb/versions/1%x/infer'))).toMatchObject({
      model: 'a/b',
      version: '1%x',
    });
  });
});
