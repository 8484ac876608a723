/**
 * Real things to mutate: clients, a signed-in browser, a real access token and refresh token, a
 * code not yet redeemed, pending sign-in and consent pages with their CSRF tokens and cookies —
 * obtained by running the real flows against the target over HTTP. Pure garbage only exercises
 * the parsers; a valid request with one field wrong reaches the checks behind them. Refreshed
 * every few hundred steps, since the fuzz spends codes, rotates refresh tokens and revokes grants.
 */
import { createHash, randomBytes } from 'node:crypto';
import { validateClientMetadata } from '../../src/authorization-server/checks/client-metadata.js';
import { registerClient } from '../../src/authorization-server/clients.js';
import { hashPassword } from '../../src/core/passwords.js';
import type { FullStore } from '../../src/store/store.js';
import { DOCUMENT_REDIRECT_URI } from './documents.js';

export const REDIRECT_URI = DOCUMENT_REDIRECT_URI;
/** The account the corpus signs in with; the fuzz's own sign-in attempts use `bob`, so alice is never throttled. */
export const ALICE = { username: 'alice', password: 'correct horse battery' };
export const BOB = { username: 'bob', password: 'battery staple horse' };

export interface Credentials {
  client_id: string;
  client_secret?: string;
}

/** A pending page: what a browser holds to post its form. */
export interface PendingInteraction {
  path: string;
  csrf: string;
  cookie: string;
  kind: 'login' | 'consent';
}

export interface Corpus {
  issuer: string;
  resource: string;
  documentBase: string;
  publicClient: Credentials;
  confidentialClient: Credentials;
  serviceClient: Credentials;
  introspector: Credentials;
  /** A valid authorization request (query parameters) of the public client. */
  authorizeParams: Record<string, string>;
  /** The session cookie of alice's browser. */
  sessionCookie: string;
  accessToken: string;
  serviceAccessToken: string;
  refreshToken: string;
  /** A code not redeemed yet, and the valid request that would redeem it. */
  codeRedemption: Record<string, string>;
  login: PendingInteraction;
  consent: PendingInteraction;
  /** A browser sent to the upstream provider: the callback's parameters (a made-up code) and its cookie. */
  upstreamCallback: { query: Record<string, string>; cookie: string };
}

/** A minimal cookie jar over fetch, redirects not followed. */
class Jar {
  readonly cookies = new Map<string, string>();
  constructor(private readonly issuer: string) {}

  header(): string {
    return [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
  }

  async fetch(path: string, init: RequestInit = {}): Promise<Response> {
    const headers = new Headers(init.headers);
    // Each sign-in comes from an address of its own, so the fuzz's failures never throttle it.
    headers.set('x-forwarded-for', `10.${randomBytes(1)[0]}.${randomBytes(1)[0]}.${randomBytes(1)[0]}`);
    if (this.cookies.size > 0) headers.set('cookie', this.header());
    const response = await fetch(new URL(path, this.issuer), { ...init, headers, redirect: 'manual' });
    for (const line of response.headers.getSetCookie()) {
      const [pair] = line.split(';');
      const eq = pair!.indexOf('=');
      this.cookies.set(pair!.slice(0, eq), pair!.slice(eq + 1));
    }
    return response;
  }

  post(path: string, values: Record<string, string>): Promise<Response> {
    return this.fetch(path, { method: 'POST', body: new URLSearchParams(values), headers: { 'content-type': 'application/x-www-form-urlencoded' } });
  }
}

function pkce(): { verifier: string; challenge: string } {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
}

function pageOf(html: string, jar: Jar): PendingInteraction {
  const path = /<form method="post" action="([^"]+)"/.exec(html)?.[1];
  const csrf = /name="csrf" value="([^"]+)"/.exec(html)?.[1];
  if (!path || !csrf) throw new Error(`no form on the page: ${html.slice(0, 300)}`);
  return { path: path.replace(/&amp;/g, '&'), csrf, cookie: jar.header(), kind: html.includes('name="password"') ? 'login' : 'consent' };
}

async function expectStatus(response: Response, status: number, what: string): Promise<Response> {
  if (response.status !== status) throw new Error(`corpus: ${what} answered ${response.status}: ${(await response.text()).slice(0, 300)}`);
  return response;
}

export class CorpusBuilder {
  private session: Jar;
  private clients?: Pick<Corpus, 'publicClient' | 'confidentialClient' | 'serviceClient' | 'introspector'>;

  constructor(
    private readonly store: FullStore,
    private readonly issuer: string,
    private readonly resource: string,
    private readonly documentBase: string,
    private readonly upstreamIssuer: string,
  ) {
    this.session = new Jar(issuer);
  }

  /** Users and clients, once per store. */
  private async setUp(): Promise<NonNullable<CorpusBuilder['clients']>> {
    const now = Math.floor(Date.now() / 1000);
    for (const user of [ALICE, BOB]) {
      if (!(await this.store.getUser({ username: user.username })))
        await this.store.createUser({ id: `user-${user.username}`, username: user.username, passwordHash: await hashPassword(user.password), createdAt: now });
    }
    const register = async (metadata: Record<string, unknown>): Promise<Credentials> => {
      const response = await expectStatus(
        await fetch(`${this.issuer}/register`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(metadata) }),
        201,
        'registration',
      );
      return (await response.json()) as Credentials;
    };
    const admin = async (metadata: Record<string, unknown>, canIntrospect: boolean): Promise<Credentials> => {
      const valid = validateClientMetadata({ token_endpoint_auth_method: 'client_secret_basic', grant_types: ['client_credentials'], ...metadata }, [
        'mcp:tools',
        'mcp:admin',
      ]);
      const { client, clientSecret } = await registerClient(this.store, valid, now, { registeredBy: 'admin', canIntrospect });
      return { client_id: client.clientId, client_secret: clientSecret! };
    };
    const base = { client_name: 'Fuzz client', redirect_uris: [REDIRECT_URI], grant_types: ['authorization_code', 'refresh_token'] };
    return {
      publicClient: await register({ ...base, token_endpoint_auth_method: 'none' }),
      confidentialClient: await register({ ...base, token_endpoint_auth_method: 'client_secret_basic' }),
      serviceClient: await admin({ client_name: 'Fuzz service', scope: 'mcp:tools mcp:admin' }, false),
      introspector: await admin({ client_name: 'Fuzz resource server' }, true),
    };
  }

  /** GET /authorize in `jar` up to the page it leads to (or the final redirect with a code). */
  private async authorize(jar: Jar, params: Record<string, string>): Promise<{ page?: PendingInteraction; location?: URL }> {
    const first = await expectStatus(await jar.fetch(`/authorize?${new URLSearchParams(params)}`), 303, 'authorize');
    const location = new URL(first.headers.get('location')!, this.issuer);
    if (location.origin !== this.issuer) return { location };
    const page = await expectStatus(await jar.fetch(location.pathname), 200, 'interaction page');
    return { page: pageOf(await page.text(), jar) };
  }

  /** A code for the public client in alice's browser, signing in and consenting the first time. */
  private async code(params: Record<string, string>): Promise<string> {
    let { page, location } = await this.authorize(this.session, params);
    for (let hop = 0; page && hop < 3; hop++) {
      const values: Record<string, string> =
        page.kind === 'login' ? { csrf: page.csrf, step: 'login', ...ALICE } : { csrf: page.csrf, step: 'consent', decision: 'approve' };
      const response = await this.session.post(page.path, values);
      if (response.status !== 303) throw new Error(`corpus: ${values.step} answered ${response.status}: ${(await response.text()).slice(0, 300)}`);
      const next = new URL(response.headers.get('location')!, this.issuer);
      if (next.origin !== this.issuer) {
        location = next;
        page = undefined;
      } else {
        page = pageOf(await (await expectStatus(await this.session.fetch(next.pathname), 200, 'interaction page')).text(), this.session);
      }
    }
    const code = location?.searchParams.get('code');
    if (!code) throw new Error(`corpus: no code in ${location}`);
    return code;
  }

  /** A fresh browser chooses the provider, approves, and is sent there: the state it will come back with. */
  private async upstreamCallback(params: Record<string, string>): Promise<Corpus['upstreamCallback']> {
    const jar = new Jar(this.issuer);
    const login = (await this.authorize(jar, params)).page;
    if (!login) throw new Error('corpus: no sign-in page for the upstream flow');
    const chosen = await expectStatus(await jar.post(login.path, { csrf: login.csrf, step: 'upstream', provider: 'corp' }), 303, 'choosing the provider');
    const consent = pageOf(await (await expectStatus(await jar.fetch(chosen.headers.get('location')!), 200, 'upstream consent page')).text(), jar);
    const forwarded = await expectStatus(await jar.post(consent.path, { csrf: consent.csrf, step: 'consent', decision: 'approve' }), 303, 'approving upstream');
    const state = new URL(forwarded.headers.get('location')!).searchParams.get('state');
    if (!state) throw new Error('corpus: no state in the upstream redirect');
    return { query: { state, code: randomBytes(16).toString('base64url'), iss: this.upstreamIssuer }, cookie: jar.header() };
  }

  async build(): Promise<Corpus> {
    this.clients ??= await this.setUp();
    const { publicClient } = this.clients;
    const request = () => {
      const { verifier, challenge } = pkce();
      const params = {
        response_type: 'code',
        client_id: publicClient.client_id,
        redirect_uri: REDIRECT_URI,
        code_challenge: challenge,
        code_challenge_method: 'S256',
        state: randomBytes(8).toString('hex'),
        scope: 'mcp:tools',
        resource: this.resource,
      };
      return { verifier, params };
    };
    const redemption = (code: string, verifier: string) => ({
      grant_type: 'authorization_code',
      code,
      code_verifier: verifier,
      redirect_uri: REDIRECT_URI,
      client_id: publicClient.client_id,
      resource: this.resource,
    });

    const first = request();
    const tokenResponse = await expectStatus(
      await fetch(`${this.issuer}/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams(redemption(await this.code(first.params), first.verifier)),
      }),
      200,
      'code redemption',
    );
    const tokens = (await tokenResponse.json()) as { access_token: string; refresh_token: string };
    const second = request();
    const codeRedemption = redemption(await this.code(second.params), second.verifier);
    const { serviceClient } = this.clients;
    const service = await expectStatus(
      await fetch(`${this.issuer}/token`, {
        method: 'POST',
        headers: {
          'content-type': 'application/x-www-form-urlencoded',
          authorization: `Basic ${Buffer.from(`${serviceClient.client_id}:${serviceClient.client_secret}`).toString('base64')}`,
        },
        body: new URLSearchParams({ grant_type: 'client_credentials', resource: this.resource }),
      }),
      200,
      'client credentials',
    );
    const login = (await this.authorize(new Jar(this.issuer), request().params)).page;
    const consent = (await this.authorize(this.session, { ...request().params, prompt: 'consent' })).page;
    if (!login || !consent) throw new Error('corpus: no pending sign-in or consent page');
    return {
      issuer: this.issuer,
      resource: this.resource,
      documentBase: this.documentBase,
      ...this.clients,
      authorizeParams: request().params,
      sessionCookie: this.session.header(),
      accessToken: tokens.access_token,
      serviceAccessToken: ((await service.json()) as { access_token: string }).access_token,
      refreshToken: tokens.refresh_token,
      codeRedemption,
      login,
      consent,
      upstreamCallback: await this.upstreamCallback(request().params),
    };
  }
}
