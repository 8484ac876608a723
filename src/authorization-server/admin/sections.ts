import { ACTIVITY } from './activity.js';
import { OVERVIEW } from './overview.js';
import type { AdminAction, AdminSection } from './section.js';
import { THROTTLE } from './throttle.js';

/** The console's pages, in the navigation's order (the overview first: it lists the others). */
export const ADMIN_SECTIONS: readonly AdminSection[] = [
  OVERVIEW,
  ACTIVITY,
  THROTTLE,
];

/** Every action a console form may ask for, by name. */
export const ADMIN_ACTIONS: readonly AdminAction[] = [];
