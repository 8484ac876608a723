/**
 * Client ID metadata documents (MCP 2025-11-25, SEP-991): a client whose `client_id` is an https
 * URL publishes its metadata there instead of registering. The document is fetched (with the
 * defences of fetch-document.ts), must name itself (`client_id` equal to its URL), is validated
 * like a registration, and becomes a client record, kept in the store (grants refer to it) and
 * cached in memory for as long as its Cache-Control allows, within bounds.
 *
 * Anyone can name any URL, so a document the server does not know yet passes the gate for new
 * clients first (rate limits, like /register); a document that failed is not fetched again for a
 * minute; and whatever went wrong, the requester learns only that the document could not be used.
 * The cause (an address refused, a port closed, a timeout) would map our network for a stranger:
 * it goes to the log.
 */
import { OAuthError } from '../../core/errors.js';
import { fail, ok, type Result } from '../../core/result.js';
import { isStorableJson } from '../../core/storable-text.js';
import type { ClientRecord, Store } from '../../store/store.js';
import type { RedirectUriRules } from '../../core/redirect-uri.js';
import type { TokenEndpointAuthMethod } from '../../core/protocol.js';
import { describeDropped, validateClientMetadata, type DroppedValue, type ValidClientMetadata } from '../checks/client-metadata.js';
import { fetchClientDocument, isTestLoopbackUrl, type DocumentDefect, type DocumentFetchOptions } from './fetch-document.js';
import type { AuditLog } from '../audit.js';

export interface ClientDocumentsOptions {
  /**
   * Accept URL client ids. Default: as registration does, since a document creates a client:
   * accepted when registration is open, refused when it is closed or needs an initial access
   * token. `true` accepts them whatever registration says; `false` refuses them.
   */
  enabled?: boolean;
  /** When non-empty, only documents on these hosts are accepted. */
  allowHosts?: string[];
  /** Tests only: documents at http://127.0.0.1 are accepted, and the `jwks_uri` they name there too. Default false. */
  allowLoopbackHttp?: boolean;
  /** Longest wait for a document, in milliseconds. Default 5000 (connecting: at most 3000). */
  timeoutMs?: number;
  /** Replaces the HTTP request function: for tests that must prove no connection is attempted. */
  request?: DocumentFetchOptions['request'];
}

/** What a document's client may authenticate with: it can publish keys, never a secret. */
const DOCUMENT_AUTH_METHODS: readonly TokenEndpointAuthMethod[] = ['none', 'private_key_jwt'];

/** Reuse a document this long when it says nothing; never less than MIN or more than MAX when it does. */
const DEFAULT_TTL = 300;
const MIN_TTL = 60;
const MAX_TTL = 24 * 3600;
const CACHE_ENTRIES = 1000;
/** A document that could not be used is not fetched again for this long (seconds). */
const FAILED_TTL = 60;
const FAILED_ENTRIES = 1000;

/** The one answer for a document that could not be used, whatever the cause (the log has it). */
const DOCUMENT_UNUSABLE = 'the client ID metadata document could not be fetched or is not valid';

function unusable(): OAuthError {
  return new OAuthError('invalid_client', DOCUMENT_UNUSABLE, 400).withUserMessage(
    'The application that sent you here could not be identified: its client ID metadata document could not be fetched or is not valid.',
  );
}

/** What finding a document client needs besides its URL. */
export interface DocumentClientRequest {
  store: Store;
  now: number;
  /** Called before a URL the store does not know is fetched: throws to refuse a new client (rate limits). */
  admitNew: () => Promise<void>;
}

/** Whether a client_id is meant as a document URL (every registered client id is hex); checkUrl says whether it is acceptable. */
export function isDocumentClientId(clientId: string): boolean {
  return /^https?:\/\//i.test(clientId);
}

export class ClientDocuments {
  readonly enabled: boolean;
  private readonly allowHosts: string[];
  private readonly allowLoopbackJwksUri: boolean;
  private readonly redirectUriRules: RedirectUriRules;
  private readonly fetchOptions: DocumentFetchOptions;
  private readonly cache = new Map<string, { client: ClientRecord; until: number }>();
  /** Documents that could not be used, until when they are not fetched again. */
  private readonly failed = new Map<string, number>();

  constructor(
    options: ClientDocumentsOptions & { enabled: boolean; allowLoopbackJwksUri?: boolean; redirectUriRules?: RedirectUriRules },
    private readonly scopesSupported: readonly string[],
    private readonly log: AuditLog,
    fetchOptions: Partial<DocumentFetchOptions> = {},
  ) {
    this.enabled = options.enabled;
    this.allowHosts = (options.allowHosts ?? []).map((host) => host.toLowerCase());
    // The test switch for documents covers the keys they name, at http://127.0.0.1 too.
    this.allowLoopbackJwksUri = (options.allowLoopbackJwksUri ?? false) || (options.allowLoopbackHttp ?? false);
    this.redirectUriRules = options.redirectUriRules ?? {};
    this.fetchOptions = {
      allowLoopbackHttp: options.allowLoopbackHttp ?? false,
      ...(options.timeoutMs !== undefined ? { totalTimeoutMs: options.timeoutMs, connectTimeoutMs: Math.min(3000, options.timeoutMs) } : {}),
      ...(options.request ? { request: options.request } : {}),
      ...fetchOptions,
    };
  }

  /** The client a document URL describes, fetched or from the cache; throws why not. */
  async client(clientId: string, { store, now, admitNew }: DocumentClientRequest): Promise<ClientRecord> {
    const cached = this.cache.get(clientId);
    if (cached && cached.until > now) return cached.client;
    const url = this.checkUrl(clientId);
    if ((this.failed.get(clientId) ?? 0) > now) throw unusable();
    // A document fetched again when its cache ends is no new client; only a URL never seen counts.
    const isNew = !(await store.getClient(clientId));
    if (isNew) await admitNew();
    const fetched = await fetchClientDocument(url, this.fetchOptions);
    const made = fetched.ok ? this.toClient(clientId, fetched.value.body, now) : fetched;
    if (!made.ok) {
      this.noteFailure(clientId, made.defect, now);
      // The client's host failing is the client's problem, even when it may pass: never a 5xx
      // of ours, which anyone could cause by naming such a URL (and which reads as our outage).
      throw unusable();
    }
    const { client, dropped } = made.value;
    const maxAge = fetched.ok ? fetched.value.maxAge : null;
    this.failed.delete(clientId);
    await store.saveClient(client);
    if (isNew) this.log({ event: 'client_created', client_id: clientId, registered_by: 'document' });
    // Each time the document is read, as it may have changed: the client kept is what the console shows.
    if (dropped.length > 0) this.log({ event: 'client_metadata_trimmed', client_id: clientId, registered_by: 'document', dropped: describeDropped(dropped) });
    const ttl = maxAge === null ? DEFAULT_TTL : maxAge === 0 ? 0 : Math.min(MAX_TTL, Math.max(MIN_TTL, maxAge));
    if (ttl > 0) {
      this.cache.delete(clientId);
      this.cache.set(clientId, { client, until: now + ttl });
      if (this.cache.size > CACHE_ENTRIES) this.cache.delete(this.cache.keys().next().value!);
    }
    return client;
  }

  private noteFailure(clientId: string, defect: DocumentDefect, now: number): void {
    this.log({
      event: 'client_document_failed',
      client_id: clientId,
      reason: defect.description,
      ...(defect.code === 'unreachable' ? { temporary: true } : {}),
    });
    this.failed.delete(clientId);
    this.failed.set(clientId, now + FAILED_TTL);
    if (this.failed.size > FAILED_ENTRIES) this.failed.delete(this.failed.keys().next().value!);
  }

  private checkUrl(clientId: string): URL {
    const refuse = (why: string): never => {
      throw new OAuthError('invalid_client', `The client_id ${clientId.slice(0, 200)} is not an acceptable metadata document URL: ${why}.`, 400);
    };
    if (!this.enabled) refuse('this server does not accept client ID metadata documents');
    let url: URL;
    try {
      url = new URL(clientId);
    } catch {
      return refuse('it is not a URL');
    }
    if (url.protocol !== 'https:' && !(this.fetchOptions.allowLoopbackHttp && isTestLoopbackUrl(url))) refuse('it must be https');
    if (url.username || url.password) refuse('it must not carry credentials');
    if (url.hash || clientId.includes('#')) refuse('it must not have a fragment');
    if (url.pathname === '/' || url.pathname === '') refuse('it must have a path');
    // The URL is an identifier: compared as written, so it must already be in its plain form.
    if (url.href !== clientId) refuse('it must be written in its normalised form');
    if (this.allowHosts.length > 0 && !this.allowHosts.includes(url.hostname.toLowerCase()))
      refuse(`${url.hostname} is not among the hosts this server accepts`);
    return url;
  }

  /** The client a document describes, and what of the document it leaves out; or why it is not valid. */
  private toClient(clientId: string, body: unknown, now: number): Result<{ client: ClientRecord; dropped: DroppedValue[] }, DocumentDefect> {
    const bad = (why: string) => fail<DocumentDefect>({ code: 'refused', description: `the document is not valid: ${why}` });
    if (typeof body !== 'object' || body === null || Array.isArray(body)) return bad('it is not a JSON object');
    const document = body as Record<string, unknown>;
    if (!isStorableJson(document)) return bad('it holds NUL characters or unpaired surrogates');
    if (document.client_id !== clientId) return bad('its client_id is not the URL it was fetched from');
    if (document.client_secret !== undefined || document.client_secret_expires_at !== undefined) return bad('a public document cannot hold a client secret');
    let valid: ValidClientMetadata;
    try {
      valid = validateClientMetadata(document, this.scopesSupported, {
        allowLoopbackJwksUri: this.allowLoopbackJwksUri,
        redirectUriRules: this.redirectUriRules,
        // Nothing a document says can be a secret: public clients, or clients that prove
        // themselves with the key pair whose public half the document publishes (private_key_jwt).
        authMethods: DOCUMENT_AUTH_METHODS,
        defaultAuthMethod: 'none',
        // No machine grants: anyone can publish a document, as anyone can use open registration.
        clientCredentialsRefusal: 'client_credentials clients are created by an operator, not by a document',
      });
    } catch (error) {
      return bad(error instanceof OAuthError ? error.message : 'its metadata is malformed');
    }
    if (!valid.grantTypes.includes('authorization_code')) return bad('grant_types must include authorization_code');
    return ok({
      dropped: valid.dropped,
      client: {
        clientId,
        clientSecretHash: null,
        tokenEndpointAuthMethod: valid.tokenEndpointAuthMethod,
        redirectUris: valid.redirectUris,
        grantTypes: valid.grantTypes,
        responseTypes: valid.responseTypes,
        clientName: valid.clientName,
        scope: valid.scope,
        metadata: { ...valid.metadata, client_id: clientId },
        canIntrospect: false,
        registeredBy: 'dynamic',
        createdAt: now,
        lastUsedAt: null,
      },
    });
  }
}
