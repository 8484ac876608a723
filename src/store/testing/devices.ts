/** Device authorizations (the deviceAuthorization capability, RFC 8628). */
import assert from 'node:assert/strict';
import { isStoreConflict, type FullStore } from '../store.js';
import { assertCounts, countsAround, expectRecord, steps, type Suite } from './harness.js';
import { NOW, makeCode, makeDeviceAuthorization, makeGrant } from './records.js';

export function deviceAuthorizationTests(suite: Suite): void {
  const { describe, itNeeds } = suite;
  const { parties, consume } = steps(suite);
  let store!: FullStore;
  suite.eachStore((current) => (store = current));

  describe('device authorizations', () => {
    /** A pending device authorization of a new client, and the grant and code (without its hash) its approval would create. */
    async function pendingDevice(overrides: Parameters<typeof makeDeviceAuthorization>[1] = {}) {
      const { client, user } = await parties();
      const device = makeDeviceAuthorization(client.clientId, overrides);
      await store.createDeviceAuthorization(device);
      const grant = makeGrant(client.clientId, user.id, { scope: device.scope, resource: device.resource });
      const { codeHash: _hash, expiresAt: _expiry, ...code } = makeCode(grant, { redirectUri: '', redirectUriProvided: false, codeChallenge: '' });
      return { client, user, device, grant, code };
    }

    itNeeds('deviceAuthorization', 'is found by its user code while pending and unexpired, and the user code is unique', async () => {
      const { client, device } = await pendingDevice({ expiresAt: NOW + 600 });
      assert.deepEqual(await store.findPendingDeviceAuthorization(device.userCodeHash, NOW + 599), device);
      assert.equal(await store.findPendingDeviceAuthorization(device.userCodeHash, NOW + 600), undefined);
      assert.equal(await store.findPendingDeviceAuthorization('nope', NOW), undefined);
      await assert.rejects(store.createDeviceAuthorization(makeDeviceAuthorization(client.clientId, { userCodeHash: device.userCodeHash })), isStoreConflict);
      await assert.rejects(
        store.createDeviceAuthorization(makeDeviceAuthorization(client.clientId, { deviceCodeHash: device.deviceCodeHash })),
        isStoreConflict,
      );
    });

    itNeeds('deviceAuthorization', 'approval creates the grant and a code under the device code hash, redeemed once like any code', async () => {
      const { device, grant, code } = await pendingDevice();
      const { before, after, result } = await countsAround(suite, () => store.approveDeviceAuthorization(device.deviceCodeHash, NOW + 1, grant, code));
      assert.equal(result, true);
      assertCounts(before, after, { grants: 1, authorizationCodes: 1 }, 'the grant and its code, nothing else');
      assert.equal(await store.findPendingDeviceAuthorization(device.userCodeHash, NOW + 1), undefined, 'no longer pending');
      assert.deepEqual(await store.getGrant(grant.id), grant);
      const redeemed = expectRecord(await consume(device.deviceCodeHash, NOW + 2), 'ok');
      assert.equal(redeemed.grantId, grant.id);
      assert.equal(redeemed.expiresAt, device.expiresAt, 'the code expires with the device authorization');
      expectRecord(await consume(device.deviceCodeHash, NOW + 3), 'replayed');
      assert.equal(
        await store.approveDeviceAuthorization(device.deviceCodeHash, NOW + 4, makeGrant(grant.clientId, grant.userId), code),
        false,
        'decided already',
      );
      assert.equal(await store.denyDeviceAuthorization(device.deviceCodeHash, NOW + 4), false);
    });

    itNeeds('deviceAuthorization', 'a denied or expired authorization is never approved, and approval writes nothing then', async () => {
      const denied = await pendingDevice();
      assert.equal(await store.denyDeviceAuthorization(denied.device.deviceCodeHash, NOW), true);
      const refused = await countsAround(suite, () => store.approveDeviceAuthorization(denied.device.deviceCodeHash, NOW, denied.grant, denied.code));
      assert.equal(refused.result, false);
      assertCounts(refused.before, refused.after, {}, 'a refused approval writes nothing');
      assert.equal(await store.getGrant(denied.grant.id), undefined);
      assert.equal((await store.pollDeviceAuthorization(denied.device.deviceCodeHash, denied.client.clientId, NOW + 10)).status, 'denied');
      const expired = await pendingDevice({ expiresAt: NOW + 60 });
      assert.equal(await store.approveDeviceAuthorization(expired.device.deviceCodeHash, NOW + 60, expired.grant, expired.code), false);
      assert.equal(await store.denyDeviceAuthorization(expired.device.deviceCodeHash, NOW + 60), false);
      assert.equal(await store.getGrant(expired.grant.id), undefined);
      assert.equal((await store.pollDeviceAuthorization(expired.device.deviceCodeHash, expired.client.clientId, NOW + 60)).status, 'expired');
    });

    itNeeds('deviceAuthorization', 'a failed approval (its grant id taken) leaves the authorization pending', async () => {
      const { device, grant, code } = await pendingDevice();
      await store.createGrant(grant);
      await assert.rejects(store.approveDeviceAuthorization(device.deviceCodeHash, NOW, grant, code), isStoreConflict);
      assert.ok(await store.findPendingDeviceAuthorization(device.userCodeHash, NOW));
      assert.equal((await consume(device.deviceCodeHash, NOW)).status, 'missing');
    });

    itNeeds('deviceAuthorization', 'a poll sooner than the interval is slow_down and adds 5 s to the interval, for later polls too', async () => {
      const { client, device } = await pendingDevice({ interval: 5 });
      const poll = (now: number) => store.pollDeviceAuthorization(device.deviceCodeHash, client.clientId, now);
      const first = await poll(NOW);
      assert.equal(first.status, 'pending');
      assert.equal('record' in first && first.record.lastPolledAt, NOW);
      assert.equal((await poll(NOW + 5)).status, 'pending', 'exactly the interval later');
      const slow = await poll(NOW + 9);
      assert.equal(slow.status, 'slow_down');
      assert.equal('record' in slow && slow.record.interval, 10);
      assert.equal((await poll(NOW + 18)).status, 'slow_down', '9 s after the last poll: the interval is 10 s now');
      assert.equal((await poll(NOW + 33)).status, 'pending', '15 s later, the interval having grown to 15 s');
    });

    itNeeds('deviceAuthorization', 'another client polling is told nothing and changes nothing; an unknown code is missing', async () => {
      const { client, device } = await pendingDevice();
      const { client: other } = await parties();
      assert.equal((await store.pollDeviceAuthorization(device.deviceCodeHash, other.clientId, NOW)).status, 'foreign');
      assert.equal(
        (await store.pollDeviceAuthorization(device.deviceCodeHash, client.clientId, NOW + 1)).status,
        'pending',
        'the foreign poll was not recorded',
      );
      assert.deepEqual(await store.pollDeviceAuthorization('nope', client.clientId, NOW), { status: 'missing' });
    });

    itNeeds('deviceAuthorization', 'after approval a poll says approved', async () => {
      const { client, device, grant, code } = await pendingDevice();
      await store.approveDeviceAuthorization(device.deviceCodeHash, NOW, grant, code);
      assert.equal((await store.pollDeviceAuthorization(device.deviceCodeHash, client.clientId, NOW + 1)).status, 'approved');
    });

    itNeeds('deviceAuthorization', '20 concurrent decisions: exactly one is taken, and one grant exists', async () => {
      const { device, grant, code } = await pendingDevice();
      const grants = Array.from({ length: 20 }, (_, i) => ({ ...grant, id: `${grant.id}-${i}` }));
      const results = await Promise.all(
        grants.map((g, i) =>
          i % 2 === 0
            ? store.approveDeviceAuthorization(device.deviceCodeHash, NOW, g, { ...code, grantId: g.id })
            : store.denyDeviceAuthorization(device.deviceCodeHash, NOW),
        ),
      );
      assert.equal(results.filter(Boolean).length, 1);
      const stored = await Promise.all(grants.map((g) => store.getGrant(g.id)));
      assert.ok(stored.filter(Boolean).length <= 1);
    });

    itNeeds('deviceAuthorization', '20 concurrent polls at the same second: exactly one is pending, the rest slow_down', async () => {
      const { client, device } = await pendingDevice({ interval: 5, lastPolledAt: NOW - 60 });
      const results = await Promise.all(Array.from({ length: 20 }, () => store.pollDeviceAuthorization(device.deviceCodeHash, client.clientId, NOW)));
      assert.equal(results.filter((r) => r.status === 'pending').length, 1);
      assert.equal(results.filter((r) => r.status === 'slow_down').length, 19);
      const last = await store.pollDeviceAuthorization(device.deviceCodeHash, client.clientId, NOW);
      assert.equal('record' in last && last.record.interval, 5 + 5 * 20);
    });

    itNeeds(['deviceAuthorization', 'administration'], 'goes with its client', async () => {
      const { client, device } = await pendingDevice();
      await (store as FullStore).deleteClient(client.clientId, NOW);
      assert.deepEqual(await store.pollDeviceAuthorization(device.deviceCodeHash, client.clientId, NOW), { status: 'missing' });
    });

    itNeeds(['deviceAuthorization', 'upkeep'], 'the sweep removes expired authorizations, and the code an approval made once it expires', async () => {
      const gone = await pendingDevice({ expiresAt: NOW + 60 });
      await store.approveDeviceAuthorization(gone.device.deviceCodeHash, NOW, gone.grant, gone.code);
      const live = await pendingDevice({ expiresAt: NOW + 61 });
      await (store as FullStore).sweepExpired(NOW + 60);
      assert.deepEqual(await store.pollDeviceAuthorization(gone.device.deviceCodeHash, gone.client.clientId, NOW + 60), { status: 'missing' });
      assert.equal((await consume(gone.device.deviceCodeHash, NOW)).status, 'missing');
      assert.ok(await store.findPendingDeviceAuthorization(live.device.userCodeHash, NOW + 60));
    });
  });
}
