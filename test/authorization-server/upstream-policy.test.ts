import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { refusalOf } from '../../src/authorization-server/upstream/policy.js';
import type { UpstreamIdentity } from '../../src/authorization-server/upstream/provider.js';

const alice: UpstreamIdentity = {
  issuer: 'https://idp.example',
  subject: '1',
  email: 'Alice@Example.com',
  emailVerified: true,
  name: 'Alice',
  username: 'alice',
  claims: { tid: 'tenant-a', hd: 'example.com', groups: ['staff', 'admins'], email_verified: true },
};

describe('who may sign in upstream', () => {
  it('anyone, without rules', async () => {
    assert.equal(await refusalOf(alice, 'corp', {}), null);
  });

  it('by verified email domain or address, case-insensitively', async () => {
    assert.equal(await refusalOf(alice, 'corp', { allowDomains: ['example.com'] }), null);
    assert.equal(await refusalOf(alice, 'corp', { allowEmails: ['alice@example.COM'] }), null);
    assert.match((await refusalOf(alice, 'corp', { allowDomains: ['other.example'] }))!, /not allowed/);
    // A subdomain or a look-alike suffix is another domain.
    assert.notEqual(await refusalOf({ ...alice, email: 'alice@evil-example.com' }, 'corp', { allowDomains: ['example.com'] }), null);
    assert.notEqual(await refusalOf({ ...alice, email: 'alice@sub.example.com' }, 'corp', { allowDomains: ['example.com'] }), null);
  });

  it('an unverified email never passes a domain rule', async () => {
    assert.match((await refusalOf({ ...alice, emailVerified: false }, 'corp', { allowDomains: ['example.com'] }))!, /no verified email/);
    assert.match((await refusalOf({ ...alice, email: null }, 'corp', { allowEmails: ['alice@example.com'] }))!, /no verified email/);
  });

  it('required claims: the provider must assert one of the values allowed for each', async () => {
    assert.equal(await refusalOf(alice, 'corp', { requireClaims: { tid: ['tenant-a'] } }), null);
    assert.equal(await refusalOf(alice, 'corp', { requireClaims: { tid: ['tenant-b', 'tenant-a'], hd: ['example.com'] } }), null);
    assert.match((await refusalOf(alice, 'corp', { requireClaims: { tid: ['tenant-b'] } }))!, /"tid" claim \("tenant-a"\) is not one/);
    // Every rule must hold, and a claim the provider did not assert refuses.
    assert.notEqual(await refusalOf(alice, 'corp', { requireClaims: { tid: ['tenant-a'], hd: ['other.example'] } }), null);
    assert.match((await refusalOf({ ...alice, claims: {} }, 'corp', { requireClaims: { hd: ['example.com'] } }))!, /"hd" claim \(null\)/);
    // A list passes when one of its values is allowed; a boolean compares as its text.
    assert.equal(await refusalOf(alice, 'corp', { requireClaims: { groups: ['admins'] } }), null);
    assert.notEqual(await refusalOf(alice, 'corp', { requireClaims: { groups: ['root'] } }), null);
    assert.equal(await refusalOf(alice, 'corp', { requireClaims: { email_verified: ['true'] } }), null);
    // The email domain is no stand-in: the claim is what counts.
    assert.notEqual(
      await refusalOf({ ...alice, claims: { hd: 'evil.example' } }, 'corp', { allowDomains: ['example.com'], requireClaims: { hd: ['example.com'] } }),
      null,
    );
  });

  it('a hook in code decides too, and sees the provider', async () => {
    const seen: string[] = [];
    const allow = (identity: UpstreamIdentity & { provider: string }): boolean => {
      seen.push(identity.provider);
      return identity.subject === '1';
    };
    assert.equal(await refusalOf(alice, 'corp', { allow }), null);
    assert.notEqual(await refusalOf({ ...alice, subject: '2' }, 'corp', { allow }), null);
    assert.deepEqual(seen, ['corp', 'corp']);
    assert.notEqual(await refusalOf(alice, 'corp', { allowDomains: ['example.com'], allow: () => false }), null);
  });
});
