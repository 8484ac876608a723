/**
 * `doctor`: a context server probed as each host would probe it. For every host, its ways are
 * tried in the order the host tries them; the first whose condition the server meets is the way
 * it takes, and the verdict is whether that way gets as far as the person's sign-in, or the first
 * step that stops it, what the server answered there, and the fix. Nothing is signed in and no
 * token is sent; with `register`, each host that registers dynamically registers a throwaway client.
 */
import { canonicalizeResourceUri } from '../../core/uri.js';
import { ClientError } from '../errors.js';
import { discoverAsHost, type StepFailure } from './discover.js';
import { Prober, type ProbedRequest } from './prober.js';
import { HOST_PROFILES, hostNames } from './profiles.js';
import { registerAsHost, type ThrowawayRegistration } from './register.js';
import { unmetCondition, unmetRequirement, unreachable } from './requirements.js';
import { serverChecks, type ServerCheck } from './server-checks.js';
import type { HostProfile } from './types.js';

export interface DoctorOptions {
  fetch?: typeof fetch;
  /** Each request's time limit, in milliseconds (default 10 000). */
  timeoutMs?: number;
  /** Register a throwaway client for each host that registers dynamically. */
  register?: boolean;
  /** The profiles to probe with (default: HOST_PROFILES). */
  profiles?: readonly HostProfile[];
  /** Only these hosts (as HOST_PROFILES names them, any case); default every host. */
  hosts?: readonly string[];
}

export interface HostVerdict {
  host: string;
  /** The profile of the way the host takes; absent when discovery stopped it first. */
  profile?: string;
  way?: HostProfile['way'];
  connects: boolean;
  failure?: StepFailure;
}

export interface DoctorReport {
  /** The URL as given. */
  url: string;
  /** Whether every host gets as far as the person's sign-in. */
  connects: boolean;
  hosts: HostVerdict[];
  checks: ServerCheck[];
  /** What `register` registered (and, where the server allows it, deleted again). */
  registrations: ThrowawayRegistration[];
  /** Every request sent, in order. */
  requests: ProbedRequest[];
  /** What a probe without a sign-in cannot see. */
  notChecked: string[];
}

const NOT_CHECKED = [
  'the person\u2019s sign-in and consent, the redirect back (its state and iss) and the token requests: doctor signs nobody in',
  'client ID metadata documents: the server fetches a host\u2019s document when the host signs someone in',
];

async function verdictFor(
  host: string,
  ways: readonly HostProfile[],
  url: string,
  prober: Prober,
  options: DoctorOptions,
  registrations: ThrowawayRegistration[],
): Promise<HostVerdict> {
  const unmet: string[] = [];
  let issuer = url;
  const cannotReach = unreachable(ways[0]!, 'the MCP URL', url);
  if (cannotReach) return { host, connects: false, failure: cannotReach };
  for (const profile of ways) {
    const discovery = await discoverAsHost(profile, url, prober);
    if (discovery.failure) return { host, connects: false, failure: discovery.failure };
    issuer = discovery.issuer ?? issuer;
    const why = unmetCondition(profile.when, discovery.authorizationServer ?? {});
    if (why) {
      unmet.push(why);
      continue;
    }
    const taken = { host, profile: profile.id, way: profile.way };
    let failure = unmetRequirement(profile, discovery, url);
    if (!failure && options.register && profile.registration.kind === 'dynamic') {
      const result = await registerAsHost(profile, discovery, url, prober, options.fetch ?? fetch);
      registrations.push(result.registration);
      failure = result.failure;
    }
    return failure ? { ...taken, connects: false, failure } : { ...taken, connects: true };
  }
  const documents = ways.filter((way) => way.registration.kind === 'document');
  const methods = [...new Set(documents.flatMap((way) => way.when?.authMethodsListed ?? []))];
  return {
    host,
    connects: false,
    failure: {
      step: 'registration',
      answered: `${issuer} ${[...new Set(unmet)].join('; ')}`,
      fix: `advertise client_id_metadata_document_supported${methods.length > 0 ? ` and list ${methods.join(' or ')} in token_endpoint_auth_methods_supported` : ''}: ${host} connects by its document`,
    },
  };
}

export async function runDoctor(url: string, options: DoctorOptions = {}): Promise<DoctorReport> {
  // The URL stays as typed: whether the metadata's resource matches it is one of the checks.
  try {
    canonicalizeResourceUri(url);
  } catch {
    throw new ClientError('discovery_failed', `not a context server URL (http or https, no fragment): ${url}`);
  }
  const prober = new Prober(options.fetch, options.timeoutMs);
  const wanted = options.hosts?.map((host) => host.toLowerCase());
  const profiles = (options.profiles ?? HOST_PROFILES).filter((profile) => !wanted || wanted.includes(profile.host.toLowerCase()));
  const registrations: ThrowawayRegistration[] = [];
  const checks = await serverChecks(url, prober);
  const hosts: HostVerdict[] = [];
  // One host after another: the answers are shared, and a server is not asked the same thing at once.
  for (const host of hostNames(profiles)) {
    hosts.push(
      await verdictFor(
        host,
        profiles.filter((profile) => profile.host === host),
        url,
        prober,
        options,
        registrations,
      ),
    );
  }
  return { url, connects: hosts.every((host) => host.connects), hosts, checks, registrations, requests: prober.log, notChecked: NOT_CHECKED };
}
