import { EventEmitter } from 'node:events';

/** Removes ANSI escape sequences (colours, cursor moves) from terminal output. */
export function stripAnsi(text: string): string {
  // eslint-disable-next-line no-control-regex
  return text.replace(/\x1b\[[0-9;?]*[ -/]*[@-~]/g, '').replace(/\x1b\][^\x07]*\x07/g, '');
}

/** Lines of a frame, without colour codes. */
export function frameLines(frame: string): string[] {
  return stripAnsi(frame).split('\n');
}

/** The longest line of a frame, in characters (every glyph the views use is one column wide). */
export function widestLine(frame: string): number {
  return Math.max(...frameLines(frame).map((line) => [...line].length));
}

/** A terminal stdout for Ink: records writes and has a size. */
export class FakeTerminalOut extends EventEmitter {
  readonly writes: string[] = [];
  isTTY = true;
  constructor(
    public columns = 80,
    public rows = 24,
  ) {
    super();
  }
  write = (chunk: string): boolean => {
    this.writes.push(String(chunk));
    return true;
  };
  get text(): string {
    return this.writes.join('');
  }
  asStream(): NodeJS.WriteStream {
    return this as unknown as NodeJS.WriteStream;
  }
}

/** A terminal stdin for Ink that tests can type into. */
export class FakeTerminalIn extends EventEmitter {
  isTTY = true;
  private pending: string[] = [];
  setEncoding(): void {}
  setRawMode(): void {}
  resume(): void {}
  pause(): void {}
  ref(): void {}
  unref(): void {}
  read = (): string | null => this.pending.shift() ?? null;
  type(data: string): void {
    this.pending.push(data);
    this.emit('readable');
  }
  asStream(): NodeJS.ReadStream {
    return this as unknown as NodeJS.ReadStream;
  }
}
