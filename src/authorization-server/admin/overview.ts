import { html } from '../pages/html.js';
import type { AdminSection } from './section.js';

/** The console's first page: every other page, with what it is for, and how long changes are allowed before signing in again. */
export const OVERVIEW: AdminSection = {
  name: '',
  title: 'Overview',
  summary: 'Every page of the console.',
  async render(view) {
    const freshFor = view.ctx.config.admin.reauthSeconds;
    return html`<p class="muted">Changes here need a sign-in younger than ${Math.round(freshFor / 60)} minutes; after that the console asks for your password again.</p>
<ul class="sections">
${view.sections.filter((section) => section.name !== '').map((section) => html`<li><a href="${view.href(section.name)}">${section.title}</a>: ${section.summary}</li>`)}
</ul>`;
  },
};
