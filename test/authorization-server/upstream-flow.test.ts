/**
 * The upstream side of third-party authorization against a real OpenID provider
 * (node-oidc-provider): both kinds of provider, and every check that guards the sign-in and the
 * session behind a grant. Each defence has a test that fails when it is removed.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { UpstreamDefect, UpstreamDefectCode, UpstreamFailure } from '../../src/authorization-server/upstream/defects.js';
import {
  beginUpstream,
  checkUpstream,
  finishUpstream,
  upstreamUserinfo,
  type PendingUpstream,
  type UpstreamResult,
} from '../../src/authorization-server/upstream/flow.js';
import {
  checkUpstreamProviders,
  githubProfile,
  resolveUpstream,
  type ResolvedUpstream,
  type UpstreamProviderOptions,
} from '../../src/authorization-server/upstream/provider.js';
import { startOidcProvider, type TestOidcProvider } from '../helpers/oidc-provider.js';

const CALLBACK = 'http://127.0.0.1:9/upstream/callback';
const now = (): number => Math.floor(Date.now() / 1000);

/** A person's browser at the provider: follows its redirects (with its cookies) until our callback. */
async function signInUpstream(url: URL): Promise<URL> {
  const cookies = new Map<string, string>();
  let next = url.href;
  for (let hop = 0; hop < 10; hop++) {
    if (next.startsWith(CALLBACK)) return new URL(next);
    const response = await fetch(next, { redirect: 'manual', headers: { cookie: [...cookies].map(([k, v]) => `${k}=${v}`).join('; ') } });
    for (const line of response.headers.getSetCookie()) {
      const [pair] = line.split(';');
      const eq = pair!.indexOf('=');
      cookies.set(pair!.slice(0, eq), pair!.slice(eq + 1));
    }
    const location = response.headers.get('location');
    if (!location) throw new Error(`the provider stopped at ${next} with ${response.status}: ${(await response.text()).slice(0, 300)}`);
    next = new URL(location, next).href;
  }
  throw new Error('too many redirects');
}

/** The failure a defect carries for the log: where upstream it failed. */
function causeOf(defect: UpstreamDefect): Pick<UpstreamFailure, 'step' | 'status' | 'error'> {
  const failure = defect.failure;
  assert.ok(failure, `no cause on ${defect.description}`);
  return { step: failure.step, status: failure.status, error: failure.error };
}

/** What a step gave; fails the test on a defect. */
async function settled<T>(step: Promise<UpstreamResult<T>>): Promise<T> {
  const result = await step;
  assert.ok(result.ok, result.ok ? '' : `${result.defect.code}: ${result.defect.description}`);
  return result.value;
}

async function defectOf(step: Promise<UpstreamResult<unknown>>, code: UpstreamDefectCode, pattern?: RegExp): Promise<UpstreamDefect> {
  const result = await step;
  assert.ok(!result.ok, `expected ${code}`);
  assert.equal(result.defect.code, code, result.defect.description);
  if (pattern) assert.match(result.defect.description, pattern);
  return result.defect;
}

describe('upstream sign-in through a real OpenID provider', () => {
  let idp: TestOidcProvider;
  let oidc: ResolvedUpstream;
  let github: ResolvedUpstream;

  const oidcOptions = (): UpstreamProviderOptions => ({
    kind: 'oidc',
    id: 'corp',
    name: 'Corp SSO',
    issuer: idp.issuer,
    clientId: idp.clientId,
    clientSecret: idp.clientSecret,
    scope: 'openid email profile',
  });

  before(async () => {
    idp = await startOidcProvider({ redirectUris: [CALLBACK] });
    oidc = await resolveUpstream(oidcOptions(), { allowLoopbackHttp: true });
    // The same provider as a GitHub-style OAuth 2.0 provider: no openid scope, so no ID token;
    // identity from its /api/user, shaped like GitHub's.
    github = await resolveUpstream(
      {
        kind: 'oauth2',
        id: 'hub',
        name: 'Hub',
        issuer: idp.issuer,
        clientId: idp.clientId,
        clientSecret: idp.clientSecret,
        scope: 'read:user',
        authorizationEndpoint: `${idp.issuer}/auth`,
        tokenEndpoint: `${idp.issuer}/token`,
        userinfoEndpoint: `${idp.issuer}/api/user`,
        emailsEndpoint: `${idp.issuer}/api/user/emails`,
        issuesIssParameter: true,
        profile: githubProfile,
      },
      { allowLoopbackHttp: true },
    );
  });
  after(() => idp.stop());

  async function signIn(up: ResolvedUpstream): Promise<{ pending: PendingUpstream; callback: URL }> {
    const { url, pending } = await beginUpstream(up, CALLBACK);
    return { pending, callback: await signInUpstream(url) };
  }

  it('sends PKCE, state and (for OpenID) a nonce upstream', async () => {
    const { url, pending } = await beginUpstream(oidc, CALLBACK);
    assert.equal(url.origin + url.pathname, `${idp.issuer}/auth`);
    assert.equal(url.searchParams.get('code_challenge_method'), 'S256');
    assert.ok((url.searchParams.get('code_challenge') ?? '').length >= 43);
    assert.equal(url.searchParams.get('state'), pending.state);
    assert.equal(url.searchParams.get('nonce'), pending.nonce);
    assert.equal(url.searchParams.get('redirect_uri'), CALLBACK);
    assert.equal((await beginUpstream(github, CALLBACK)).url.searchParams.get('nonce'), null);
  });

  it('OpenID: signs the person in, with their identity from the verified ID token and user-info', async () => {
    const { pending, callback } = await signIn(oidc);
    const result = await settled(finishUpstream(oidc, CALLBACK, callback, pending, now()));
    const { claims, ...identity } = result.identity;
    assert.deepEqual(identity, {
      issuer: idp.issuer,
      subject: 'alice-sub',
      email: 'alice@example.com',
      emailVerified: true,
      name: 'Alice Example',
      username: 'alice',
    });
    // The claims rules read are the ID token's, as validated.
    assert.equal(claims.sub, 'alice-sub');
    assert.equal(claims.aud, idp.clientId);
    assert.equal(claims.nonce, pending.nonce);
    assert.deepEqual(result.warnings, []);
    assert.ok(result.tokens.accessToken);
    assert.ok(result.tokens.refreshToken);
    assert.ok(result.tokens.expiresAt! > now());
  });

  it('GitHub-style OAuth 2.0: identity from the user-info API through the mapping', async () => {
    const { pending, callback } = await signIn(github);
    const result = await settled(finishUpstream(github, CALLBACK, callback, pending, now()));
    const { claims, ...identity } = result.identity;
    assert.deepEqual(identity, {
      issuer: idp.issuer,
      subject: '1001',
      email: 'alice@example.com',
      emailVerified: true,
      name: 'Alice Example',
      username: 'alice',
    });
    assert.equal(claims.login, 'alice');
  });

  describe('GitHub-style emails: only an address the provider lists as verified counts', () => {
    /** Signs in through `up` as an account with these addresses (its public /user email is the first). */
    async function signInWithEmails(up: ResolvedUpstream, emails: Array<{ email: string; primary: boolean; verified: boolean }>) {
      const account = { id: 'carol-sub', email: emails[0]!.email, name: 'Carol', username: 'carol', numericId: 1003, emails };
      idp.accounts.set(account.id, account);
      idp.decide({ account: account.id });
      try {
        const { pending, callback } = await signIn(up);
        return await settled(finishUpstream(up, CALLBACK, callback, pending, now()));
      } finally {
        idp.decide({ account: 'alice-sub' });
        idp.accounts.delete(account.id);
      }
    }

    it('the primary verified address, not the public profile email', async () => {
      const { identity, warnings } = await signInWithEmails(github, [
        { email: 'carol@unverified.example', primary: false, verified: false },
        { email: 'carol@old.example', primary: false, verified: true },
        { email: 'carol@example.com', primary: true, verified: true },
      ]);
      assert.deepEqual([identity.email, identity.emailVerified], ['carol@example.com', true]);
      assert.deepEqual(warnings, []);
    });

    it('another verified address when the primary one is not verified', async () => {
      const { identity } = await signInWithEmails(github, [
        { email: 'carol@unverified.example', primary: true, verified: false },
        { email: 'carol@example.com', primary: false, verified: true },
      ]);
      assert.deepEqual([identity.email, identity.emailVerified], ['carol@example.com', true]);
    });

    it('no verified address: no email, so a domain rule refuses', async () => {
      const { identity } = await signInWithEmails(github, [{ email: 'carol@example.com', primary: true, verified: false }]);
      assert.deepEqual([identity.email, identity.emailVerified], [null, false]);
    });

    it('the GitHub profile alone (no emails endpoint) never counts as verified', async () => {
      const profileOnly = { ...github, emailsEndpoint: null };
      const { identity } = await signInWithEmails(profileOnly, [{ email: 'carol@example.com', primary: true, verified: true }]);
      assert.deepEqual([identity.email, identity.emailVerified], ['carol@example.com', false]);
    });

    it('a list that cannot be read (the scope was not granted): unverified, and a warning for the log', async () => {
      const refusing = { ...github, emailsEndpoint: `${idp.issuer}/api/no-such-list` };
      const { identity, warnings } = await signInWithEmails(refusing, [{ email: 'carol@example.com', primary: true, verified: true }]);
      assert.equal(identity.emailVerified, false);
      assert.deepEqual(
        warnings.map((w) => [w.step, w.status]),
        [['emails', 404]],
      );
    });
  });

  it('a callback whose state is not ours is refused before any code is exchanged', async () => {
    const { pending, callback } = await signIn(oidc);
    const error = await defectOf(finishUpstream(oidc, CALLBACK, callback, { ...pending, state: 'another sign-in' }, now()), 'failed_checks', /does not belong/);
    assert.equal(causeOf(error).step, 'authorization response');
  });

  it('a callback with another issuer (mix-up) is refused', async () => {
    const { pending, callback } = await signIn(oidc);
    callback.searchParams.set('iss', 'https://evil.example');
    await defectOf(finishUpstream(oidc, CALLBACK, callback, pending, now()), 'failed_checks', /does not belong/);
  });

  it('an ID token with another nonce is refused', async () => {
    const { pending, callback } = await signIn(oidc);
    const error = await defectOf(
      finishUpstream(oidc, CALLBACK, callback, { ...pending, nonce: 'not-the-nonce-we-sent' }, now()),
      'failed_checks',
      /failed its checks/,
    );
    assert.deepEqual(causeOf(error), { step: 'id token validation', status: null, error: 'OAUTH_JWT_CLAIM_COMPARISON_FAILED' });
  });

  it('the PKCE verifier is checked upstream: the wrong one gets no tokens', async () => {
    const { pending, callback } = await signIn(oidc);
    const error = await defectOf(
      finishUpstream(oidc, CALLBACK, callback, { ...pending, codeVerifier: 'x'.repeat(43) }, now()),
      'refused',
      /^Corp SSO did not accept the sign-in$/,
    );
    assert.deepEqual(causeOf(error), { step: 'token exchange', status: 400, error: 'invalid_grant' });
  });

  it('an ID token whose signature does not verify is refused', async () => {
    // The token response passes through a tampering proxy that changes the ID token's subject
    // and keeps its signature: only the signature check can tell.
    const tampering = await resolveUpstream(oidcOptions(), {
      allowLoopbackHttp: true,
      fetch: async (input, init) => {
        const response = await fetch(input, init);
        if (!String(input).endsWith('/token')) return response;
        const body = (await response.json()) as { id_token: string };
        const [header, payload, signature] = body.id_token.split('.');
        const claims = JSON.parse(Buffer.from(payload!, 'base64url').toString());
        const forged = Buffer.from(JSON.stringify({ ...claims, email: 'mallory@example.com' })).toString('base64url');
        return Response.json({ ...body, id_token: `${header}.${forged}.${signature}` }, { status: response.status, headers: { 'cache-control': 'no-store' } });
      },
    });
    const { pending, callback } = await signIn(tampering);
    await defectOf(finishUpstream(tampering, CALLBACK, callback, pending, now()), 'failed_checks', /failed its checks/);
  });

  it('an ID token for another audience is refused', async () => {
    const { pending, callback } = await signIn(oidc);
    const stranger: ResolvedUpstream = { ...oidc, client: { client_id: 'someone-else' } };
    await defectOf(finishUpstream(stranger, CALLBACK, callback, pending, now()), 'refused');
  });

  it('the person declining upstream is access_denied, with a sentence for them', async () => {
    idp.decide({ deny: true });
    try {
      const { pending, callback } = await signIn(oidc);
      const error = await defectOf(finishUpstream(oidc, CALLBACK, callback, pending, now()), 'declined', /declined/);
      assert.deepEqual(causeOf(error), { step: 'authorization response', status: null, error: 'access_denied' });
    } finally {
      idp.decide({ account: 'alice-sub' });
    }
  });

  it('a provider that is down is temporarily_unavailable, never a crash', async () => {
    const { pending, callback } = await signIn(oidc);
    await idp.stop();
    try {
      const error = await defectOf(finishUpstream(oidc, CALLBACK, callback, pending, now()), 'unavailable', /could not be reached/);
      assert.deepEqual(causeOf(error), { step: 'token exchange', status: null, error: null });
      assert.match(error.failure!.reason, /fetch failed/);
    } finally {
      await idp.start();
    }
  });

  it('a provider whose discovery cannot be read is named at start', async () => {
    await assert.rejects(
      resolveUpstream({ ...oidcOptions(), issuer: 'http://127.0.0.1:9' } as UpstreamProviderOptions, { allowLoopbackHttp: true }),
      /upstream corp: cannot read the OpenID configuration/,
    );
    await assert.rejects(resolveUpstream(oidcOptions()), /must be an https URL/);
  });

  it('settings that can never work are found without asking any provider: http, two providers sharing an issuer', () => {
    assert.throws(() => checkUpstreamProviders([oidcOptions()]), /the issuer must be an https URL: http:\/\/127\.0\.0\.1:\d+ \(allowLoopbackHttp allows http/);
    assert.throws(() => checkUpstreamProviders([oidcOptions()], { setting: '--allow-insecure-upstream' }), /--allow-insecure-upstream allows http/);
    assert.throws(
      () => checkUpstreamProviders([{ ...oidcOptions(), issuer: 'http://sso.example' }], { allowLoopbackHttp: true }),
      /must be an https URL: http:\/\/sso\.example$/,
    );
    checkUpstreamProviders([oidcOptions()], { allowLoopbackHttp: true });
    // A plain OAuth 2.0 provider's issuer is a name: the operator's to choose, but one per provider.
    const hub = (id: string, issuer: string): UpstreamProviderOptions => ({
      kind: 'oauth2',
      id,
      issuer,
      clientId: 'c',
      authorizationEndpoint: 'https://hub.example/a',
      tokenEndpoint: 'https://hub.example/t',
      userinfoEndpoint: 'https://hub.example/u',
      profile: githubProfile,
    });
    assert.throws(
      () => checkUpstreamProviders([hub('hub', 'https://hub.example'), hub('forge', 'https://hub.example/')]),
      /upstream hub and forge have the same issuer/,
    );
    assert.throws(() => checkUpstreamProviders([{ ...oidcOptions(), issuer: 'https://sso.example' }, hub('hub', 'https://sso.example')]), /same issuer/);
    checkUpstreamProviders([hub('hub', 'https://hub.example'), hub('forge', 'https://forge.example')]);
  });

  describe('the session behind a grant', () => {
    it('a live session is valid; user-info answers for a tool', async () => {
      const { pending, callback } = await signIn(oidc);
      const { identity, tokens } = await settled(finishUpstream(oidc, CALLBACK, callback, pending, now()));
      assert.deepEqual(await settled(checkUpstream(oidc, identity.subject, tokens, now())), { status: 'valid' });
      const info = await settled(upstreamUserinfo(oidc, tokens.accessToken));
      assert.equal(info.email, 'alice@example.com');
    });

    it('an expired upstream access token is renewed transparently (and the refresh token rotated)', async () => {
      const { pending, callback } = await signIn(oidc);
      const { identity, tokens } = await settled(finishUpstream(oidc, CALLBACK, callback, pending, now()));
      const later = tokens.expiresAt! + 1;
      const check = await settled(checkUpstream(oidc, identity.subject, tokens, later));
      assert.equal(check.status, 'renewed');
      if (check.status !== 'renewed') return;
      assert.notEqual(check.tokens.accessToken, tokens.accessToken);
      assert.notEqual(check.tokens.refreshToken, tokens.refreshToken);
      assert.equal((await settled(upstreamUserinfo(oidc, check.tokens.accessToken))).sub, 'alice-sub');
    });

    it('revoked upstream: the check says refused, so our grant can be ended, and user-info refuses a tool', async () => {
      const { pending, callback } = await signIn(oidc);
      const { identity, tokens } = await settled(finishUpstream(oidc, CALLBACK, callback, pending, now()));
      await idp.revoke(tokens.accessToken);
      await idp.revoke(tokens.refreshToken!);
      await defectOf(checkUpstream(oidc, identity.subject, tokens, now()), 'refused');
      await defectOf(checkUpstream(oidc, identity.subject, tokens, tokens.expiresAt! + 1), 'refused');
      await defectOf(upstreamUserinfo(oidc, tokens.accessToken), 'refused', /^Corp SSO no longer accepts the session$/);
    });

    it('a user removed upstream: refused', async () => {
      const extra = { id: 'bob-sub', email: 'bob@example.com', name: 'Bob', username: 'bob', numericId: 1002 };
      idp.accounts.set(extra.id, extra);
      idp.decide({ account: extra.id });
      try {
        const { pending, callback } = await signIn(github);
        const { identity, tokens } = await settled(finishUpstream(github, CALLBACK, callback, pending, now()));
        assert.equal(identity.subject, '1002');
        idp.accounts.delete(extra.id);
        await defectOf(checkUpstream(github, identity.subject, tokens, now()), 'refused');
      } finally {
        idp.decide({ account: 'alice-sub' });
      }
    });

    it('an expired session without a refresh token is refused, not kept alive', async () => {
      const { pending, callback } = await signIn(github);
      const { identity, tokens } = await settled(finishUpstream(github, CALLBACK, callback, pending, now()));
      await defectOf(
        checkUpstream(github, identity.subject, { ...tokens, refreshToken: null, expiresAt: now() - 1 }, now()),
        'refused',
        /session expired and cannot be renewed/,
      );
    });

    it('a provider that is down during the check: temporarily_unavailable (the grant is kept)', async () => {
      const { pending, callback } = await signIn(oidc);
      const { identity, tokens } = await settled(finishUpstream(oidc, CALLBACK, callback, pending, now()));
      await idp.stop();
      try {
        await defectOf(checkUpstream(oidc, identity.subject, tokens, now()), 'unavailable');
        await defectOf(checkUpstream(oidc, identity.subject, tokens, tokens.expiresAt! + 1), 'unavailable');
      } finally {
        await idp.start();
      }
    });
  });
});

describe('a provider whose user-info refuses its own access tokens (they are for another API)', () => {
  let idp: TestOidcProvider;
  let oidc: ResolvedUpstream;

  before(async () => {
    // No name: one claim the ID token lacks, so user-info is asked for it.
    const dave = { id: 'dave-sub', email: 'dave@example.com', username: 'dave', numericId: 1004 };
    idp = await startOidcProvider({ redirectUris: [CALLBACK], apiAudience: 'https://api.example', accounts: [dave] });
    oidc = await resolveUpstream(
      { kind: 'oidc', id: 'corp', name: 'Corp SSO', issuer: idp.issuer, clientId: idp.clientId, clientSecret: idp.clientSecret },
      { allowLoopbackHttp: true },
    );
  });
  after(() => idp.stop());

  it('signs the person in from the validated ID token, with the refusal as a warning for the log', async () => {
    const { url, pending } = await beginUpstream(oidc, CALLBACK);
    const callback = await signInUpstream(url);
    const { identity, tokens, warnings } = await settled(finishUpstream(oidc, CALLBACK, callback, pending, now()));
    assert.equal(identity.subject, 'dave-sub');
    assert.equal(identity.issuer, idp.issuer);
    // What the ID token says, and nothing else.
    assert.deepEqual([identity.email, identity.emailVerified, identity.name], ['dave@example.com', true, null]);
    assert.deepEqual(
      warnings.map((w) => [w.step, w.status, w.error]),
      [['userinfo', 403, 'insufficient_scope']],
    );
    assert.match(warnings[0]!.reason, /signed in from the ID token's claims/);
    assert.ok(!warnings[0]!.reason.includes(tokens.accessToken), 'never the token');
    assert.equal(tokens.userinfoRefused, true);

    // Checking the session does not ask user-info (it would refuse); expiry renews it, and the
    // renewed tokens keep the mark.
    assert.deepEqual(await settled(checkUpstream(oidc, identity.subject, tokens, now())), { status: 'valid' });
    const renewed = await settled(checkUpstream(oidc, identity.subject, tokens, tokens.expiresAt! + 1));
    assert.equal(renewed.status, 'renewed');
    if (renewed.status === 'renewed') assert.equal(renewed.tokens.userinfoRefused, true);
  });
});
