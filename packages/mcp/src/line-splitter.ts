/** Thrown by LineSplitter when a line grows beyond its bound before its newline arrives. */
export class LineTooLongError extends Error {
  readonly maxBytes: number;

  constructor(maxBytes: number) {
    super(`a message exceeded ${maxBytes} bytes`);
    this.name = 'LineTooLongError';
    this.maxBytes = maxBytes;
  }
}

/**
 * Splits a byte stream into newline-terminated lines (the stdio framing of MCP), refusing any line longer than
 * `maxLineBytes` as soon as it is known to be too long, so a hostile server cannot make us buffer without bound.
 */
export class LineSplitter {
  private readonly maxLineBytes: number;
  private pending: Buffer[] = [];
  private pendingBytes = 0;

  constructor(maxLineBytes: number) {
    this.maxLineBytes = maxLineBytes;
  }

  /** Feeds a chunk; returns the lines it completed (without their `\n` or a trailing `\r`). */
  push(chunk: Buffer): string[] {
    const lines: string[] = [];
    let start = 0;
    for (let newline = chunk.indexOf(0x0a, start); newline !== -1; newline = chunk.indexOf(0x0a, start)) {
      const piece = chunk.subarray(start, newline);
      if (this.pendingBytes + piece.length > this.maxLineBytes) throw this.overflow();
      const line = this.pendingBytes === 0 ? piece : Buffer.concat([...this.pending, piece]);
      this.pending = [];
      this.pendingBytes = 0;
      const text = line.toString('utf8');
      lines.push(text.endsWith('\r') ? text.slice(0, -1) : text);
      start = newline + 1;
    }
    if (start < chunk.length) {
      const rest = chunk.subarray(start);
      if (this.pendingBytes + rest.length > this.maxLineBytes) throw this.overflow();
      this.pending.push(rest);
      this.pendingBytes += rest.length;
    }
    return lines;
  }

  /** Drops anything buffered. */
  clear(): void {
    this.pending = [];
    this.pendingBytes = 0;
  }

  private overflow(): LineTooLongError {
    this.clear();
    return new LineTooLongError(this.maxLineBytes);
  }
}
