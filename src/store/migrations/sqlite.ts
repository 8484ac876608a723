/**
 * SQLite schema, as an ordered list of migrations. Migration i brings the database from
 * `PRAGMA user_version` i to i + 1; never edit one that has shipped, append a new one.
 *
 * Codes and tokens reference only their grant: the grant carries the client and the user,
 * so deleting a client or a user cascades through its grants to everything they issued.
 */
export const sqliteMigrations: readonly string[] = [
  `
  CREATE TABLE clients (
    client_id TEXT PRIMARY KEY,
    client_secret_hash TEXT,
    token_endpoint_auth_method TEXT NOT NULL,
    redirect_uris TEXT NOT NULL,
    grant_types TEXT NOT NULL,
    response_types TEXT NOT NULL,
    client_name TEXT,
    scope TEXT,
    metadata TEXT NOT NULL,
    can_introspect INTEGER NOT NULL CHECK (can_introspect IN (0, 1)),
    registered_by TEXT NOT NULL CHECK (registered_by IN ('dynamic', 'admin')),
    created_at INTEGER NOT NULL
  ) STRICT;

  CREATE TABLE users (
    id TEXT PRIMARY KEY,
    username TEXT NOT NULL UNIQUE,
    password_hash TEXT NOT NULL,
    created_at INTEGER NOT NULL
  ) STRICT;

  CREATE TABLE interactions (
    id TEXT PRIMARY KEY,
    client_id TEXT NOT NULL REFERENCES clients (client_id) ON DELETE CASCADE,
    request TEXT NOT NULL,
    browser_binding_hash TEXT NOT NULL,
    csrf_token TEXT NOT NULL,
    user_id TEXT REFERENCES users (id) ON DELETE CASCADE,
    created_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL
  ) STRICT;
  CREATE INDEX interactions_client_id ON interactions (client_id);
  CREATE INDEX interactions_user_id ON interactions (user_id);
  CREATE INDEX interactions_expires_at ON interactions (expires_at);

  CREATE TABLE sessions (
    id_hash TEXT PRIMARY KEY,
    user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    auth_time INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL
  ) STRICT;
  CREATE INDEX sessions_user_id ON sessions (user_id);
  CREATE INDEX sessions_expires_at ON sessions (expires_at);

  CREATE TABLE consents (
    user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    client_id TEXT NOT NULL REFERENCES clients (client_id) ON DELETE CASCADE,
    resource TEXT NOT NULL,
    scope TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (user_id, client_id, resource)
  ) STRICT;
  CREATE INDEX consents_client_id ON consents (client_id);

  CREATE TABLE grants (
    id TEXT PRIMARY KEY,
    client_id TEXT NOT NULL REFERENCES clients (client_id) ON DELETE CASCADE,
    user_id TEXT REFERENCES users (id) ON DELETE CASCADE,
    scope TEXT NOT NULL,
    resource TEXT NOT NULL,
    auth_time INTEGER,
    created_at INTEGER NOT NULL,
    revoked_at INTEGER
  ) STRICT;
  CREATE INDEX grants_client_id ON grants (client_id);
  CREATE INDEX grants_user_id_client_id ON grants (user_id, client_id);

  CREATE TABLE authorization_codes (
    code_hash TEXT PRIMARY KEY,
    grant_id TEXT NOT NULL REFERENCES grants (id) ON DELETE CASCADE,
    client_id TEXT NOT NULL,
    user_id TEXT NOT NULL,
    redirect_uri TEXT NOT NULL,
    redirect_uri_provided INTEGER NOT NULL CHECK (redirect_uri_provided IN (0, 1)),
    code_challenge TEXT NOT NULL,
    scope TEXT NOT NULL,
    resource TEXT NOT NULL,
    auth_time INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL,
    consumed_at INTEGER
  ) STRICT;
  CREATE INDEX authorization_codes_grant_id ON authorization_codes (grant_id);
  CREATE INDEX authorization_codes_expires_at ON authorization_codes (expires_at);

  CREATE TABLE refresh_tokens (
    token_hash TEXT PRIMARY KEY,
    grant_id TEXT NOT NULL REFERENCES grants (id) ON DELETE CASCADE,
    client_id TEXT NOT NULL,
    scope TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL,
    consumed_at INTEGER
  ) STRICT;
  CREATE INDEX refresh_tokens_grant_id ON refresh_tokens (grant_id);
  CREATE INDEX refresh_tokens_expires_at ON refresh_tokens (expires_at);

  CREATE TABLE access_tokens (
    jti TEXT PRIMARY KEY,
    grant_id TEXT NOT NULL REFERENCES grants (id) ON DELETE CASCADE,
    client_id TEXT NOT NULL,
    expires_at INTEGER NOT NULL,
    revoked_at INTEGER
  ) STRICT;
  CREATE INDEX access_tokens_grant_id ON access_tokens (grant_id);
  CREATE INDEX access_tokens_expires_at ON access_tokens (expires_at);

  CREATE TABLE signing_keys (
    kid TEXT PRIMARY KEY,
    alg TEXT NOT NULL,
    private_jwk TEXT NOT NULL,
    public_jwk TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('current', 'previous', 'retired')),
    created_at INTEGER NOT NULL
  ) STRICT;
  -- At most one current and one previous key, whatever the code does.
  CREATE UNIQUE INDEX signing_keys_one_current ON signing_keys (status) WHERE status = 'current';
  CREATE UNIQUE INDEX signing_keys_one_previous ON signing_keys (status) WHERE status = 'previous';
  `,
];
