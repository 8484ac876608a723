/**
 * The token of the /account, /admin and /device forms: a MAC under a key derived from the server's
 * signing keys, over the page and whom the form is for (a session, or a browser before one).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createServerContext } from '../../src/authorization-server/context.js';
import { formToken, isFormToken } from '../../src/authorization-server/form-tokens.js';
import { rotateSigningKeys } from '../../src/authorization-server/keys.js';
import { hashSecret } from '../../src/core/secrets.js';
import type { SessionRecord } from '../../src/store/store.js';
import { createHarness } from '../helpers/harness.js';

const session = (idHash: string): SessionRecord => ({ idHash, userId: 'u', authTime: 0, createdAt: 0, expiresAt: 1, upstreamSessionId: null });

describe('page form tokens', () => {
  it("depend on the page, on the session or browser, and on the server's key", async () => {
    const h = createHarness();
    const ctx = createServerContext(h.options);
    const token = await formToken(ctx, 'account', { binding: 'browser-1' });
    assert.equal(await formToken(ctx, 'account', { binding: 'browser-1' }), token);
    assert.ok(await isFormToken(ctx, 'account', { binding: 'browser-1' }, token));
    for (const [page, holder] of [
      ['admin', { binding: 'browser-1' }],
      ['device', { binding: 'browser-1' }],
      ['account', { binding: 'browser-2' }],
      ['account', { session: session(hashSecret('browser-1')) }],
    ] as const) {
      assert.equal(await isFormToken(ctx, page, holder, token), false, `${page} ${JSON.stringify(holder)}`);
    }
    assert.equal(
      await isFormToken(ctx, 'admin', { session: session('s1') }, await formToken(ctx, 'admin', { session: session('s2') })),
      false,
      'another session',
    );
    // Whoever knows the cookie cannot compute it: neither the old digest of it, nor the token of another server.
    assert.equal(await isFormToken(ctx, 'account', { binding: 'browser-1' }, hashSecret('account-form:browser-1')), false);
    const other = createServerContext(createHarness().options);
    assert.notEqual(await formToken(other, 'account', { binding: 'browser-1' }), token);
  });

  it("vouch for a value bound to them (a notice or a waiting change in a URL), and such a token is never a form's", async () => {
    const h = createHarness();
    const ctx = createServerContext(h.options);
    const holder = { session: session('s') };
    const bound = await formToken(ctx, 'admin', holder, 'notice\nrevoke-approval\nNotes for alice');
    assert.ok(await isFormToken(ctx, 'admin', holder, bound, 'notice\nrevoke-approval\nNotes for alice'));
    assert.equal(await isFormToken(ctx, 'admin', holder, bound, 'notice\nrevoke-approval\nNotes for bob'), false, 'another value');
    assert.equal(await isFormToken(ctx, 'admin', { session: session('t') }, bound, 'notice\nrevoke-approval\nNotes for alice'), false, 'another session');
    assert.equal(await isFormToken(ctx, 'admin', holder, bound), false, "not the form's token");
    assert.equal(
      await isFormToken(ctx, 'admin', holder, await formToken(ctx, 'admin', holder), ''),
      false,
      "the form's token vouches for no value, not even an empty one",
    );
  });

  it('stay valid through one key rotation (a form left open in a tab), not through the next', async () => {
    const h = createHarness();
    const ctx = createServerContext(h.options);
    const holder = { session: session('s') };
    const token = await formToken(ctx, 'admin', holder);
    await rotateSigningKeys(h.store, h.clock.now);
    // Past the key cache and the new key's activation: the new key makes the tokens now.
    h.clock.now += 60;
    assert.notEqual(await formToken(ctx, 'admin', holder), token);
    assert.ok(await isFormToken(ctx, 'admin', holder, token), 'the previous key is still accepted');
    await rotateSigningKeys(h.store, h.clock.now);
    h.clock.now += 60;
    assert.equal(await isFormToken(ctx, 'admin', holder, token), false, 'a retired key is not');
  });
});
