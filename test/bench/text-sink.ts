import { Writable } from 'node:stream';

/** A stream that keeps what is written to it as text, and is no terminal: bench's stdout and stderr in tests. */
export class TextSink extends Writable {
  text = '';
  readonly isTTY = false;
  override _write(chunk: Buffer, _encoding: string, done: () => void): void {
    this.text += chunk.toString();
    done();
  }
}
