import { ACTIVITY } from './activity.js';
import { APPROVALS, REVOKE_APPROVAL } from './approvals.js';
import { CLIENTS, REMOVE_CLIENT } from './clients.js';
import { OVERVIEW } from './overview.js';
import { PEOPLE, REMOVE_USER, SET_ADMIN, SIGN_OUT_EVERYWHERE } from './people.js';
import { ROTATE_KEY, SIGNING_KEYS } from './signing-keys.js';
import type { AdminAction, AdminSection } from './section.js';
import { THROTTLE } from './throttle.js';

/** The console's pages, in the navigation's order (the overview first: it lists the others). */
export const ADMIN_SECTIONS: readonly AdminSection[] = [OVERVIEW, CLIENTS, PEOPLE, APPROVALS, SIGNING_KEYS, ACTIVITY, THROTTLE];

/** Every action a console form may ask for, by name. */
export const ADMIN_ACTIONS: readonly AdminAction[] = [REMOVE_CLIENT, REMOVE_USER, SET_ADMIN, SIGN_OUT_EVERYWHERE, REVOKE_APPROVAL, ROTATE_KEY];
