import type { InteractionRecord } from '../../store/store.js';
import type { InteractionServices } from './state.js';
import type { Params } from '../http/params.js';
import { seeOther, type Answer } from '../http/responses.js';
import { chooseUpstream } from '../upstream/sign-in.js';
import type { EndpointRequest } from '../http/request.js';

/** step=upstream: a provider's button on the sign-in page. Its consent page comes next. */
export async function submitUpstreamChoice(ctx: InteractionServices, _request: EndpointRequest, interaction: InteractionRecord, form: Params): Promise<Answer> {
  await chooseUpstream(ctx, interaction, form.get('provider') ?? '');
  return seeOther(`${ctx.config.basePath}/interaction/${interaction.id}`);
}
