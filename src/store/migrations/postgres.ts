/**
 * PostgreSQL schema, as an ordered list of migrations. Migration i brings the database from
 * version i to i + 1 (the highest `version` in `context_auth_migrations`); never edit one that
 * has shipped, append a new one. The store applies them on open, in one transaction holding
 * `pg_advisory_xact_lock(MIGRATION_LOCK)`, so replicas starting together apply each one once.
 *
 * The same tables as the SQLite schema (migrations/sqlite.ts), in PostgreSQL types: bigint for
 * epoch seconds, boolean for flags, jsonb for arrays and objects. Codes and tokens reference only
 * their grant: the grant carries the client and the user, so deleting a client or a user cascades
 * through its grants to everything they issued.
 */

/** Advisory lock key held while migrating (any constant unique to this package will do). */
export const MIGRATION_LOCK = 7_016_336_241_620_180_001n;

/** Advisory lock key that serialises signing key changes across replicas. */
export const SIGNING_KEY_LOCK = 7_016_336_241_620_180_002n;

export const postgresMigrations: readonly string[] = [
  `
  CREATE TABLE clients (
    client_id text PRIMARY KEY,
    client_secret_hash text,
    token_endpoint_auth_method text NOT NULL,
    redirect_uris jsonb NOT NULL,
    grant_types jsonb NOT NULL,
    response_types jsonb NOT NULL,
    client_name text,
    scope text,
    metadata jsonb NOT NULL,
    can_introspect boolean NOT NULL,
    registered_by text NOT NULL CHECK (registered_by IN ('dynamic', 'admin')),
    created_at bigint NOT NULL
  );

  CREATE TABLE users (
    id text PRIMARY KEY,
    username text NOT NULL UNIQUE,
    password_hash text NOT NULL,
    created_at bigint NOT NULL
  );

  CREATE TABLE interactions (
    id text PRIMARY KEY,
    client_id text NOT NULL REFERENCES clients (client_id) ON DELETE CASCADE,
    request jsonb NOT NULL,
    browser_binding_hash text NOT NULL,
    csrf_token text NOT NULL,
    user_id text REFERENCES users (id) ON DELETE CASCADE,
    created_at bigint NOT NULL,
    expires_at bigint NOT NULL
  );
  CREATE INDEX interactions_client_id ON interactions (client_id);
  CREATE INDEX interactions_user_id ON interactions (user_id);
  CREATE INDEX interactions_expires_at ON interactions (expires_at);

  CREATE TABLE sessions (
    id_hash text PRIMARY KEY,
    user_id text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    auth_time bigint NOT NULL,
    created_at bigint NOT NULL,
    expires_at bigint NOT NULL
  );
  CREATE INDEX sessions_user_id ON sessions (user_id);
  CREATE INDEX sessions_expires_at ON sessions (expires_at);

  CREATE TABLE consents (
    user_id text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    client_id text NOT NULL REFERENCES clients (client_id) ON DELETE CASCADE,
    resource text NOT NULL,
    scope jsonb NOT NULL,
    created_at bigint NOT NULL,
    updated_at bigint NOT NULL,
    PRIMARY KEY (user_id, client_id, resource)
  );
  CREATE INDEX consents_client_id ON consents (client_id);

  CREATE TABLE grants (
    id text PRIMARY KEY,
    client_id text NOT NULL REFERENCES clients (client_id) ON DELETE CASCADE,
    user_id text REFERENCES users (id) ON DELETE CASCADE,
    scope jsonb NOT NULL,
    resource text NOT NULL,
    auth_time bigint,
    created_at bigint NOT NULL,
    revoked_at bigint
  );
  CREATE INDEX grants_client_id ON grants (client_id);
  CREATE INDEX grants_user_id_client_id ON grants (user_id, client_id);
  CREATE INDEX grants_created_at ON grants (created_at);

  CREATE TABLE authorization_codes (
    code_hash text PRIMARY KEY,
    grant_id text NOT NULL REFERENCES grants (id) ON DELETE CASCADE,
    client_id text NOT NULL,
    user_id text NOT NULL,
    redirect_uri text NOT NULL,
    redirect_uri_provided boolean NOT NULL,
    code_challenge text NOT NULL,
    scope jsonb NOT NULL,
    resource text NOT NULL,
    auth_time bigint NOT NULL,
    created_at bigint NOT NULL,
    expires_at bigint NOT NULL,
    consumed_at bigint
  );
  CREATE INDEX authorization_codes_grant_id ON authorization_codes (grant_id);
  CREATE INDEX authorization_codes_expires_at ON authorization_codes (expires_at);

  CREATE TABLE refresh_tokens (
    token_hash text PRIMARY KEY,
    grant_id text NOT NULL REFERENCES grants (id) ON DELETE CASCADE,
    client_id text NOT NULL,
    scope jsonb NOT NULL,
    created_at bigint NOT NULL,
    expires_at bigint NOT NULL,
    consumed_at bigint
  );
  CREATE INDEX refresh_tokens_grant_id ON refresh_tokens (grant_id);
  CREATE INDEX refresh_tokens_expires_at ON refresh_tokens (expires_at);

  CREATE TABLE access_tokens (
    jti text PRIMARY KEY,
    grant_id text NOT NULL REFERENCES grants (id) ON DELETE CASCADE,
    client_id text NOT NULL,
    expires_at bigint NOT NULL,
    revoked_at bigint
  );
  CREATE INDEX access_tokens_grant_id ON access_tokens (grant_id);
  CREATE INDEX access_tokens_expires_at ON access_tokens (expires_at);

  CREATE TABLE signing_keys (
    -- Insertion order: breaks ties between keys created in the same second (SQLite's rowid).
    seq bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
    kid text PRIMARY KEY,
    alg text NOT NULL,
    private_jwk text NOT NULL,
    public_jwk text NOT NULL,
    status text NOT NULL CHECK (status IN ('current', 'previous', 'retired')),
    created_at bigint NOT NULL
  );
  -- At most one current and one previous key, whatever the code does (or however many replicas).
  CREATE UNIQUE INDEX signing_keys_one_current ON signing_keys (status) WHERE status = 'current';
  CREATE UNIQUE INDEX signing_keys_one_previous ON signing_keys (status) WHERE status = 'previous';
  `,
];
