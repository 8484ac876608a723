import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { consoleAction, signInToConsole } from '../../helpers/admin-console.js';
import { STORE_KINDS } from '../../helpers/stores.js';
import { createHarness, obtainTokens, REVISIONS, type Harness } from '../../helpers/harness.js';

/** The key IDs published at jwks_uri. */
async function publishedKids(h: Harness): Promise<string[]> {
  const response = await h.request('/jwks');
  assert.equal(response.status, 200);
  return ((await response.json()) as { keys: Array<{ kid: string }> }).keys.map((key) => key.kid);
}

/** The kid in a new access token's header. */
async function signingKid(h: Harness): Promise<string> {
  const { tokens } = await obtainTokens(h, REVISIONS[1]);
  const header = JSON.parse(Buffer.from(String(tokens.access_token).split('.')[0]!, 'base64url').toString()) as { kid: string };
  return header.kid;
}

describe('console: signing keys', () => {
  it('lists the keys (kid, algorithm, status, created), never their private parts', async () => {
    const h = createHarness();
    const first = await signingKid(h);
    const admin = await signInToConsole(h);
    const html = await (await admin.browser.fetch('/admin/keys')).text();
    assert.ok(html.replace(/<wbr>|<\/?span>/g, '').includes(first), 'shows the current kid');
    assert.match(html, /<code>ES256<\/code>/);
    assert.match(html, /<strong>current<\/strong>/);
    assert.match(html, /<time datetime="/);
    assert.match(html, /name="action" value="rotate-key"/);
    assert.match(html, /stay valid until they expire/);
    const [record] = await h.store.listSigningKeys();
    const { d } = JSON.parse(record!.privateJwk) as { d: string };
    assert.ok(!html.includes(d), 'no private key material');
    assert.ok(!html.includes('"d"'));
  });

  it('rotates: the new key is published at once in this process, and signs the tokens issued once its delay is over', async () => {
    const h = createHarness();
    const old = await signingKid(h);
    const admin = await signInToConsole(h);
    assert.deepEqual(await publishedKids(h), [old]);

    const rotated = await consoleAction(admin, 'rotate-key');
    assert.equal(rotated.status, 303, await rotated.clone().text());
    assert.match(rotated.headers.get('location')!, /^\/admin\/keys\?done=rotate-key&what=[^&]+&sig=/);
    const keys = await h.store.listSigningKeys();
    const fresh = keys.find((key) => key.status === 'current')!.kid;
    assert.notEqual(fresh, old);
    assert.equal(keys.find((key) => key.status === 'previous')?.kid, old);
    // Published now, not when this process's cache of the keys runs out.
    assert.deepEqual((await publishedKids(h)).sort(), [fresh, old].sort());
    // Tokens are still signed with the old key while resource servers learn the new one…
    assert.equal(await signingKid(h), old);
    h.clock.now += 6;
    assert.equal(await signingKid(h), old);
    // …and with the new one from the moment its delay ends.
    h.clock.now += 4;
    assert.equal(await signingKid(h), fresh);

    const page = await (await admin.browser.fetch(rotated.headers.get('location')!)).text();
    assert.ok(page.includes(`New signing key made: ${fresh}.`), 'the notice names the new key');
    assert.match(page, /previous <span class="muted">\(still valid\)<\/span>/);
    assert.ok(h.log.some((e) => e.event === 'admin_action' && e.action === 'rotate-key' && e.target === fresh));
  });

  it('asks for the password again when the sign-in is older than allowed, and rotates nothing', async () => {
    const h = createHarness();
    await signingKid(h);
    const admin = await signInToConsole(h);
    h.clock.now += 601;
    const response = await consoleAction(admin, 'rotate-key');
    assert.equal(response.status, 401);
    assert.match(await response.text(), /Confirm it is you/);
    assert.equal((await h.store.listSigningKeys()).length, 1);
  });

  for (const kind of STORE_KINDS) {
    it(`rotates on ${kind.name}: the old current key becomes previous, the one before is retired`, async () => {
      const opened = await kind.open();
      try {
        const h = createHarness({ store: opened.store });
        const first = await signingKid(h);
        const admin = await signInToConsole(h);
        assert.equal((await consoleAction(admin, 'rotate-key')).status, 303);
        assert.equal((await consoleAction(admin, 'rotate-key')).status, 303);
        const keys = await opened.store.listSigningKeys();
        assert.deepEqual(keys.map((key) => key.status).sort(), ['current', 'previous', 'retired']);
        assert.equal(keys.find((key) => key.status === 'retired')?.kid, first);
        const current = keys.find((key) => key.status === 'current')!.kid;
        assert.ok((await publishedKids(h)).includes(current));
        const html = await (await admin.browser.fetch('/admin/keys')).text();
        assert.match(html, /<span class="muted">retired<\/span>/);
      } finally {
        await opened.close();
      }
    });
  }
});
