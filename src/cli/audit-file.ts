/**
 * `serve --audit-log FILE`: the audit lines appended to a file, one JSON object a line. The file
 * is created readable by its owner only (it names clients and people) and opened for appending,
 * so each line lands whole at its end even with another writer. `reopen` (on SIGHUP) lets the
 * system's logrotate move the file away and have the next line start a new one.
 */
import { closeSync, constants, openSync, writeSync } from 'node:fs';

export class AuditFile {
  private fd: number;
  /** Set once a write failed, so a full disk says so once rather than on every request. */
  private failing = false;

  /** Opens (creates) the file now, so a path that cannot be written is refused at start. */
  constructor(
    readonly path: string,
    private readonly warn: (message: string) => void,
  ) {
    this.fd = openForAppend(path);
  }

  write(line: string): void {
    try {
      writeSync(this.fd, line);
      this.failing = false;
    } catch (error) {
      if (!this.failing) this.warn(`cannot write the audit log ${this.path}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
      this.failing = true;
    }
  }

  /** Opens the path anew (after a rotation); if that fails, lines go on to the file as it was. */
  reopen(): void {
    let next: number;
    try {
      next = openForAppend(this.path);
    } catch (error) {
      this.warn(
        `cannot reopen the audit log ${this.path}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}; still writing to the file as it was`,
      );
      return;
    }
    closeSync(this.fd);
    this.fd = next;
  }

  close(): void {
    closeSync(this.fd);
  }
}

function openForAppend(path: string): number {
  return openSync(path, constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT, 0o600);
}
