import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { heapSizedByOperator } from '../../src/cli/serve-thread.js';

describe('serve-thread: an operator who sizes the heap keeps their flags', () => {
  it('sees --max-old-space-size and --max-semi-space-size in node flags or NODE_OPTIONS', () => {
    assert.equal(heapSizedByOperator(['--max-old-space-size=300'], undefined), true);
    assert.equal(heapSizedByOperator(['--max_semi_space_size=2'], undefined), true);
    assert.equal(heapSizedByOperator([], '--enable-source-maps --max-semi-space-size=4'), true);
    assert.equal(heapSizedByOperator([], '--max-old-space-size=2048'), true);
  });

  it('does not mistake other flags for them', () => {
    assert.equal(heapSizedByOperator(['--import', 'tsx', '--stack-size=2000'], undefined), false);
    assert.equal(heapSizedByOperator([], '--enable-source-maps --no-max-old-space-sizes'), false);
    assert.equal(heapSizedByOperator([], ''), false);
    assert.equal(heapSizedByOperator([], undefined), false);
  });
});
