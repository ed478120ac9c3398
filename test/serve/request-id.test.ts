import { describe, expect, it } from 'vitest';
import { freshUuid, requestIdFrom } from '../../src/serve/request-id.js';

const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe('request ids', () => {
  it('makes UUIDs v4 (version and variant bits set), all different, across several refills of its pool', () => {
    const ids = Array.from({ length: 1000 }, freshUuid);
    expect(ids.filter((id) => !UUID_V4.test(id))).toEqual([]);
    expect(new Set(ids).size).toBe(1000);
    // Random bytes, not a counter: every hex digit turns up in the random positions.
    expect(new Set(ids.join('').replaceAll('-', '')).size).toBe(16);
  });

  it("keeps a client's printable id and replaces anything else with a fresh UUID", () => {
    expect(requestIdFrom('order-17')).toBe('order-17');
    expect(requestIdFrom('has space')).toMatch(UUID_V4);
    expect(requestIdFrom('x'.repeat(129))).toMatch(UUID_V4);
    expect(requestIdFrom(undefined)).toMatch(UUID_V4);
  });
});
