import type { BaseServices } from '../services.js';
import { ADMIN_SECTIONS } from './sections.js';

export const ADMIN_PATH = '/admin';

/**
 * Where a sign-in begun at the console returns: the console page of that name, if the console has
 * one, else the overview. Built from the section list, so no name can lead anywhere else.
 */
export function adminReturnUrl(ctx: Pick<BaseServices, 'config'>, section: string): string {
  const known = ADMIN_SECTIONS.find((candidate) => candidate.name === section)?.name ?? '';
  return `${ctx.config.basePath}${ADMIN_PATH}${known ? `/${known}` : ''}`;
}
