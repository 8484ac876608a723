/**
 * LISTEN on one PostgreSQL channel, on a connection of its own (a pooled one would be handed to
 * other work), reconnecting a second after the connection is lost. What was announced while
 * nobody listened is lost: `listening` is called after each (re)connection, once LISTEN holds, so
 * the caller can look again; `lost` when the connection goes.
 */
import type pg from 'pg';
import { loadOptionalPackage, PG } from '../core/optional-package.js';

export interface ListenOptions {
  connectionString: string;
  connectionTimeoutMs: number;
  applicationName: string;
  channel: string;
  notified(): void;
  listening(): void;
  lost?(): void;
}

/** Resolves once the first connection succeeded or failed (it is retried either way), with a function that stops listening. */
export async function listenOn(options: ListenOptions): Promise<() => Promise<void>> {
  let stopped = false;
  let listener: pg.Client | undefined;
  let retry: NodeJS.Timeout | undefined;
  const connect = async (): Promise<void> => {
    if (stopped) return;
    const client = new (loadOptionalPackage<typeof pg>(PG).Client)({
      connectionString: options.connectionString,
      connectionTimeoutMillis: options.connectionTimeoutMs,
      application_name: options.applicationName,
      keepAlive: true,
    });
    const reconnect = (): void => {
      if (listener !== client) return;
      listener = undefined;
      options.lost?.();
      client.end().catch(() => undefined);
      if (!stopped) (retry = setTimeout(() => void connect(), 1000)).unref();
    };
    client.on('error', reconnect);
    client.on('end', reconnect);
    client.on('notification', (message) => {
      if (message.channel === options.channel) options.notified();
    });
    listener = client;
    try {
      await client.connect();
      await client.query(`LISTEN ${options.channel}`);
      if (listener === client) options.listening();
    } catch {
      reconnect();
    }
  };
  await connect();
  return async () => {
    stopped = true;
    clearTimeout(retry);
    const client = listener;
    listener = undefined;
    options.lost?.();
    await client?.end().catch(() => undefined);
  };
}
