import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { IssuerKeys } from '../../../src/authorization-server/assertions/issuer-keys.js';

const ISSUER = 'https://platform.example';

/** A fetch that serves the issuer's discovery document and records every URL asked for. */
function servingMetadata(metadata: Record<string, unknown>): { fetch: typeof fetch; asked: string[] } {
  const asked: string[] = [];
  const fake = (async (input: string | URL | Request) => {
    const url = String(input);
    asked.push(url);
    if (url === `${ISSUER}/.well-known/openid-configuration`) return Response.json(metadata);
    return Response.json({ keys: [] });
  }) as typeof fetch;
  return { fetch: fake, asked };
}

/** Why the issuer's keys could not be had, as the log gets it; the response says only that. */
async function refusal(keys: IssuerKeys): Promise<{ reason: string }> {
  const found = await keys.keysOf(ISSUER, ['openid-configuration'])('ES256', 'k1');
  assert.ok('defect' in found, 'the keys were found');
  assert.equal(found.defect.code, 'keys_unavailable');
  assert.equal(found.defect.description, "the keys of the assertion's issuer could not be fetched; try again shortly");
  assert.equal(found.defect.log?.issuer, ISSUER);
  return { reason: found.defect.log.reason! };
}

describe('IssuerKeys', () => {
  it('refuses a jwks_uri that is not https (SEP-1933: the key set comes from a TLS-protected location), fetching nothing there', async () => {
    const { fetch, asked } = servingMetadata({ issuer: ISSUER, jwks_uri: 'http://platform.example/jwks' });
    const error = await refusal(new IssuerKeys({ allowLoopbackHttp: false, fetch }));
    assert.match(error.reason, /jwks_uri is not https/);
    assert.deepEqual(asked, [`${ISSUER}/.well-known/openid-configuration`]);
  });

  it('with the test switch, allows plain http to 127.0.0.1 only', async () => {
    const { fetch, asked } = servingMetadata({ issuer: ISSUER, jwks_uri: 'http://platform.example/jwks' });
    const error = await refusal(new IssuerKeys({ allowLoopbackHttp: true, fetch }));
    assert.match(error.reason, /jwks_uri is not https/);
    assert.deepEqual(asked, [`${ISSUER}/.well-known/openid-configuration`]);
  });

  it('refuses a discovery document that names another issuer (OpenID Connect Discovery §4.3)', async () => {
    const { fetch } = servingMetadata({ issuer: 'https://elsewhere.example', jwks_uri: `${ISSUER}/jwks` });
    assert.match((await refusal(new IssuerKeys({ allowLoopbackHttp: false, fetch }))).reason, /its issuer is not/);
  });
});
