/**
 * The resource server's proof check on its own: the replay record stays within its size however
 * many proofs come, and a proof let go from it is refused as stale, never taken again.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { dpopProofSigner, generateDpopKeyPair } from '../../src/core/dpop.js';
import { dpopGate } from '../../src/resource-server/dpop.js';

const RESOURCE = 'https://mcp.example.com/mcp';

describe('dpopGate', () => {
  it('keeps at most replayCacheSize proofs, and refuses one it let go', () => {
    const clock = { now: 1_800_000_000 };
    const gate = dpopGate({ replayCacheSize: 3 }, RESOURCE, () => clock.now);
    const signer = dpopProofSigner(generateDpopKeyPair());
    const request = (proof: string) => ({ dpop: proof, method: 'POST', target: '/mcp?x=1' });
    const first = signer.sign({ method: 'POST', url: RESOURCE, accessToken: 'token', now: clock.now });
    assert.deepEqual(gate.check(request(first), 'token', signer.jkt), { ok: true });
    for (let i = 0; i < 20; i++) {
      clock.now += 1;
      const proof = signer.sign({ method: 'POST', url: RESOURCE, accessToken: 'token', now: clock.now });
      assert.deepEqual(gate.check(request(proof), 'token', signer.jkt), { ok: true });
      assert.ok(gate.replayRecords() <= 3, `${gate.replayRecords()} records`);
    }
    assert.deepEqual(gate.check(request(first), 'token', signer.jkt), {
      ok: false,
      error: 'invalid_dpop_proof',
      description: 'the DPoP proof is older than the proofs this server still remembers',
    });
  });

  it('a token holder flooding proofs dated ahead (as far as tolerated) does not get honest proofs refused', () => {
    const clock = { now: 1_800_000_000 };
    const gate = dpopGate({ replayCacheSize: 100 }, RESOURCE, () => clock.now);
    const [honest, flooder] = [dpopProofSigner(generateDpopKeyPair()), dpopProofSigner(generateDpopKeyPair())];
    const request = (proof: string) => ({ dpop: proof, method: 'POST', target: '/mcp' });
    const honestProof = honest.sign({ method: 'POST', url: RESOURCE, accessToken: 'honest-token', now: clock.now });
    assert.deepEqual(gate.check(request(honestProof), 'honest-token', honest.jkt), { ok: true });
    const refusals = new Set<string>();
    for (let i = 0; i < 300; i++) {
      const outcome = gate.check(
        request(flooder.sign({ method: 'POST', url: RESOURCE, accessToken: 'flood-token', now: clock.now + 60 })),
        'flood-token',
        flooder.jkt,
      );
      if (!outcome.ok) refusals.add(outcome.description);
    }
    assert.deepEqual(
      [...refusals],
      [
        "the DPoP proof iat is ahead of this server's clock, and this server already keeps as many proofs dated ahead as it will: date proofs by the current time",
      ],
    );
    const usedBefore = { ok: false, error: 'invalid_dpop_proof', description: 'the DPoP proof was used before' };
    assert.deepEqual(gate.check(request(honestProof), 'honest-token', honest.jkt), usedBefore, 'the honest proof is still remembered');
    // Honest proofs, one a second, fill the record and go on being taken.
    let last = honestProof;
    for (let i = 0; i < 150; i++) {
      clock.now += 1;
      last = honest.sign({ method: 'POST', url: RESOURCE, accessToken: 'honest-token', now: clock.now });
      assert.deepEqual(gate.check(request(last), 'honest-token', honest.jkt), { ok: true }, `honest proof ${i}`);
    }
    assert.deepEqual(gate.check(request(last), 'honest-token', honest.jkt), usedBefore);
  });

  it('forgets proofs once they are too old to pass anyway', () => {
    const clock = { now: 1_800_000_000 };
    const gate = dpopGate({}, RESOURCE, () => clock.now);
    const signer = dpopProofSigner(generateDpopKeyPair());
    for (let i = 0; i < 5; i++) {
      const proof = signer.sign({ method: 'GET', url: RESOURCE, accessToken: 'token', now: clock.now });
      assert.equal(gate.check({ dpop: proof, method: 'GET', target: '/mcp' }, 'token', signer.jkt).ok, true);
    }
    assert.equal(gate.replayRecords(), 5);
    clock.now += 361;
    const proof = signer.sign({ method: 'GET', url: RESOURCE, accessToken: 'token', now: clock.now });
    assert.equal(gate.check({ dpop: proof, method: 'GET', target: '/mcp' }, 'token', signer.jkt).ok, true);
    assert.equal(gate.replayRecords(), 1);
  });

  it("takes a request's proof again for the same request (a second guard on it), whatever object stands for it, and never for another", () => {
    const clock = { now: 1_800_000_000 };
    const gate = dpopGate({}, RESOURCE, () => clock.now);
    const signer = dpopProofSigner(generateDpopKeyPair());
    for (const request of [{}, Object.freeze({}), new Request(RESOURCE)]) {
      const proof = signer.sign({ method: 'GET', url: RESOURCE, accessToken: 'token', now: clock.now });
      const facts = { dpop: proof, method: 'GET', target: '/mcp', request };
      assert.deepEqual(gate.check(facts, 'token', signer.jkt), { ok: true });
      assert.deepEqual(gate.check(facts, 'token', signer.jkt), { ok: true }, 'the same request again');
      assert.equal(gate.check({ ...facts, request: {} }, 'token', signer.jkt).ok, false, 'another request with the same proof');
      assert.equal(gate.check({ ...facts, request: undefined }, 'token', signer.jkt).ok, false, 'a request with nothing standing for it');
      assert.equal(dpopGate({}, RESOURCE, () => clock.now).check(facts, 'token', signer.jkt).ok, true, "another guard's record of its own");
    }
  });

  it('takes the path from an absolute-form target, never its host', () => {
    const clock = { now: 1_800_000_000 };
    const gate = dpopGate({}, RESOURCE, () => clock.now);
    const signer = dpopProofSigner(generateDpopKeyPair());
    const forElsewhere = signer.sign({ method: 'GET', url: 'http://elsewhere.example/mcp', accessToken: 'token', now: clock.now });
    assert.equal(gate.check({ dpop: forElsewhere, method: 'GET', target: 'http://elsewhere.example/mcp' }, 'token', signer.jkt).ok, false);
    const forUs = signer.sign({ method: 'GET', url: RESOURCE, accessToken: 'token', now: clock.now });
    assert.equal(gate.check({ dpop: forUs, method: 'GET', target: 'http://elsewhere.example/mcp' }, 'token', signer.jkt).ok, true);
  });
});
