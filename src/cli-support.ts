/**
 * What the CLI and its demo server use from the roles beyond the public entry points: wording for
 * the terminal, and checks the CLI runs on its flags before the server would. It is not in
 * package.json's exports: a program has the public entry points, which do everything the CLI does.
 */
export { printable, printableJson } from './core/control-characters.js';
export { isLoopbackHost } from './core/uri.js';
export { privateUseSchemeProblem } from './core/redirect-uri.js';
export { withoutOfflineAccess } from './core/scopes.js';
export { trustedProxies } from './core/client-address.js';
export { isMissingPackage } from './core/optional-package.js';
export { checkTrustedIssuer, resolveWorkloadRules } from './authorization-server/assertions/workload-rules.js';
export { resolveTokenExchange } from './authorization-server/grants/token-exchange-policy.js';
export { CLI_CLIENT_NAME } from './client/token-store.js';
export { describeIdentity } from './client/grants.js';
export { describeNetworkFailure, failureReason } from './client/network-errors.js';
export { hostNames } from './client/hosts/profiles.js';
