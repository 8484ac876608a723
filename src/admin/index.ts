/**
 * `context-auth/admin`: what an operator does to a store, for a program to do what the CLI's
 * server-side verbs (`users`, `clients`, `keys`, `consents`) and the admin console do, with the
 * same checks and the same sentences. Each function takes an open store (any `FullStore`:
 * SQLite, PostgreSQL, in memory) and says what it did; "no such user" and other refusals are
 * answers (`{ refused }` or `found: false`), never exceptions.
 */
export {
  addUser,
  listUsers,
  setPassword,
  usernameProblem,
  passwordProblem,
  MIN_PASSWORD_LENGTH,
  type PasswordChange,
  type SignInSource,
  type UserAddition,
  type UserListing,
} from './users.js';
export { removeUser, setAdministrator, signOutEverywhere, removeClient, type OperationsStore } from '../authorization-server/admin/operations.js';
export { addClient, type ClientAddition, type ClientOptions } from './clients.js';
export { listSigningKeys, rotateSigningKeys, type PublicSigningKey } from './keys.js';
export { listConsents } from './consents.js';
export { revokeApproval as revokeConsent, type ApprovalRevocation as ConsentRevocation } from '../authorization-server/admin/approvals-operations.js';
