/**
 * Key pairs made as JWKs (src/core/key-pairs.ts): every kind is a working pair, and making many
 * of them never hangs the process. Node 20 deadlocks when a garbage collection runs while a key
 * that generateKeyPairSync returned is being exported; a young generation of 1 MB makes
 * collections frequent enough that exporting thousands of fresh keys that way hangs at once.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createPrivateKey, createPublicKey, sign, verify } from 'node:crypto';
import { describe, it } from 'node:test';
import { generateDpopKeyPair } from '../../src/core/dpop.js';
import { generateJwkPair, type KeyPairKind } from '../../src/core/key-pairs.js';

describe('generateJwkPair', { timeout: 300_000 }, () => {
  const kinds: [KeyPairKind, string | null][] = [
    [{ type: 'ec', namedCurve: 'P-256' }, 'sha256'],
    [{ type: 'ec', namedCurve: 'P-384' }, 'sha384'],
    [{ type: 'ec', namedCurve: 'P-521' }, 'sha512'],
    [{ type: 'ed25519' }, null],
    [{ type: 'rsa', modulusLength: 2048 }, 'sha256'],
  ];
  for (const [kind, digest] of kinds) {
    it(`makes a ${JSON.stringify(kind)} pair whose private key signs what its public key verifies`, () => {
      const { privateJwk, publicJwk } = generateJwkPair(kind);
      assert.equal(publicJwk.d, undefined, 'the public JWK holds no private part');
      assert.ok(privateJwk.d, 'the private JWK holds its private part');
      const data = Buffer.from('signed');
      const signature = sign(digest, data, createPrivateKey({ key: privateJwk, format: 'jwk' }));
      assert.ok(verify(digest, data, createPublicKey({ key: publicJwk, format: 'jwk' }), signature));
    });
  }

  it('makes thousands of DPoP key pairs in a row under constant garbage collection without hanging', async () => {
    const child = spawn(
      process.execPath,
      [
        '--max-semi-space-size=1',
        '--import',
        'tsx',
        '--input-type=module',
        '-e',
        `const { generateDpopKeyPair } = await import(${JSON.stringify(new URL('../../src/core/dpop.ts', import.meta.url).href)});
         for (let i = 0; i < 5000; i++) generateDpopKeyPair('ES256');
         process.stdout.write('made 5000');`,
      ],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const [code] = (await once(child, 'close')) as [number | null];
    assert.equal(code, 0);
    assert.equal(output, 'made 5000');
  });

  it('gives generateDpopKeyPair the pair it returns, with its algorithm', () => {
    const pair = generateDpopKeyPair('EdDSA');
    assert.equal(pair.alg, 'EdDSA');
    assert.equal(pair.publicJwk.crv, 'Ed25519');
  });
});
