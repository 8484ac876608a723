import { OAuthError } from '../../core/errors.js';
import { DUMMY_PASSWORD_HASH, verifyPassword } from '../../core/passwords.js';
import { safeEqual } from '../../core/secrets.js';
import type { ClientRecord, InteractionRecord, UserRecord } from '../../store/store.js';
import { completeAuthorization, trustedRedirect } from '../authorization-response.js';
import { consentCovers, rememberConsent } from '../consent.js';
import { isDocumentClientId } from '../client-documents/documents.js';
import type { ServerContext } from '../context.js';
import { expiredInteraction, loadInteraction } from '../interactions.js';
import { readText, singleValued, type Params } from '../http/params.js';
import { seeOther } from '../http/responses.js';
import { consentPage } from '../pages/consent.js';
import { toResponse } from '../pages/layout.js';
import { loginPage } from '../pages/login.js';
import { hasNoUsers } from '../no-users.js';
import { SignInThrottle } from '../sign-in-throttle.js';
import { currentSession, startSession } from '../sessions.js';
import { chooseUpstream, forwardUpstream } from '../upstream/sign-in.js';

/*
 * Errors here are thrown and shown as a page (http/errors.ts); only a denial goes back to the
 * client. The person reading the page needs what to do next, so each error carries that sentence.
 */

/**
 * The posted form. A person submitted our own form, so whatever is wrong with the body (too
 * large, not UTF-8, a repeated field) is one 400 page saying what; no program reads the status.
 */
async function readInteractionForm(request: Request, maxBytes: number): Promise<Params> {
  const type = (request.headers.get('content-type') ?? '').split(';')[0]!.trim().toLowerCase();
  if (type !== 'application/x-www-form-urlencoded') {
    throw new OAuthError('invalid_request', 'the form must be application/x-www-form-urlencoded').withUserMessage('Unexpected form encoding.');
  }
  try {
    return singleValued(new URLSearchParams(await readText(request, maxBytes)));
  } catch (error) {
    if (error instanceof OAuthError) throw new OAuthError('invalid_request', error.description);
    throw new OAuthError('invalid_request', 'the form body could not be read').withUserMessage('Malformed form.');
  }
}

/**
 * What the consent page can vouch for about the client: a metadata-document client's site (its
 * description was fetched there); a dynamically registered client's name is only what whoever
 * registered it chose. An operator's client (`clients add`) is neither.
 */
function clientOrigin(client: ClientRecord): { clientHost?: string; clientNameUnverified?: boolean } {
  if (isDocumentClientId(client.clientId)) return { clientHost: new URL(client.clientId).host };
  return client.registeredBy === 'dynamic' && client.clientName !== null ? { clientNameUnverified: true } : {};
}

/**
 * The origins the page's form may lead to: ours, the client's (for the final redirect), and the
 * upstream provider's, where approving sends a person who signs in there.
 */
function formTargets(interaction: InteractionRecord, upstreamOrigin?: string): string[] {
  return [new URL(interaction.request.redirectUri).origin, ...(upstreamOrigin ? [upstreamOrigin] : [])];
}

async function renderStep(ctx: ServerContext, interaction: InteractionRecord, error?: { message: string; username: string; retryAfter?: number }): Promise<Response> {
  const client = await ctx.config.store.getClient(interaction.clientId);
  if (!client) {
    throw new OAuthError('invalid_client', 'the client was deleted during the interaction', 400).withUserMessage(
      'The application was removed while you were signing in.',
    );
  }
  const action = `${ctx.config.basePath}/interaction/${interaction.id}`;
  const clientName = client.clientName ?? client.clientId;
  const user = interaction.userId === null ? undefined : await ctx.config.store.getUser({ id: interaction.userId });
  const redirect = new URL(interaction.request.redirectUri);
  const upstream = ctx.config.upstream;
  if (!user && interaction.upstream && upstream) {
    // Consent before anything is forwarded upstream: the person approves this client first.
    const up = await upstream.providers.get(interaction.upstream.provider);
    return toResponse(
      consentPage({
        action,
        csrfToken: interaction.csrfToken,
        upstreamName: up.name,
        clientName,
        clientId: client.clientId,
        ...clientOrigin(client),
        redirectHost: redirect.host,
        scopes: interaction.request.scope,
        resource: interaction.request.resource,
        formTargets: formTargets(interaction, new URL(up.as.authorization_endpoint!).origin),
      }),
    );
  }
  if (!user) {
    const page = loginPage({
      action,
      csrfToken: interaction.csrfToken,
      clientName,
      formTargets: formTargets(interaction),
      providers: upstream?.providers.list() ?? [],
      localUsers: upstream?.localUsers ?? true,
      ...(error ? { error: error.message, username: error.username } : {}),
    });
    if (error?.retryAfter) return toResponse({ ...page, status: 429 }, { 'Retry-After': String(error.retryAfter) });
    return toResponse(page);
  }
  return toResponse(
    consentPage({
      action,
      csrfToken: interaction.csrfToken,
      username: user.username,
      clientName,
      clientId: client.clientId,
      ...clientOrigin(client),
      redirectHost: redirect.host,
      scopes: interaction.request.scope,
      resource: interaction.request.resource,
      formTargets: formTargets(interaction),
    }),
  );
}

/** GET /interaction/:id: the login page, or the consent page once signed in. */
export async function interactionPage(ctx: ServerContext, request: Request, id: string): Promise<Response> {
  const interaction = await loadInteraction(ctx, request, id);
  if (!interaction) throw expiredInteraction();
  return renderStep(ctx, interaction);
}

/** POST /interaction/:id: a login or a consent decision, CSRF-checked and bound to this browser. */
export async function interactionSubmit(ctx: ServerContext, request: Request, id: string): Promise<Response> {
  const { store } = ctx.config;
  const interaction = await loadInteraction(ctx, request, id);
  if (!interaction) throw expiredInteraction();
  const form = await readInteractionForm(request, ctx.config.maxBodyBytes);
  if (!safeEqual(form.get('csrf') ?? '', interaction.csrfToken)) {
    throw new OAuthError('invalid_request', 'the csrf token does not match the interaction', 403).withUserMessage(
      'The form could not be verified. Reload the page and try again.',
    );
  }

  if (form.get('step') === 'upstream') {
    return chooseUpstream(ctx, interaction, form.get('provider') ?? '');
  }

  if (form.get('step') === 'login') {
    if (ctx.config.upstream?.localUsers === false) {
      throw new OAuthError('invalid_request', 'local users are turned off').withUserMessage('Sign in with one of the providers offered.');
    }
    const username = form.get('username') ?? '';
    const password = form.get('password') ?? '';
    // Failed attempts slow further ones down, for the account and for the address (never a lockout).
    const attempt = ctx.signInThrottle.begin(SignInThrottle.keys(username, ctx.config.clientAddress(request)), ctx.config.nowMs());
    if (typeof attempt === 'number') {
      const wait = attempt;
      ctx.config.log({ event: 'login_throttled', client_id: interaction.clientId });
      return renderStep(ctx, interaction, {
        message: `Too many failed sign-ins for this account or from this address. Try again in ${wait} second${wait === 1 ? '' : 's'}; each further failure doubles the wait, up to 15 minutes.`,
        username: username.slice(0, 200),
        retryAfter: wait,
      });
    }
    let user: UserRecord | undefined;
    let valid: boolean;
    try {
      user = username ? await store.getUser({ username }) : undefined;
      // Verify against a dummy hash for unknown users so the response time does not reveal them.
      valid = await verifyPassword(password, user?.passwordHash ?? DUMMY_PASSWORD_HASH);
    } catch (error) {
      attempt.abandoned();
      throw error;
    }
    if (!user || !valid) {
      // Timed after the password check (scrypt, 0.1 s or more): the wait starts when the answer goes out.
      attempt.failed(ctx.config.nowMs());
      // A server nobody was added to yet fails every sign-in: the operator reading the log learns why.
      const noUsers = !user && (await hasNoUsers(store, ctx.config.nowMs()));
      ctx.config.log({ event: 'login_failed', client_id: interaction.clientId, ...(noUsers ? { reason: 'no_users' } : {}) });
      return renderStep(ctx, interaction, { message: 'Wrong username or password.', username: username.slice(0, 200) });
    }
    attempt.succeeded();
    const { session, cookie } = await startSession(ctx, user.id);
    ctx.config.log({ event: 'login', user_id: user.id, client_id: interaction.clientId });
    if (!interaction.request.prompt.includes('consent') && (await consentCovers(ctx, user.id, interaction.request))) {
      const consumed = await store.consumeInteraction(interaction.id, ctx.config.now());
      if (!consumed) throw expiredInteraction();
      return completeAuthorization(ctx, consumed.request, session, [cookie]);
    }
    await store.updateInteraction(interaction.id, { userId: user.id });
    return seeOther(`${ctx.config.basePath}/interaction/${interaction.id}`, [cookie]);
  }

  if (form.get('step') === 'consent' && interaction.userId === null && interaction.upstream) {
    const decision = form.get('decision');
    if (decision === 'approve') return forwardUpstream(ctx, interaction);
    if (decision !== 'deny') throw new OAuthError('invalid_request', 'decision must be approve or deny').withUserMessage('Choose Approve or Deny.');
    const consumed = await store.consumeInteraction(interaction.id, ctx.config.now());
    if (!consumed) throw expiredInteraction();
    ctx.config.log({ event: 'consent_denied', client_id: consumed.clientId, provider: interaction.upstream.provider });
    throw new OAuthError('access_denied', 'the user denied the request').redirectTo(trustedRedirect(consumed.request, ctx.config.issuer));
  }

  if (form.get('step') === 'consent') {
    const session = await currentSession(ctx, request);
    if (!session || interaction.userId === null || session.userId !== interaction.userId) {
      throw new OAuthError('invalid_request', 'no session, or not the user who signed in to this interaction').withUserMessage(
        'Your session ended. Go back to the application and start again.',
      );
    }
    const decision = form.get('decision');
    if (decision !== 'approve' && decision !== 'deny') {
      throw new OAuthError('invalid_request', 'decision must be approve or deny').withUserMessage('Choose Approve or Deny.');
    }
    // Consuming first makes a double-submitted form yield one code at most.
    const consumed = await store.consumeInteraction(interaction.id, ctx.config.now());
    if (!consumed) throw expiredInteraction();
    if (decision === 'deny') {
      ctx.config.log({ event: 'consent_denied', user_id: session.userId, client_id: consumed.clientId });
      // The stored request was validated by /authorize, its redirect URI with it.
      throw new OAuthError('access_denied', 'the user denied the request').redirectTo(trustedRedirect(consumed.request, ctx.config.issuer));
    }
    await rememberConsent(ctx, session.userId, consumed.request);
    ctx.config.log({ event: 'consent_granted', user_id: session.userId, client_id: consumed.clientId });
    return completeAuthorization(ctx, consumed.request, session);
  }
  throw new OAuthError('invalid_request', 'step must be login, upstream or consent').withUserMessage('Unexpected form.');
}
