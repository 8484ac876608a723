/**
 * The checks of an authorization response, without servers: each refusal oauth4webapi makes comes
 * out as its own ClientError code, told apart by the error's structured cause, not its wording.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { AuthorizationServer } from 'oauth4webapi';
import { validateCallback } from '../../src/client/authorize.js';
import { clientError } from './setup.js';

const ISSUER = 'https://as.example';
const STATE = 'our-state-0123456789';
const withIss: AuthorizationServer = { issuer: ISSUER, authorization_response_iss_parameter_supported: true };
const withoutIss: AuthorizationServer = { issuer: ISSUER };

type Params = Record<string, string> | string[][];
const check = (as: AuthorizationServer, params: Params, state: string | undefined = STATE): URLSearchParams =>
  validateCallback(as, 'client-1', new URLSearchParams(params), state);

describe('validateCallback', () => {
  it('passes a response with our state and the issuer, and returns its code', () => {
    assert.equal(check(withIss, { code: 'c', state: STATE, iss: ISSUER }).get('code'), 'c');
    assert.equal(check(withoutIss, { code: 'c', state: STATE }).get('code'), 'c');
  });

  it('a wrong state: state_mismatch', () => {
    assert.throws(() => check(withIss, { code: 'c', state: 'forged', iss: ISSUER }), clientError('state_mismatch'));
  });

  it('a missing state: state_mismatch', () => {
    assert.throws(() => check(withIss, { code: 'c', iss: ISSUER }), clientError('state_mismatch'));
  });

  it('a repeated state, even with ours among them: state_mismatch', () => {
    assert.throws(
      () =>
        check(withIss, [
          ['code', 'c'],
          ['state', STATE],
          ['state', 'forged'],
          ['iss', ISSUER],
        ]),
      clientError('state_mismatch'),
    );
  });

  it('no state of ours (nothing was asked): state_mismatch, even for a stateless response', () => {
    assert.throws(() => check(withoutIss, { code: 'c' }, undefined), clientError('state_mismatch'));
  });

  it('a foreign iss: issuer_mismatch, whether or not the server advertises RFC 9207', () => {
    assert.throws(() => check(withIss, { code: 'c', state: STATE, iss: 'https://evil.example' }), clientError('issuer_mismatch'));
    assert.throws(() => check(withoutIss, { code: 'c', state: STATE, iss: 'https://evil.example' }), clientError('issuer_mismatch'));
  });

  it('a missing iss where the server advertises authorization_response_iss_parameter_supported: issuer_mismatch', () => {
    assert.throws(() => check(withIss, { code: 'c', state: STATE }), clientError('issuer_mismatch'));
  });

  it('an empty iss where the server advertises it: issuer_mismatch', () => {
    assert.throws(() => check(withIss, { code: 'c', state: STATE, iss: '' }), clientError('issuer_mismatch'));
  });

  it('a repeated iss, even with the issuer among them: issuer_mismatch', () => {
    assert.throws(
      () =>
        check(withIss, [
          ['code', 'c'],
          ['state', STATE],
          ['iss', ISSUER],
          ['iss', 'https://evil.example'],
        ]),
      clientError('issuer_mismatch'),
    );
  });

  it('an error response with our state: authorization_failed naming the error', () => {
    assert.throws(
      () => check(withIss, { error: 'access_denied', error_description: 'no', state: STATE, iss: ISSUER }),
      clientError('authorization_failed', /access_denied \(no\)/),
    );
  });

  it('another invalid response (a JARM response): authorization_failed, not a state or issuer error', () => {
    assert.throws(() => check(withoutIss, { response: 'jwt', state: STATE }), clientError('authorization_failed'));
  });
});
