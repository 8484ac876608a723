import type { Store } from '../../store/store.js';
import type { ServerMetrics } from './metrics.js';

/**
 * The store with each of its methods timed into `store_call_duration_seconds`. Wrapped once, when
 * the server is made: a new object whose prototype is the store, so its other properties (and the
 * capability checks, which look for methods by name) read through to it, and each method runs on
 * the store itself. `close` is left alone: its owner closes the store, not the server.
 */
export function timedStore(store: Store, metrics: ServerMetrics): Store {
  const timed = Object.create(store) as Record<string, unknown>;
  for (const method of methodNames(store)) {
    if (method === 'close') continue;
    const original = (store as unknown as Record<string, (...args: unknown[]) => unknown>)[method]!;
    // Each method's two series, found once: a call then only adds to them.
    const series = { ok: metrics.storeDuration.series({ method, outcome: 'ok' }), error: metrics.storeDuration.series({ method, outcome: 'error' }) };
    timed[method] = function (...args: unknown[]): unknown {
      const started = performance.now();
      const observe = (outcome: 'ok' | 'error') => series[outcome].observe((performance.now() - started) / 1000);
      let result: unknown;
      try {
        result = original.apply(store, args);
      } catch (error) {
        observe('error');
        throw error;
      }
      if (!(result instanceof Promise)) {
        observe('ok');
        return result;
      }
      return result.then(
        (value: unknown) => {
          observe('ok');
          return value;
        },
        (error: unknown) => {
          observe('error');
          throw error;
        },
      );
    };
  }
  return timed as unknown as Store;
}

/** Every method of the store, own or inherited (a class's methods are on its prototype), but Object's. */
function methodNames(store: Store): string[] {
  const names = new Set<string>();
  for (let object: object | null = store; object && object !== Object.prototype; object = Object.getPrototypeOf(object) as object | null) {
    for (const name of Object.getOwnPropertyNames(object)) {
      if (name === 'constructor') continue;
      const descriptor = Object.getOwnPropertyDescriptor(object, name);
      if (descriptor && typeof descriptor.value === 'function') names.add(name);
    }
  }
  return [...names];
}
