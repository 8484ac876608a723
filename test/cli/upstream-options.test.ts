import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { upstreamOptions, wantsUpstream } from '../../src/cli/upstream-options.js';
import { SecretBox, generateSecretKey, parseSecretKeys } from '../../src/core/secret-box.js';

const box = (): SecretBox => new SecretBox(parseSecretKeys(generateSecretKey(), 'test'));
const never = (): SecretBox => assert.fail('no key may be made for flags that are wrong');

describe('serve --upstream-* flags', () => {
  it('one OpenID provider from its issuer and client id; the secret from the environment', () => {
    const options = upstreamOptions({ 'upstream-issuer': ['https://accounts.google.com'], 'upstream-client-id': ['id-1'] }, box, {
      CONTEXT_AUTH_UPSTREAM_CLIENT_SECRET: 's3cret',
    });
    assert.deepEqual(options.providers, [
      { kind: 'oidc', id: 'google', name: 'Google', issuer: 'https://accounts.google.com', clientId: 'id-1', clientSecret: 's3cret' },
    ]);
    assert.equal(options.localUsers, true);
  });

  it('several, in order, and https://github.com is the GitHub preset', () => {
    const options = upstreamOptions(
      {
        'upstream-issuer': ['https://sso.corp.example/realms/staff', 'https://github.com'],
        'upstream-client-id': ['ctx', 'Iv1.abc'],
        'upstream-client-secret': ['a', 'b'],
        'upstream-name': ['Corp SSO', 'GitHub'],
      },
      box,
      {},
    );
    assert.deepEqual(
      options.providers.map((p) => [p.kind, p.id, p.name]),
      [
        ['oidc', 'corp', 'Corp SSO'],
        ['oauth2', 'github', 'GitHub'],
      ],
    );
  });

  it('mistakes are one clear sentence, and make no key', () => {
    assert.throws(
      () => upstreamOptions({ 'upstream-issuer': ['https://a.example'], 'upstream-client-id': [] }, never, {}),
      /one --upstream-client-id for each/,
    );
    assert.throws(() => upstreamOptions({ 'upstream-issuer': ['https://github.com'], 'upstream-client-id': ['x'] }, never, {}), /GitHub needs/);
    assert.throws(
      () => upstreamOptions({ 'upstream-issuer': ['a', 'b'], 'upstream-client-id': ['x', 'y'], 'upstream-scope': ['s'] }, never, {}),
      /for every --upstream-issuer, or for none/,
    );
    assert.throws(
      () => upstreamOptions({ 'upstream-issuer': ['https://sso.a.example', 'https://sso.a.example'], 'upstream-client-id': ['x', 'y'] }, never, {}),
      /would be named/,
    );
    assert.throws(
      () => upstreamOptions({ 'upstream-issuer': ['https://a.example'], 'upstream-client-id': ['x'], 'local-users': 'no' }, never, {}),
      /on or off/,
    );
    assert.equal(wantsUpstream({}), false);
  });

  it('a setting that can never work stops serve before anything starts, and makes no key', () => {
    assert.throws(
      () => upstreamOptions({ 'upstream-issuer': ['http://127.0.0.1:9000'], 'upstream-client-id': ['x'] }, never, {}),
      /the issuer must be an https URL: http:\/\/127\.0\.0\.1:9000 \(--allow-insecure-upstream allows http:\/\/ on this machine/,
    );
    assert.throws(
      () => upstreamOptions({ 'upstream-issuer': ['http://sso.example'], 'upstream-client-id': ['x'], 'allow-insecure-upstream': true }, never, {}),
      /must be an https URL/,
    );
    const allowed = upstreamOptions({ 'upstream-issuer': ['http://127.0.0.1:9000'], 'upstream-client-id': ['x'], 'allow-insecure-upstream': true }, box, {});
    assert.equal(allowed.allowLoopbackHttp, true);
    // Two providers under one issuer (here the same issuer, given an id of its own in the file).
    const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'ca-up-')), 'providers.json');
    fs.writeFileSync(file, JSON.stringify([{ kind: 'oidc', id: 'staff', issuer: 'https://sso.example/realms/staff', clientId: 'c' }]));
    assert.throws(
      () => upstreamOptions({ 'upstream-issuer': ['https://sso.example/realms/staff'], 'upstream-client-id': ['x'], 'upstream-config': file }, never, {}),
      /upstream example and staff have the same issuer https:\/\/sso\.example\/realms\/staff/,
    );
  });

  it('--upstream-require-claim NAME=VALUE: each name a rule, a name repeated allows any of its values', () => {
    const options = upstreamOptions(
      {
        'upstream-issuer': ['https://login.microsoftonline.com/t1/v2.0'],
        'upstream-client-id': ['x'],
        'upstream-require-claim': ['tid=t1', 'tid=t2', 'hd=example.com=x'],
      },
      box,
      {},
    );
    assert.deepEqual(options.policy?.requireClaims, { tid: ['t1', 't2'], hd: ['example.com=x'] });
    for (const bad of ['tid', '=t1', 'tid=']) {
      assert.throws(
        () => upstreamOptions({ 'upstream-issuer': ['https://a.example'], 'upstream-client-id': ['x'], 'upstream-require-claim': [bad] }, never, {}),
        /must be NAME=VALUE/,
      );
    }
  });

  it('a JSON file: OpenID, the GitHub preset and a plain OAuth 2.0 provider with its field mapping', () => {
    const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'ca-up-')), 'providers.json');
    fs.writeFileSync(
      file,
      JSON.stringify([
        { kind: 'oidc', id: 'corp', issuer: 'https://sso.example', clientId: 'c', clientSecretEnv: 'CORP_SECRET' },
        { preset: 'github', clientId: 'g', clientSecret: 'gs' },
        {
          kind: 'oauth2',
          id: 'forge',
          issuer: 'https://forge.example',
          clientId: 'f',
          authorizationEndpoint: 'https://forge.example/oauth/authorize',
          tokenEndpoint: 'https://forge.example/oauth/token',
          userinfoEndpoint: 'https://forge.example/api/user',
          emailsEndpoint: 'https://forge.example/api/user/emails',
          profile: { subject: 'id', username: 'username' },
        },
      ]),
    );
    const options = upstreamOptions({ 'upstream-config': file }, box, { CORP_SECRET: 'from-env' });
    assert.deepEqual(
      options.providers.map((p) => p.id),
      ['corp', 'github', 'forge'],
    );
    assert.equal((options.providers[0] as { clientSecret?: string }).clientSecret, 'from-env');
    const forge = options.providers[2]!;
    assert.equal(forge.kind, 'oauth2');
    if (forge.kind === 'oauth2') {
      assert.equal(forge.emailsEndpoint, 'https://forge.example/api/user/emails');
      assert.deepEqual(forge.profile({ id: 42, username: 'ada', email: 'ada@example.com' }), {
        subject: '42',
        email: 'ada@example.com',
        emailVerified: false,
        name: null,
        username: 'ada',
      });
    }
    fs.writeFileSync(file, JSON.stringify([{ kind: 'oidc', id: 'corp', issuer: 'https://sso.example', clientId: 'c', clientSecretEnv: 'MISSING' }]));
    assert.throws(() => upstreamOptions({ 'upstream-config': file }, never, {}), /\$MISSING is not set/);
  });
});
