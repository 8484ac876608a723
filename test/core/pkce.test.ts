import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { OAuthError } from '../../src/core/errors.js';
import { checkCodeChallenge, s256, verifyCodeVerifier } from '../../src/core/pkce.js';

/**
 * RFC 7636 Appendix B: the verifier is the base64url form of the 32 octets listed there
 * (116, 24, 223, 180, ...). Note it is "...-mB92K27...", not "...-mJ0JXWc..." (a look-alike that
 * hashes to something else and is used below as a wrong verifier).
 */
const RFC_VERIFIER = 'dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk';
const RFC_VERIFIER_OCTETS = [
  116, 24, 223, 180, 151, 153, 224, 37, 79, 250, 96, 125, 216, 173, 187, 186, 22, 212, 37, 77, 105, 214, 191, 240, 91, 88, 5, 88, 83, 132, 141, 121,
];
const LOOK_ALIKE_VERIFIER = 'dBjftJeZ4CVP-mJ0JXWcZgBQa2rR7hjSqmgjHhfbaC8';
const RFC_CHALLENGE = 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM';

describe('s256', () => {
  it('RFC 7636 Appendix B verifier is the base64url of its listed octets', () => {
    assert.equal(Buffer.from(RFC_VERIFIER_OCTETS).toString('base64url'), RFC_VERIFIER);
  });

  const cases: { name: string; verifier: string; challenge: string }[] = [
    { name: 'RFC 7636 Appendix B vector', verifier: RFC_VERIFIER, challenge: RFC_CHALLENGE },
    // Computed independently (Python hashlib + base64.urlsafe_b64encode, padding stripped).
    { name: 'shortest verifier, 43 × "a"', verifier: 'a'.repeat(43), challenge: 'ZtNPunH49FD35FWYhT5Tv8I7vRKQJ8uxMaL0_9eHjNA' },
    { name: 'longest verifier, 128 × "~"', verifier: '~'.repeat(128), challenge: 'zNhOm5Jyonenca7bQzzpjUpwFDVrfhrbbOGCqgWA6HU' },
  ];
  for (const { name, verifier, challenge } of cases) {
    it(`${name} → ${challenge}`, () => {
      assert.equal(s256(verifier), challenge);
      assert.match(s256(verifier), /^[A-Za-z0-9_-]{43}$/);
    });
  }
});

describe('checkCodeChallenge', () => {
  const accepted: { name: string; challenge: string }[] = [
    { name: 'RFC 7636 Appendix B challenge', challenge: RFC_CHALLENGE },
    { name: 'any 43 base64url characters', challenge: 'A'.repeat(42) + '-' },
    { name: 'underscores and hyphens', challenge: '_-'.repeat(21) + 'z' },
  ];
  for (const { name, challenge } of accepted) {
    it(`accepts ${name}`, () => {
      assert.equal(checkCodeChallenge(challenge, 'S256'), challenge);
    });
  }

  const refused: { name: string; challenge: string | undefined; method: string | undefined; message: RegExp }[] = [
    { name: 'missing challenge', challenge: undefined, method: 'S256', message: /code_challenge is required/ },
    { name: 'empty challenge', challenge: '', method: 'S256', message: /code_challenge is required/ },
    { name: 'missing method', challenge: RFC_CHALLENGE, method: undefined, message: /code_challenge_method is required/ },
    { name: 'plain method', challenge: RFC_CHALLENGE, method: 'plain', message: /must be S256/ },
    { name: 'lowercase s256', challenge: RFC_CHALLENGE, method: 's256', message: /must be S256/ },
    { name: 'empty method', challenge: RFC_CHALLENGE, method: '', message: /must be S256/ },
    { name: 'unknown method', challenge: RFC_CHALLENGE, method: 'S512', message: /must be S256/ },
    { name: 'challenge too short (42)', challenge: RFC_CHALLENGE.slice(0, 42), method: 'S256', message: /43 base64url/ },
    { name: 'challenge too long (44)', challenge: RFC_CHALLENGE + 'A', method: 'S256', message: /43 base64url/ },
    { name: 'challenge with padding', challenge: RFC_CHALLENGE.slice(0, 42) + '=', method: 'S256', message: /43 base64url/ },
    { name: 'challenge with "+" (base64, not base64url)', challenge: RFC_CHALLENGE.slice(0, 42) + '+', method: 'S256', message: /43 base64url/ },
    { name: 'challenge with "/"', challenge: RFC_CHALLENGE.slice(0, 42) + '/', method: 'S256', message: /43 base64url/ },
    { name: 'challenge with "." (verifier charset only)', challenge: RFC_CHALLENGE.slice(0, 42) + '.', method: 'S256', message: /43 base64url/ },
    { name: 'challenge with a space', challenge: RFC_CHALLENGE.slice(0, 42) + ' ', method: 'S256', message: /43 base64url/ },
    { name: 'challenge with a non-ASCII letter', challenge: RFC_CHALLENGE.slice(0, 42) + 'é', method: 'S256', message: /43 base64url/ },
  ];
  for (const { name, challenge, method, message } of refused) {
    it(`refuses ${name} with invalid_request`, () => {
      assert.throws(
        () => checkCodeChallenge(challenge, method),
        (error: unknown) => {
          assert.ok(error instanceof OAuthError);
          assert.equal(error.code, 'invalid_request');
          assert.equal(error.status, 400);
          assert.match(error.message, message);
          return true;
        },
      );
    });
  }
});

describe('verifyCodeVerifier', () => {
  const min = 'a'.repeat(43);
  const max = '~'.repeat(128);
  const unreserved = 'ABCXYZabcxyz0189-._~'.repeat(3);
  const cases: { name: string; verifier: string | undefined; challenge: string; expected: boolean }[] = [
    { name: 'RFC 7636 Appendix B verifier', verifier: RFC_VERIFIER, challenge: RFC_CHALLENGE, expected: true },
    { name: 'shortest verifier (43)', verifier: min, challenge: s256(min), expected: true },
    { name: 'longest verifier (128)', verifier: max, challenge: s256(max), expected: true },
    { name: 'every unreserved character class', verifier: unreserved, challenge: s256(unreserved), expected: true },
    { name: 'wrong verifier (one character changed)', verifier: 'x' + RFC_VERIFIER.slice(1), challenge: RFC_CHALLENGE, expected: false },
    { name: 'wrong verifier (look-alike sharing a prefix)', verifier: LOOK_ALIKE_VERIFIER, challenge: RFC_CHALLENGE, expected: false },
    { name: 'right verifier, wrong challenge', verifier: RFC_VERIFIER, challenge: s256(min), expected: false },
    { name: 'verifier equal to the challenge (plain)', verifier: RFC_CHALLENGE, challenge: RFC_CHALLENGE, expected: false },
    { name: 'too short (42)', verifier: 'a'.repeat(42), challenge: s256('a'.repeat(42)), expected: false },
    { name: 'too long (129)', verifier: 'a'.repeat(129), challenge: s256('a'.repeat(129)), expected: false },
    { name: 'bad character "+"', verifier: '+' + 'a'.repeat(42), challenge: s256('+' + 'a'.repeat(42)), expected: false },
    { name: 'bad character "/"', verifier: 'a'.repeat(42) + '/', challenge: s256('a'.repeat(42) + '/'), expected: false },
    { name: 'bad character "="', verifier: 'a'.repeat(42) + '=', challenge: s256('a'.repeat(42) + '='), expected: false },
    { name: 'bad character space', verifier: 'a'.repeat(21) + ' ' + 'a'.repeat(21), challenge: s256('a'.repeat(21) + ' ' + 'a'.repeat(21)), expected: false },
    { name: 'bad character non-ASCII', verifier: 'é' + 'a'.repeat(42), challenge: s256('é' + 'a'.repeat(42)), expected: false },
    { name: 'empty verifier', verifier: '', challenge: s256(''), expected: false },
    { name: 'undefined verifier', verifier: undefined, challenge: RFC_CHALLENGE, expected: false },
  ];
  for (const { name, verifier, challenge, expected } of cases) {
    it(`${expected ? 'accepts' : 'refuses'} ${name}`, () => {
      assert.equal(verifyCodeVerifier(verifier, challenge), expected);
    });
  }
});
