import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { isOAuthError, OAuthError, type TrustedRedirect } from '../../src/core/errors.js';

const TARGET: TrustedRedirect = { uri: 'http://127.0.0.1:33333/callback', state: 'st', iss: 'http://127.0.0.1:9999' };

describe('OAuthError', () => {
  it('takes its status from the code unless one is given', () => {
    assert.equal(new OAuthError('invalid_request', 'x').status, 400);
    assert.equal(new OAuthError('invalid_client', 'x').status, 401);
    assert.equal(new OAuthError('server_error', 'x').status, 500);
    assert.equal(new OAuthError('invalid_client', 'x', 400).status, 400);
  });

  it('serialises to code and description only', () => {
    const error = new OAuthError('invalid_scope', 'scope not allowed: x', 400, { 'X-A': '1' }).withUserMessage('Ask for less.').redirectTo(TARGET);
    assert.deepEqual(JSON.parse(JSON.stringify(error)), { error: 'invalid_scope', error_description: 'scope not allowed: x' });
  });

  it('has the description as its message for the person unless told otherwise', () => {
    const error = new OAuthError('invalid_request', 'the csrf token does not match');
    assert.equal(error.userMessage, 'the csrf token does not match');
    const forPerson = error.withUserMessage('Reload the page and try again.');
    assert.equal(forPerson.userMessage, 'Reload the page and try again.');
    assert.equal(forPerson.description, 'the csrf token does not match');
  });

  it('has no redirect until one is given', () => {
    const error = new OAuthError('access_denied', 'the user denied the request');
    assert.equal(error.redirect, undefined);
    assert.deepEqual(error.redirectTo(TARGET).redirect, TARGET);
  });

  it('copies rather than changes the error it is called on, and keeps everything else', () => {
    const original = new OAuthError('invalid_client', 'unknown client', 401, { 'WWW-Authenticate': 'Basic' });
    const copy = original.withUserMessage('Unknown application.').redirectTo(TARGET);
    assert.equal(original.redirect, undefined);
    assert.equal(original.userMessage, 'unknown client');
    assert.ok(isOAuthError(copy));
    assert.equal(copy.code, 'invalid_client');
    assert.equal(copy.status, 401);
    assert.deepEqual(copy.headers, { 'WWW-Authenticate': 'Basic' });
    assert.equal(copy.userMessage, 'Unknown application.');
    assert.deepEqual(copy.withUserMessage('Again.').redirect, TARGET, 'a later copy keeps the redirect');
  });

  it('keeps its own copy of the target', () => {
    const target = { ...TARGET };
    const error = new OAuthError('access_denied', 'x').redirectTo(target);
    target.uri = 'https://attacker.example/';
    assert.equal(error.redirect?.uri, TARGET.uri);
  });
});
