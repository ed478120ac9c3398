import type { ServerWritableStream } from '@grpc/grpc-js';

/** How often a watched status is read again (ms): one timer for every watcher, only while there are some. */
const POLL_MS = 250;

interface Watcher {
  readonly call: ServerWritableStream<Buffer, Uint8Array>;
  readonly read: () => string;
  readonly encode: (status: string) => Uint8Array;
  last: string | undefined;
}

/**
 * The open `grpc.health.v1.Health/Watch` streams: each is sent its status at once and again
 * whenever it changes (read every POLL_MS by one timer while any stream is open, which the
 * process does not wait for). `endAll` ends them, for a shutdown: a stream left open would
 * hold the graceful close of the listener until its deadline.
 */
export class HealthWatchers {
  private readonly watchers = new Set<Watcher>();
  private timer: NodeJS.Timeout | undefined;

  add(call: Watcher['call'], read: Watcher['read'], encode: Watcher['encode']): void {
    const watcher: Watcher = { call, read, encode, last: undefined };
    this.watchers.add(watcher);
    call.once('cancelled', () => this.remove(watcher));
    this.send(watcher);
    this.timer ??= setInterval(() => {
      for (const each of this.watchers) this.send(each);
    }, POLL_MS).unref();
  }

  /** Sends every watcher its status now if it changed (the server started draining, say). */
  refresh(): void {
    for (const watcher of this.watchers) this.send(watcher);
  }

  /** Ends every stream (after its last status). */
  endAll(): void {
    this.refresh();
    for (const watcher of [...this.watchers]) {
      this.remove(watcher);
      watcher.call.end();
    }
  }

  private send(watcher: Watcher): void {
    const status = watcher.read();
    if (status === watcher.last) return;
    watcher.last = status;
    watcher.call.write(watcher.encode(status));
  }

  private remove(watcher: Watcher): void {
    this.watchers.delete(watcher);
    if (this.watchers.size > 0 || this.timer === undefined) return;
    clearInterval(this.timer);
    this.timer = undefined;
  }
}
