import { ToolplaneError, type ErrorCode } from '@toolplane/contracts';

/**
 * Why sealing or opening failed. `decryption-failed` covers tampering, a wrong key and a wrong context alike:
 * authenticated encryption cannot tell them apart, and saying which would help an attacker.
 */
export const SealingFailure = {
  /** A key, keyring or ciphertext is not in the expected encoding or shape. */
  malformed: 'malformed',
  /** The ciphertext names a key-encryption key the keyring does not hold. */
  unknownKey: 'unknown-key',
  /** The sealed box is addressed to another recipient key id. */
  wrongRecipient: 'wrong-recipient',
  /** Authentication failed: tampered ciphertext, wrong key or wrong context. */
  decryptionFailed: 'decryption-failed',
} as const;
export type SealingFailure = (typeof SealingFailure)[keyof typeof SealingFailure];

const codes: Record<SealingFailure, ErrorCode> = {
  malformed: 'INVALID_ARGUMENT',
  'unknown-key': 'AUTHENTICATION_FAILED',
  'wrong-recipient': 'AUTHENTICATION_FAILED',
  'decryption-failed': 'AUTHENTICATION_FAILED',
};

/** A sealing failure: a taxonomy error whose `failure` says what went wrong; its message never holds key material or plaintext. */
export class SealingError extends ToolplaneError {
  readonly failure: SealingFailure;

  constructor(failure: SealingFailure, message: string) {
    super(codes[failure], message);
    this.name = 'SealingError';
    this.failure = failure;
  }
}

/** Whether an error is a SealingError with the given failure (recognised by shape, not by class). */
export function isSealingFailure(error: unknown, failure: SealingFailure): boolean {
  return typeof error === 'object' && error !== null && (error as { failure?: unknown }).failure === failure;
}
